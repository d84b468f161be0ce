"""How far to trust a forecast: its regime, whether the calibration ever checked it, and the error
band measured on runs of that regime left out of the fit.

The band comes from the calibration's `bands` (fit.json, written by `astral calibrate`): for each
regime ({gpu, precision, attention, moe, framework}; seer/regime.py) the 5th and 95th
percentiles of the leave-one-group-out errors of its runs, as true time / forecast - 1. A regime
with fewer than MIN_ROWS runs takes the band of the coarser key it falls in (GPU x precision,
then precision, then every run), widened at each end to the bands of the finer keys it passed
over: a coarser key's many runs narrow the estimate of the spread, but never below what the
runs of the forecast's own regime erred (two B200 BF16 MoE runs left out at +15 % and +68 % do
not take BF16's -12/+14 %). A forecast is `inside` the calibrated envelope when runs of
its exact regime were checked and the calibration has MIN_ROWS runs in all (a fit of fewer
measures no band: `outside` says "too few runs"); otherwise `outside` names each part no run had
(a GPU, a precision, a framework...), or the combination when each part was seen but never
together, and
the band is the widest checked one (every run's) widened OUTSIDE_WIDEN times: a documented
default, not a measurement. Never narrower than the shipped fit's (documented_outside(),
-22/+25 %): a fit of other runs (A100s only, say) knows less about a regime it never saw than
the shipped fit does, not more, so its outside band is the wider of its own and the shipped
one at each end; a calibration without bands takes DEFAULT_BAND (-25/+25 %) the same way,
the wider of it and the shipped one at each end (-25/+25 %: the shipped is narrower).

Apart from the regime, a forecast may lie beyond the scale and layout the calibration runs
spanned (more GPUs, a wider TP, a longer sequence...: seer/checked.py): `extrapolated` lists
each such dimension with its checked range, which leaves `inside` and the band as they are
(checked.py says why) and draws W759 (extrapolated_warning)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.seer import checked
from astral_dsl.seer.regime import REGIME_PARTS, parse_key, regime, regime_key

MIN_ROWS = 8
FEW = "too few runs"             # Envelope.outside of a fit of fewer than MIN_ROWS runs
OUTSIDE_WIDEN = 2.0
DEFAULT_BAND = (-0.25, 0.25)     # no bands anywhere, the shipped fit's included (no fit yet)


@records.frozen
class Envelope:
    regime: Dict[str, str]
    inside: bool
    band: Tuple[float, float]        # true time / forecast - 1: low, high
    basis: str                       # the bands key the band comes from, or "default"
    rows: int                        # checked runs behind the band
    outside: Tuple[str, ...] = ()    # what was never checked
    # rows of a measured operator table that priced operators of the forecast: their times
    # replaced Seer's costs, whose error the band measures, so it does not describe them
    measured: int = 0
    # the dimensions of scale and layout beyond the calibration runs' (seer/checked.py)
    extrapolated: Tuple[checked.Beyond, ...] = ()

    def as_json(self) -> dict:
        out = {"regime": dict(self.regime), "inside": self.inside,
               "band": [round(self.band[0], 4), round(self.band[1], 4)], "basis": self.basis,
               "rows": self.rows, "outside": list(self.outside),
               "extrapolated": [b.as_json() for b in self.extrapolated]}
        if self.measured:
            out["measured_rows"] = self.measured
        return out

    def measured_note(self) -> str:
        """What the band does not describe: '' without a measured operator table."""
        if not self.measured:
            return ""
        return (f"the band does not describe the operators the table's {self.measured:,} "
                "row(s) priced: their measured times replaced Seer's costs, whose error it is")

    def text(self) -> str:
        """"-4/+7 %": how much shorter and longer the true time may be."""
        return band_text(self.band)

    def brief(self) -> str:
        """The band, and that it is a default when outside: "-22/+25 % (outside the calibrated
        envelope)" (where a forecast's time is shown without W753 beside it)."""
        return self.text() + ("" if self.inside else " (outside the calibrated envelope)") + (
            f" (not the {self.measured:,} operator-table row(s)' operators)" if self.measured
            else "") + (f" (extrapolated: {self.beyond_text()})" if self.extrapolated else "")

    def beyond_text(self) -> str:
        """"gpus 16,384 (checked 8-1,024); tp 16 (checked 1-8)": where the forecast goes
        beyond the calibration runs ("" when nowhere); the ranges unknown said once."""
        if checked.no_ranges((b.field, b.checked) for b in self.extrapolated):
            return "the calibration records no checked ranges"
        return "; ".join(b.text() for b in self.extrapolated)


