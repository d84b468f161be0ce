"""The scale and layout the calibration runs checked, and where a forecast goes beyond them.

Seer's fitted constants, and the error band every forecast carries (envelope.py), were measured
on runs of some sizes only: the shipped tables span 8 to a few thousand GPUs, TP up to the
NVLink domain, some sequence lengths and model sizes. A forecast of a job beyond them (16,384
GPUs when the largest run had 3,072, TP 16 when no run had more than 8, 128K sequences, a
model wider than any run's) extrapolates the fit: nothing measured its error there. Each such
dimension is one an error of the model could plausibly depend on (FIELDS): the scale of the job
and of the network it crosses (collectives priced over more hosts and switch tiers than any run
had), the model's width, depth and size (GEMM shapes, pipeline stages, memory), the sequence
(attention's share, CP), each parallel degree and the micro-batch (GEMM shapes, bubbles,
groups' sizes), and the layers whose activations are offloaded to host memory (copies over the
host link that no calibration run made: the rule may choose them, `recompute = auto`).

`astral calibrate` records, per dimension, the [lowest, highest] value of the runs it fitted
(`ranges` in fit.json, from the layouts the forecasts ran: the rule's micro-batch where a row
states none); a forecast outside one is `extrapolated` there (beyond the highest or below the
lowest: a job smaller than every run, a 2-GPU test design, is as unmeasured as one larger, its
GEMM shapes, groups and overlaps priced with constants no run of its size checked; W759 says
which side, `direction`). Being outside changes neither the regime's `inside` nor its band: the band is the
error measured inside the ranges, and no measurement says how much wider it grows beyond them
(a widening by a chosen factor would be a number nobody measured, shown as if one had), so the
forecast says where it extrapolates (W759, `extrapolated` in the JSON) and the band stays what
it is. A fit document without `ranges` (one written before they were recorded) has ranges
unknown: every dimension is listed with `checked` null, never taken as inside."""
from __future__ import annotations

from typing import Dict, Iterable, Mapping, Optional, Tuple

from astral_dsl import records

# (name, what it is, where a job states it: (record of the job or "model" or "", field))
FIELDS: Tuple[Tuple[str, str, Tuple[str, str]], ...] = (
    ("gpus", "GPUs of the job", ("", "gpus")),
    ("tiers", "network tiers the job's hosts span", ("", "placement")),
    ("nvlink_domain", "GPUs per NVLink domain", ("", "placement")),
    ("tp", "tensor-parallel degree", ("parallel", "tp")),
    ("pp", "pipeline-parallel degree", ("parallel", "pp")),
    ("cp", "context-parallel degree", ("parallel", "cp")),
    ("ep", "expert-parallel degree", ("parallel", "ep")),
    ("dp", "data-parallel degree", ("parallel", "dp")),
    ("micro", "micro-batch", ("batch", "micro")),
    ("seq", "sequence length", ("batch", "seq")),
    ("hidden", "model width", ("model", "hidden")),
    ("layers", "model depth", ("model", "layers")),
    ("params", "model parameters", ("model", "")),
    ("offload", "layers whose activations are offloaded to host memory", ("", "offload_layers")),
)
NAMES = tuple(f[0] for f in FIELDS)
# the value of a dimension added after fits were written (`offload`, stop 59) that is a job
# without the mechanism it counts: a fit that records some ranges but not this one is not
# unknown there (its runs were priced with the mechanism off unless the rule chose it, and a
# job without it extrapolates nothing of it)
NO_MECHANISM = {"offload": 0}
WHAT = {f[0]: f[1] for f in FIELDS}
WHERE = {f[0]: f[2] for f in FIELDS}


@records.frozen
class Beyond:
    """A dimension of a forecast outside what the calibration checked: `checked` its [lowest,
    highest] over the fitted runs, None when the calibration records none (unknown)."""
    field: str
    value: float
    checked: Optional[Tuple[float, float]]

    @property
    def below(self) -> bool:
        """Below the lowest checked (a job smaller than every run there), not above it."""
        return self.checked is not None and self.value < self.checked[0]

    def as_json(self) -> dict:
        return {"field": self.field, "value": _num(self.value),
                "checked": None if self.checked is None else [_num(x) for x in self.checked]}

    def text(self) -> str:
        """"gpus 16,384 (checked 8-3,072)", "gpus 16,384 (checked range unknown)"."""
        if self.checked is None:
            return f"{self.field} {show(self.field, self.value)} (checked range unknown)"
        lo, hi = self.checked
        return (f"{self.field} {show(self.field, self.value)} (checked "
                f"{show(self.field, lo)}-{show(self.field, hi)})")


def direction(out: Iterable[Beyond]) -> str:
    """How a forecast leaves the checked ranges, as W759 and the report say it: "beyond" them
    (every dimension above its highest), "below" them (every one under its lowest: a job
    smaller than every run, a 2-GPU test design), else "outside" them."""
    sides = {b.below for b in out}
    return "below" if sides == {True} else "beyond" if sides == {False} else "outside"


