"""Fit Seer's constants on the calibration runs and report the errors (seer/calibration).

    python -m astral_dsl.seer.calibrate            # refit; compare with the shipped fit.json
    python -m astral_dsl.seer.calibrate --write    # refit and write fit.json (the shipped values)
    python -m astral_dsl.seer.calibrate --out F    # write the fits elsewhere
                                                   # (astral forecast --calibration F)
    python -m astral_dsl.seer.calibrate --markdown # the shipped fits as the docs' tables

Three fits: on every set (shipped) and on each set alone. The printed table gives, per set, the
error of the fit that includes it ("in fit") and of the fit on the other sets ("left out").

The fit minimises the squared log errors log(forecast / measured) of the runs of its sets, plus
a weak prior per constant: PRIOR_WEIGHT x (value - centre) / half-width of its prior range
(calibration.CONSTANTS `compare`: from the literature where a source gives one, else an
assumption, as the table says), so that a constant the runs say little about stays at the
centre of that range. It starts from those centres (never from the shipped values, so that a
refit does not depend on the last one) and uses scipy's trust-region least squares with bounds;
results are rounded to 4 significant digits. Each forecast goes through the same path as
`astral forecast`: the job of selene.astral, validated, forecast by seer.run.

How well the runs determine each constant (`spread` in fit.json, printed with the fit): one
standard error from the runs alone, sigma_i = s sqrt((J^T J)^-1_ii), with J the Jacobian of the
runs' log errors at the fit (the priors left out) and s^2 their residual variance (runs minus
constants degrees of freedom); for a constant fitted on a log scale, the factor 10^sigma. None
(printed "not determined") when the runs do not move the forecast along that constant, or when
their errors cannot tell it apart from the others (J^T J singular): the prior alone holds it.
A fitted value outside its prior range is flagged (`outside_prior`)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from astral_dsl.seer.calibration import (ALL, CONSTANTS, DESIGN, FIT_FILE, SETS, Calibration,
                                         Run, fits, key)

PRIOR_WEIGHT = 0.01      # one half-width off the literature costs as much as a 1 % error
RTOL = 2e-3              # a refit reproduces the shipped constants to this relative tolerance


@dataclass(frozen=True)
class Prepared:
    run: Run
    spec: object
    gpu: object
    net: object


def prepare(sets: Sequence[str] = ALL) -> Dict[str, List[Prepared]]:
    """The runs' jobs read and validated once, as `astral forecast` reads them."""
    import astral_dsl
    from astral_dsl import seer

    design = astral_dsl.load(DESIGN)
    if not design.valid:
        raise RuntimeError(f"{DESIGN}: " + "; ".join(d.message for d in design.diagnostics))
    out: Dict[str, List[Prepared]] = {}
    for name in sets:
        out[name] = []
        for run in SETS[name][1]:
            job = seer.find_job(design, run.job)
            diags, spec, cluster = seer.validate_job(design, job)
            if any(d.is_error for d in diags) or spec is None or cluster is None:
                raise RuntimeError(f"{run.job}: " + "; ".join(d.message for d in diags))
            out[name].append(Prepared(run, spec, cluster.gpu, cluster.net))
    return out


def forecast(cal: Calibration, runs: Sequence[Prepared]) -> List[float]:
    from astral_dsl.seer.forecast import run

    return [run(p.spec, p.gpu, p.net, calibration=cal).iteration_time for p in runs]


def _to_x(values: Dict[str, float]) -> List[float]:
    return [math.log10(values[c.name]) if c.log else values[c.name] for c in CONSTANTS]


def _from_x(x, sets) -> Calibration:
    values = {c.name: 10 ** v if c.log else v for c, v in zip(CONSTANTS, x)}
    return Calibration(**values, fitted_on=tuple(sets))


def _centre(c) -> float:
    lo, hi = c.compare
    return (math.log10(lo) + math.log10(hi)) / 2 if c.log else (lo + hi) / 2


def _half_width(c) -> float:
    lo, hi = c.compare
    return (math.log10(hi) - math.log10(lo)) / 2 if c.log else (hi - lo) / 2


def fit(sets: Sequence[str], prepared: Dict[str, List[Prepared]]) -> Calibration:
    return fit_with_spread(sets, prepared)[0]