def marked(cal: dict) -> str:
    """A band (Envelope.as_json()'s `calibration`) as a table cell: "-4/+7 %", with " *" when
    outside the calibrated envelope (W753) and " ^" when extrapolated beyond the calibration
    runs (W759): "-22/+25 % *^"."""
    mark = ("" if cal["inside"] else "*") + ("^" if cal.get("extrapolated") else "")
    return band_text(cal["band"]) + (" " + mark if mark else "")


def inverse(band) -> Tuple[float, float]:
    """The band of a figure that goes inversely with the time (tokens/s, MFU, HFU), as true /
    forecast - 1: a time 39 % longer is 1 / 1.39 - 1 = -28 % of the tokens/s."""
    lo, hi = band
    return 1.0 / (1.0 + hi) - 1.0, 1.0 / (1.0 + lo) - 1.0


def band_text(band) -> str:
    """A band [low, high] (as_json()'s) as "-4/+7 %"."""
    lo, hi = band
    return f"{100 * lo:+.0f}/{100 * hi:+.0f} %".replace("+-", "-")


def _band(entry, rows: Optional[int] = None) -> Optional[Tuple[float, float, int]]:
    """(low, high, rows) of a bands entry; None (or (0, 0, `rows`) when given) if none."""
    try:
        return float(entry["low"]), float(entry["high"]), int(entry["rows"])
    except (KeyError, TypeError, ValueError):
        return None if rows is None else (0.0, 0.0, rows)


def envelope(spec, gpu_name: str, calibration, net=None) -> Envelope:
    """The envelope of a forecast of `spec` (its micro-batch chosen) on a GPU named `gpu_name`
    over `net` (module docstring; None: the network's dimensions are not compared)."""
    env = _regime_envelope(spec, gpu_name, calibration)
    far = checked.beyond(checked.point(spec, net), getattr(calibration, "ranges", None))
    return attrs.evolve(env, extrapolated=far) if far else env


def _regime_envelope(spec, gpu_name: str, calibration) -> Envelope:
    reg = regime(spec, gpu_name)
    bands = getattr(calibration, "bands", None) or {}
    key = regime_key(reg)
    seen: Dict[str, set] = {p: set() for p in REGIME_PARTS}
    for k in bands:
        if k.count("/") == len(REGIME_PARTS) - 1:
            for part, value in parse_key(k).items():
                seen[part].add(value)
    if not bands:
        return Envelope(reg, False, _wider(DEFAULT_BAND, documented_outside()), "default", 0,
                        ("the calibration has no error bands",))
    exact = _band(bands.get(key))
    if exact is not None:
        finer = (exact[0], exact[1])    # what the runs nearer the regime erred, left out
        for k in (key, f"{reg['gpu']}/{reg['precision']}", reg["precision"], "*"):
            b = _band(bands.get(k))
            if b is not None and b[2] >= MIN_ROWS:
                return Envelope(reg, True, _wider((b[0], b[1]), finer), k, b[2])
            if b is not None:
                finer = _wider(finer, (b[0], b[1]))
        # no key holds MIN_ROWS runs: the fit is too small to measure a band (the 5th and 95th
        # percentiles of 4 runs are about their extremes, which a fifth run falls outside of
        # 2 times in 5), so the regime is outside with the default band, however few of its runs
        # erred
        outside = (f"{FEW}: {exact[2]:,} of {key}, {_band(bands.get('*'), 0)[2]:,} in "
                   f"all, fewer than the {MIN_ROWS} a measured band needs",)
    else:
        outside = tuple(f"{part} {reg[part]}" for part in REGIME_PARTS
                        if reg[part] not in seen[part]) or (f"the combination {key}",)
    widest = _band(bands.get("*")) or (DEFAULT_BAND[0], DEFAULT_BAND[1], 0)
    own = widened(widest)
    return Envelope(reg, False, _wider(own, documented_outside()), "outside", widest[2],
                    outside)