def _num(x: float):
    return int(x) if float(x).is_integer() else x


def show(field: str, x: float) -> str:
    if field == "params":          # 1.77 B, 1.03 T
        return f"{x / 1e12:.3g} T" if x >= 1e12 else f"{x / 1e9:.3g} B"
    return f"{_num(x):,}"


def tiers_spanned(net, hosts: int) -> int:
    """Switch tiers traffic between `hosts` consecutive hosts (Seer's hosts: NVLink domains)
    climbs to: 0 in one host, else the lowest tier whose reach holds them all (comm.py's climb,
    rails aside), every declared tier when none does, 1 without declared tiers."""
    if hosts <= 1:
        return 0
    for i, tier in enumerate(net.tiers):
        if tier.reach_hosts >= hosts:
            return i + 1
    return max(1, len(net.tiers))


def total_params(model) -> float:
    """The model's parameters: its layers' (model_spec.layer_params) and an untied embedding
    and output layer (vocab x hidden each)."""
    layers = sum(c * model.layer_params(L) for L, c in model.kinds(0, model.layers))
    return float(layers + 2 * model.vocab * model.hidden)


def point(spec, net=None) -> Dict[str, float]:
    """The values of FIELDS of a forecast of `spec` (with its micro-batch chosen) on `net`
    (None: the network's dimensions are left out)."""
    par, m = spec.parallel, spec.model
    out: Dict[str, float] = {"gpus": par.gpus}
    if net is not None:
        per = max(1, net.gpus_per_host)
        out["tiers"] = tiers_spanned(net, -(-par.gpus // per))
        out["nvlink_domain"] = per
    out.update(tp=par.tp, pp=par.pp, cp=par.cp, ep=par.ep, dp=par.dp)
    if spec.micro:
        out["micro"] = spec.micro
    out.update(seq=spec.seq, hidden=m.hidden, layers=m.layers,
               params=float(f"{total_params(m):.4g}"),
               offload=spec.offload_layers or 0)
    return {k: out[k] for k in NAMES if k in out}


def ranges(points: Iterable[Mapping[str, float]]) -> Dict[str, Tuple[float, float]]:
    """[lowest, highest] of each dimension over `points` (in FIELDS' order)."""
    out: Dict[str, Tuple[float, float]] = {}
    for p in points:
        for k, v in p.items():
            lo, hi = out.get(k, (v, v))
            out[k] = (min(lo, v), max(hi, v))
    return {k: out[k] for k in NAMES if k in out}


def beyond(values: Mapping[str, float],
           checked: Optional[Mapping[str, Tuple[float, float]]]) -> Tuple[Beyond, ...]:
    """The dimensions of `values` outside `checked` (a calibration's ranges; None: unknown, so
    every dimension, with no range); a dimension the ranges lack is unknown too, but for what a
    fit written before its dimension was checked ran without: no layer offloaded (NO_MECHANISM)
    is what every run before then did."""
    out = []
    for k, v in values.items():
        r = None if checked is None else checked.get(k)
        if r is None and checked is not None and NO_MECHANISM.get(k) == v:
            continue
        if r is None or not r[0] <= v <= r[1]:
            out.append(Beyond(k, v, None if r is None else (r[0], r[1])))
    return tuple(out)


def no_ranges(fields_unknown: Iterable[Tuple[str, Optional[Tuple[float, float]]]]) -> bool:
    """Whether a forecast's dimensions outside the checked ranges, (field, checked) each, say
    the calibration records no ranges at all (beyond() of None: every dimension unknown, `gpus`,
    every point's, among them), not that it lacks a few (one fitted before Seer checked them:
    `offload`), which are named, each "checked range unknown"."""
    return any(field == "gpus" and r is None for field, r in fields_unknown)


# the highest a range may reach: each dimension counts (GPUs, layers, parameters: the largest
# model 10^15 would be) within a float's whole numbers; 1e300 GPUs was said as "checked
# 1,000,000,000,000,000,052,504,760,..." in W759, 301 digits a dimension
MAX_RANGE = 2 ** 53


def check_ranges(doc) -> Dict[str, Tuple[float, float]]:
    """The `ranges` of a fit document: {dimension: [lowest, highest]}, numbers from 0 to
    MAX_RANGE with lowest <= highest; ValueError naming the key otherwise."""
    if not isinstance(doc, dict):
        raise ValueError("`ranges` is not an object")
    out = {}
    for key, r in doc.items():
        where = f"ranges[{key!r}]"
        if key not in WHAT:
            raise ValueError(f"{where} is no dimension Seer checks ({', '.join(NAMES)})")
        if not (isinstance(r, list) and len(r) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)):
            raise ValueError(f"{where} is not [lowest, highest]")
        if not 0 <= r[0] <= r[1] <= MAX_RANGE:          # also NaN; before float(): 1e400
            raise ValueError(f"{where} = {r} is not a range 0 <= lowest <= highest <= 2^53 "
                             f"(a count of the runs fitted)")
        lo, hi = float(r[0]), float(r[1])
        out[key] = (lo, hi)
    return out