def fit_with_spread(sets: Sequence[str], prepared: Dict[str, List[Prepared]]):
    """(the fit on `sets`, {constant: spread or None}: module docstring)."""
    from scipy.optimize import least_squares

    runs = [p for name in sets for p in prepared[name]]
    measured = [p.run.measured_s for p in runs]

    def residuals(x):
        times = forecast(_from_x(x, sets), runs)
        errs = [math.log(t / m) for t, m in zip(times, measured)]
        prior = [PRIOR_WEIGHT * (v - _centre(c)) / _half_width(c) for c, v in zip(CONSTANTS, x)]
        return errs + prior

    lo = [math.log10(c.bounds[0]) if c.log else c.bounds[0] for c in CONSTANTS]
    hi = [math.log10(c.bounds[1]) if c.log else c.bounds[1] for c in CONSTANTS]
    x0 = [_centre(c) for c in CONSTANTS]
    result = least_squares(residuals, x0, bounds=(lo, hi), method="trf", diff_step=1e-3,
                           xtol=1e-5, ftol=1e-7, max_nfev=200)
    cal = _from_x(result.x, sets)
    cal = Calibration(**{k: float(f"{v:.4g}") for k, v in cal.values().items()},
                      fitted_on=tuple(sets))
    return cal, _spread(result.jac[:len(runs)], result.fun[:len(runs)])


def _spread(jac, res) -> Dict[str, object]:
    """One standard error per constant from the runs' Jacobian and residuals (module docstring),
    rounded to 2 significant digits; None when the runs do not determine it."""
    import numpy as np

    jac, res = np.asarray(jac, dtype=float), np.asarray(res, dtype=float)
    n, p = jac.shape
    dof = max(1, n - p)
    s2 = float(res @ res) / dof
    scale = np.linalg.norm(jac, axis=0)
    moved = scale > 1e-9 * max(1.0, float(scale.max()))
    out: Dict[str, object] = {c.name: None for c in CONSTANTS}
    if moved.any():
        sub = jac[:, moved] / scale[moved]              # columns scaled: conditioning only
        h = sub.T @ sub
        if np.linalg.cond(h) < 1e10:
            cov = np.linalg.inv(h) * s2
            for j, i in enumerate(np.flatnonzero(moved)):
                c = CONSTANTS[i]
                sigma = float(np.sqrt(cov[j, j])) / scale[i]
                value = 10 ** sigma if c.log else sigma
                out[c.name] = float(f"{value:.2g}")
    return out


def outside_prior(fit_: dict) -> List[str]:
    """The constants of a fit (fit.json's form) whose value lies outside their prior range."""
    return [c.name for c in CONSTANTS
            if not c.compare[0] <= fit_["constants"][c.name] <= c.compare[1]]


def errors(cal: Calibration, runs: Sequence[Prepared]) -> List[Tuple[str, float, float, float]]:
    """(label, measured s, forecast s, error %) per run."""
    times = forecast(cal, runs)
    return [(p.run.label, p.run.measured_s, t, (t / p.run.measured_s - 1) * 100)
            for p, t in zip(runs, times)]


def summary(rows) -> Tuple[float, float]:
    errs = [abs(r[3]) for r in rows]
    return sum(errs) / len(errs), max(errs)


def refit(prepared=None) -> Dict[str, dict]:
    """Every fit of fit.json: on all sets, and on each set alone, with their errors."""
    prepared = prepared or prepare()
    out = {}
    for sets in [ALL] + [(name,) for name in ALL]:
        cal, spread = fit_with_spread(sets, prepared)
        errs = {}
        for name in ALL:
            mean, worst = summary(errors(cal, prepared[name]))
            errs[name] = {"mean_pct": round(mean, 3), "max_pct": round(worst, 3)}
        out[key(sets)] = {"sets": list(sets), "constants": cal.values(), "errors": errs,
                          "spread": spread}
        out[key(sets)]["outside_prior"] = outside_prior(out[key(sets)])
    return out


def compare(new: Dict[str, dict], old: Dict[str, dict]) -> List[str]:
    """The constants that differ by more than RTOL between two sets of fits."""
    out = []
    for name, fit_ in new.items():
        for const, value in fit_["constants"].items():
            shipped = old.get(name, {}).get("constants", {}).get(const)
            if shipped is None or abs(value - shipped) > RTOL * abs(shipped):
                out.append(f"{name}: {const} = {value:.4g}, shipped {shipped}")
    return out