def _wider(a: Tuple[float, float], b: Tuple[float, float]) -> Tuple[float, float]:
    return min(a[0], b[0]), max(a[1], b[1])


def documented_outside() -> Tuple[float, float]:
    """The band of a forecast outside the shipped fit's envelope (docs/seer.md, "How far to
    trust a forecast": every run's band twice as wide, -21/+26 %), DEFAULT_BAND before any fit
    exists. No calibration gives a regime it never checked a narrower band than this."""
    from astral_dsl.seer.calibration import shipped

    every = _band(shipped().bands.get("*"))
    return widened(every) if every else DEFAULT_BAND


# the widest a widened band goes: a true time of at least 1 % of the forecast (a band's low end
# is true / forecast - 1, above -100 %: a fit's every-run band of -99 % widened to -198 %, a
# negative time), and at most the +1000 % past which a fit's band forecasts nothing
# (calibration.BAND_BOUNDS)
WIDEST = (-0.99, 10.0)


def widened(band) -> Tuple[float, float]:
    """`band` (low, high, ...) OUTSIDE_WIDEN times as wide, within WIDEST."""
    return (max(OUTSIDE_WIDEN * band[0], WIDEST[0]), min(OUTSIDE_WIDEN * band[1], WIDEST[1]))


# the job field that states each part of a regime (where W753 points)
PART_FIELD = {"gpu": "placement", "precision": "dtype", "attention": "attention",
              "moe": "model", "framework": "framework"}


def outside_warning(job, env: Envelope, calibration=None) -> List[Diagnostic]:
    """W753 for a forecast outside the calibrated envelope (nothing inside it): which part of
    its regime no calibration run had, at the field of the job `job` (an Instance) that states
    it (or the job itself). `calibration`: the one the forecast used, when not the shipped fit
    (the hint then asks for runs of this kind in its fit, not for `--calibration`)."""
    if env.inside:
        return []
    parts = [o.split(" ", 1)[0] for o in env.outside]
    span = job.span
    for part in parts:
        name = PART_FIELD.get(part)
        if name and job.field(name) is not None:
            span = job.span_of(name)
            break
    few = env.outside[0].startswith(FEW) if env.outside else False
    if any(p in PART_FIELD for p in parts):
        what = "no calibration run had " + ", ".join(env.outside)
    elif few:
        what = "its calibration has " + env.outside[0]
    elif env.basis == "default":
        what = "the calibration has no error bands (no run was left out of its fit and measured)"
    else:
        what = "each part was calibrated, but never together (" + regime_key(env.regime) + ")"
    nearest = _nearest(env, calibration) if what.startswith("each part") else ""
    return [Diagnostic("W753", Severity.WARNING,
                       f"job `{job.template}`: the forecast is outside the calibrated envelope: "
                       f"{what}", span,
                       ("the band is a documented default, not a measured error: "
                        if calibration is None or env.basis == "default" else
                        f"the band is not a measured error: twice the spread of all the runs of "
                        f"the calibration `{calibration.source}`, at least the shipped fit's "
                        f"{band_text(documented_outside())} (docs/seer.md): ") + (
                           "fit Seer on runs of this kind with `astral calibrate` (docs/runs.md) "
                           "and forecast with `--calibration`" if calibration is None else
                           f"the calibration `{calibration.source}` records no error bands: fit "
                           "it again with `astral calibrate` (docs/runs.md), which measures them "
                           "on the runs it leaves out" if env.basis == "default" else
                           f"the calibration `{calibration.source}` measured no band on so few "
                           f"runs: fit it on at least {MIN_ROWS} (yours beside the shipped "
                           "tables, docs/runs.md)" if few else
                           f"the calibration `{calibration.source}` had no run of this kind: add "
                           "runs of this kind to its tables and fit it again with `astral "
                           "calibrate` (docs/runs.md)"),
                       notes=(f"regime {regime_key(env.regime)}; band {env.text()} (true time "
                              f"against the forecast), basis: {env.basis}",)
                       + ((nearest,) if nearest else ()))]


