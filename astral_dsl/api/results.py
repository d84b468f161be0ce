"""The typed results of the public API (docs/api.md).

One convention for amounts: every physical amount a result carries is a `Quantity`, shown in
a readable unit and convertible with `.to("kW")`, `.to("ms")`, `.to("GB")`; its SI value is
`.si`. Fractions (MFU, HFU) are Quantities in `%` (`fc.mfu.si` is the fraction). Counts are
ints, and rates of counted things (`tokens_per_s`) floats whose name says the rate. The
records under them (`Checked.engineering`, `ForecastResult.detail`) are the analyses' own,
SI floats whose names end in their unit (`failover_w`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.units import Quantity

if TYPE_CHECKING:
    from astral_dsl.model.design import Design
    from astral_dsl.outputs.diff.compare import Change
    from astral_dsl.outputs.diff.facts import Side
    from astral_dsl.pipeline import Checked
    from astral_dsl.seer.forecast import Forecast
    from astral_dsl.seer.envelope import Envelope


def seconds(x: float) -> Quantity:
    """`x` seconds, shown in s, ms or us as it reads best."""
    unit = "s" if abs(x) >= 1 or x == 0 else "ms" if abs(x) >= 1e-3 else "us"
    return Quantity.of(x, "s").to(unit)


def percent(fraction: float) -> Quantity:
    return Quantity.of(fraction * 100.0, "%")


def gigabytes(nbytes: float) -> Quantity:
    return Quantity.of(nbytes, "B").to("GB")


class FrozenMapping(Mapping[str, Any]):
    """A mapping that cannot be changed, for a field of a frozen result (a dict there could be
    changed in place; types.MappingProxyType cannot be pickled): its items in the order given,
    equal to any mapping of the same items (a dict too), hashable when its values are, and
    pickled as its items."""
    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Tuple[str, Any]] | Mapping[str, Any] = ()):
        object.__setattr__(self, "_items", dict(items))

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return self._items == dict(other) if isinstance(other, Mapping) else NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a {type(self).__name__} cannot be changed")

    def __reduce__(self) -> Tuple[type, Tuple[Tuple[Tuple[str, Any], ...]]]:
        return type(self), (tuple(self._items.items()),)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"


@records.frozen
class ForecastResult:
    """Seer's forecast of one training iteration (`astral forecast`), its amounts as
    Quantities. `detail` is the whole seer.Forecast (its timeline, memory estimate, envelope);
    `diagnostics` the job's warnings (W750 "may not fit", W753 outside the calibrated
    envelope, ...); `envelope` how far to trust it (seer/envelope.py: its regime, `inside`, and
    `band`, how much shorter and longer the true iteration time may be, as true / forecast - 1;
    tokens/s and MFU go inversely with the time). Two forecasts of the same input are equal
    (`detail` is not compared)."""
    job: str
    gpu: str
    gpus: int
    iteration_time: Quantity
    tokens_per_s: float
    mfu: Quantity
    hfu: Quantity
    memory_per_gpu: Quantity
    breakdown: Mapping[str, Quantity]      # where the time of `stage` goes (a FrozenMapping)
    stage: int                             # the stage the breakdown describes (the busiest)
    diagnostics: Tuple[Diagnostic, ...]
    envelope: "Envelope"
    # not compared: the seer.Forecast holds its Lowering, an object equal only to itself, so two
    # forecasts of the same input were unequal; the amounts above are what it forecast
    detail: "Forecast" = attrs.field(repr=False, eq=False)

    @classmethod
    def of(cls, fc: "Forecast") -> "ForecastResult":
        return cls(fc.job.name, fc.gpu, fc.gpus, seconds(fc.iteration_time),
                   fc.tokens_per_s, percent(fc.mfu), percent(fc.hfu),
                   gigabytes(fc.memory.total),
                   FrozenMapping((k, seconds(v)) for k, v in fc.breakdown.items()), fc.stage,
                   tuple(fc.diagnostics), fc.envelope(), fc)

    @property
    def may_not_fit(self) -> bool:
        """Whether the memory estimate plus its uncertainty exceeds the GPU's memory: what
        `astral forecast` says as "may not fit" and `astral search` as `may not` (W750, in
        `diagnostics`, tests the estimate alone)."""
        from astral_dsl.outputs.forecast.report import may_not_fit

        return may_not_fit(self.detail)


@records.frozen
class Chosen:
    """One value sizing chose: the field it belongs to (`path`, None for a `param`), where
    its `?` is written, the value as `astral check` prints it, and how many replicas share
    it."""
    path: Optional[str]
    value: str
    file: str
    line: int
    column: int
    replicas: int


@records.frozen
class Sized:
    """`astral size`: the check (sized when the design has `?`s), the values sizing chose,
    the objective's value, and the size report as its JSON document (`summary`, the keys of
    docs/language.md section 19.2, which name their units)."""
    checked: "Checked"
    chosen: Tuple[Chosen, ...]
    objective: Optional[Dict[str, Any]]
    summary: Optional[Dict[str, Any]]

    @property
    def valid(self) -> bool:
        return self.checked.valid

    @property
    def design(self) -> "Design":
        return self.checked.design


@records.frozen
class DiffResult:
    """`astral diff A B`: the changes from A to B (section, key, before, after), and the
    text and JSON `astral diff` prints."""
    a: "Side"
    b: "Side"
    changes: Tuple["Change", ...]

    @property
    def valid(self) -> bool:
        """Both sides compile and check without errors (`astral diff`'s exit status 0)."""
        return bool(self.a.valid and self.b.valid)

    def text(self) -> str:
        from astral_dsl.outputs.diff import render

        return str(render(self.a, self.b, self.changes, False))

    def json(self) -> Dict[str, Any]:
        from astral_dsl.outputs.diff import to_json

        return dict(to_json(self.a, self.b, self.changes))


@records.frozen
class RunsResult:
    """`astral runs`: each row of a runs table forecast and scored (runs.evaluate.Result:
    status ok / not_expressible / rejected, the published and forecast metric, the error)."""
    file: str
    rows: Tuple[Any, ...]
    diagnostics: Tuple[Diagnostic, ...]

    @property
    def valid(self) -> bool:
        """No row rejected and no error (`astral runs`' exit status 0)."""
        return not any(d.is_error for d in self.diagnostics) and \
            not any(r.status == "rejected" for r in self.rows)

    def errors(self) -> List[float]:
        """The relative errors of the rows Seer forecast (forecast / published - 1)."""
        return [r.error for r in self.rows if r.error is not None]


__all__ = ["Chosen", "DiffResult", "ForecastResult", "FrozenMapping", "RunsResult", "Sized",
           "gigabytes", "percent", "seconds"]