def _pct(x: float) -> str:
    return f"{x:.1f} %"


def table(new: Dict[str, dict]) -> str:
    """Per set: mean / max error in the fit and left out of it; per constant, each fit's value
    with its spread, and the prior range (module docstring)."""
    lines = [f"{'set':<50} {'in fit: mean / max':>20} {'left out: mean / max':>22}"]
    for name in ALL:
        inside = new[key(ALL)]["errors"][name]
        others = tuple(n for n in ALL if n != name)
        outside = new[key(others)]["errors"][name] if others else None
        left = (f"{_pct(outside['mean_pct'])} / {_pct(outside['max_pct'])}" if outside
                else "-")
        lines.append(f"{SETS[name][0]:<50} {_pct(inside['mean_pct']):>10} / "
                     f"{_pct(inside['max_pct'])} {left:>22}")
    lines.append("")
    lines.append(f"{'constant':<12} " + " ".join(f"{k:>30}" for k in new) + "  prior range")
    for c in CONSTANTS:
        cells = [f"{_value(new[k], c)}" for k in new]
        lines.append(f"{c.name:<12} " + " ".join(f"{x:>30}" for x in cells)
                     + f"  {c.compare[0]:g} - {c.compare[1]:g}")
    lines.append("(+/- one standard error from the runs alone; *: outside the prior range; "
                 "not determined: the prior alone holds it)")
    return "\n".join(lines)


def _value(fit_: dict, c) -> str:
    """`0.7697 +/- 0.012`, `1.863e+10 x/ 1.3`, `0.5 (not determined)`, with `*` outside the
    prior range."""
    v, sd = fit_["constants"][c.name], fit_.get("spread", {}).get(c.name)
    flag = "*" if c.name in fit_.get("outside_prior", ()) else ""
    if sd is None:
        return f"{v:.4g}{flag} (not determined)"
    return f"{v:.4g}{flag} " + (f"x/ {sd:.2g}" if c.log else f"+/- {sd:.2g}")


def markdown_constants(new: Dict[str, dict]) -> str:
    """The calibration table of docs/seer.md, from the fits (a test keeps the two equal)."""
    names = {key(ALL): "shipped (both sets)"}
    names.update({key((n,)): SETS[n][0].split(",")[0].split(" et al.")[0] + " alone"
                  for n in ALL})
    head = ["constant", "meaning"] + [names[k] for k in new] + ["prior range"]
    lines = ["| " + " | ".join(head) + " |",
             "|---|---|" + "---:|" * len(new) + "---|"]
    for c in CONSTANTS:
        cells = [f"`{c.name}`", c.meaning] + [_value(new[k], c) for k in new]
        cells.append(f"{c.compare[0]:g} - {c.compare[1]:g} ({c.source})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_errors(new: Dict[str, dict]) -> str:
    """The accuracy table of the README, from the fits (a test keeps the two equal)."""
    lines = ["| set | runs | in fit: mean / max | left out: mean / max |",
             "| --- | ---: | ---: | ---: |"]
    for name in ALL:
        inside = new[key(ALL)]["errors"][name]
        others = tuple(n for n in ALL if n != name)
        outside = new[key(others)]["errors"][name]
        lines.append(f"| {SETS[name][0]} | {len(SETS[name][1])} | {_pct(inside['mean_pct'])} / "
                     f"{_pct(inside['max_pct'])} | {_pct(outside['mean_pct'])} / "
                     f"{_pct(outside['max_pct'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m astral_dsl.seer.calibrate",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the shipped fit.json")
    ap.add_argument("--out", metavar="FILE", help="write the fits to FILE")
    ap.add_argument("--markdown", action="store_true",
                    help="print the shipped fits as the tables of docs/seer.md and the README "
                         "(no refit)")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown_constants(fits()) + "\n\n" + markdown_errors(fits()))
        return 0
    new = refit()
    print(table(new))
    doc = {"generated_by": "python -m astral_dsl.seer.calibrate --write", "fits": new}
    text = json.dumps(doc, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if args.write:
        FIT_FILE.write_text(text, encoding="utf-8")
        return 0
    differ = compare(new, fits())
    for line in differ:
        print(f"differs from fit.json: {line}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