def _nearest(env: Envelope, calibration) -> str:
    """The calibrated regimes of the same GPU and precision as `env`'s (those whose runs the
    fit measured a band on), in words: what a job of those parts was checked with."""
    from astral_dsl.seer.calibration import shipped

    bands = getattr(calibration if calibration is not None else shipped(), "bands", None) or {}
    head = f"{env.regime['gpu']}/{env.regime['precision']}/"
    keys = sorted(k for k in bands if k.startswith(head)
                  and k.count("/") == len(REGIME_PARTS) - 1)
    return ("calibrated with " + head[:-1] + ": " + ", ".join(keys)) if keys else ""


def _span_of(job, field: str):
    """The source of the job's statement of dimension `field` (seer/checked.py WHERE): its
    record's field (the record when it leaves the field to a default or the rule), the job's
    field, or for the model's dimensions (and a sequence the batch does not state) the job's
    `model`; the job itself when it states none of them."""
    record, name = checked.WHERE[field]
    if record and record != "model":
        rec = job.member(record)
        for k, s in (rec.field_spans if rec is not None else ()):
            if k == name:
                return s
        if field != "seq":                  # a sequence not stated is the model's
            return (rec.span if rec is not None else None) or job.span
        record = "model"
    if record == "model":
        name = "model"
    return job.span_of(name) if job.field(name) is not None else job.span


def extrapolated_warning(job, env: Envelope, calibration=None) -> List[Diagnostic]:
    """W759 for a forecast beyond the scale and layout its calibration's runs spanned
    (env.extrapolated, seer/checked.py), at the job's statement of the first such dimension;
    or, with a calibration that records no ranges, that whether it is cannot be told.
    `calibration`: the one the forecast used when not the shipped fit (named in the hint)."""
    if not env.extrapolated:
        return []
    name = "the shipped fit" if calibration is None else f"the calibration `{calibration.source}`"
    if checked.no_ranges((b.field, b.checked) for b in env.extrapolated):
        return [Diagnostic(
            "W759", Severity.WARNING,
            f"job `{job.template}`: {name} records no ranges of the runs it was fitted on: "
            "whether the forecast extrapolates beyond them cannot be told", job.span,
            "fit it again with this version's `astral calibrate` (docs/runs.md), which "
            "records them")]
    if all(b.checked is None for b in env.extrapolated):     # ranges, but not of these
        what = ", ".join(checked.WHAT[b.field] for b in env.extrapolated)
        return [Diagnostic(
            "W759", Severity.WARNING,
            f"job `{job.template}`: {name} records no range of {what} (it was fitted before "
            "Seer checked them): whether the forecast extrapolates there cannot be told: "
            + env.beyond_text(), _span_of(job, env.extrapolated[0].field),
            "fit it again with this version's `astral calibrate` (docs/runs.md), which "
            "records them")]
    first = env.extrapolated[0]
    return [Diagnostic(
        "W759", Severity.WARNING,
        f"job `{job.template}`: the forecast extrapolates "
        f"{checked.direction(env.extrapolated)} the calibration runs: " + env.beyond_text(),
        _span_of(job, first.field),
        f"no run measured the error outside those ranges, and the band ({env.text()}) is not "
        "widened for it: measure runs of this scale and layout and fit Seer on them (`astral "
        "calibrate`, docs/runs.md)" + (", then forecast with `--calibration`"
                                       if calibration is None else ""),
        notes=tuple(f"{checked.WHAT[b.field]}: {b.text()}" for b in env.extrapolated))]
