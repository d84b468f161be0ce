"""Seer: operator-level forecast of one training iteration of a declared job on the declared
infrastructure (docs/seer.md).

    from astral_dsl import seer
    result = seer.forecast(design, job="llama405b")
    result = seer.forecast(applied.design, job="llama405b", failures=applied)   # under a scenario
    result.iteration_time, result.mfu, result.breakdown
    result.timeline(window=(0, 2))        # events as data: pid = stage, tid = stream

Under a scenario, Seer is given the design compiled under it and its failures applied
(analyses.scenarios.Applied: `api.forecast(workspace, scenario=...)` makes both); it compiles
nothing itself. `forecast` raises ForecastError carrying the diagnostics when the job cannot be
forecast; the warnings of a job it forecasts (W750 "may not fit", W751, ..., W753 outside the
calibrated envelope) are `result.diagnostics`; `result.envelope()` says how far to trust it
(seer/envelope.py)."""
from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Optional

from astral_dsl.semantics.overrides import command_line

if TYPE_CHECKING:
    from astral_dsl.seer.forecast import Forecast

# The package's names are imported on first use (PEP 562), not with the package: `astral check`
# of a design with a job imports what validating it needs (seer.validate), not the forecast
# and its envelope (for start-up). A submodule not imported yet (seer.comm) is imported too.
_LAZY = {"Calibration": "calibration", "read_calibration": "calibration",
         "OperatorTable": "operator_table", "Envelope": "envelope", "outside_warning": "envelope",
         "Forecast": "forecast", "hardware_flops": "forecast", "model_flops": "forecast",
         "run": "forecast", "OPTIONS": "job", "check_options": "job",
         "unknown_options": "job", "JobSpec": "spec", "ModelSpec": "model_spec",
         "ParallelSpec": "spec", "forecast_diagnostics": "validate_memory",
         "unmatched_table_warning": "validate", "validate_job": "validate",
         "validate_jobs": "validate", "envelope": "envelope"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(types.ModuleType):
    """The package: `forecast` and `envelope` name its functions, and also submodules, which
    the import system sets on the package as it imports them; the functions keep the names, as
    when the package imported its submodules before defining them."""

    def __setattr__(self, name: str, value) -> None:
        if name in ("forecast", "envelope") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


class ForecastError(Exception):
    """Why a job cannot be forecast. The message states the reason: when `diagnostics` hold
    errors, the first of them (code and message) follows the summary, e.g. "job `llama` cannot
    be forecast: E740 tp 3 does not divide the 64 attention heads"; `diagnostics` holds them
    all, with their spans."""

    def __init__(self, message: str, diagnostics=()):
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.is_error]
        if errors:
            message += f": {errors[0].code} {errors[0].message}" + (
                f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else "")
        super().__init__(message)


def find_job(design, name: Optional[str] = None, option=command_line):
    """The job `name` of the design (default: the first declared). ForecastError when the
    design declares none (E758) or none of that name (E221, unknown_job, naming it by
    `option`): its `diagnostics`."""
    if name is not None:
        for job in design.jobs:
            if job.template == name:
                return job
        unknown = unknown_job(design, name, option)
        raise ForecastError(f"no job `{name}` in the design", [unknown])
    if not design.jobs:             # the design's, not the command line's: E758, exit 1
        from astral_dsl.diagnostics import Diagnostic, Severity

        raise ForecastError("the design declares no job", [Diagnostic(
            "E758", Severity.ERROR, "the design declares no job to forecast", None,
            "declare a `job` (docs/language.md, section 13)", file=design.file)])
    return design.jobs[0]


MAX_JOBS_LISTED = 20        # the hint of E221 names at most this many of the design's jobs


def unknown_job(design, name: str, option=command_line):
    """E221 for a `--job NAME` the design does not declare, its hint naming the jobs it
    declares (the closest first, as "did you mean"): what every command that takes `--job`
    says of it (`astral forecast`, `sweep`, `search`, `diagnose`, `synth`, `report`), and the
    `diagnostics` of the Python API's error. `option` names the job given in the caller's
    words (semantics/overrides.py): the command's `--job NAME`, the API's `job='NAME'`."""
    from astral_dsl.diagnostics import Diagnostic, Severity, did_you_mean

    known = [j.template for j in design.jobs]
    if not known:
        hint = "the design declares no job"
    else:
        listed = ", ".join(known[:MAX_JOBS_LISTED]) + (
            f" and {len(known) - MAX_JOBS_LISTED} more" if len(known) > MAX_JOBS_LISTED else "")
        close = did_you_mean(name, known)
        hint = f"{close} jobs: {listed}" if close else f"jobs: {listed}"
    return Diagnostic("E221", Severity.ERROR, f"{option(name, flag='--job')}: no such job",
                      None, hint,
                      file=design.file)


def forecast(design, job: Optional[str] = None, failures=None,
             operator_table: Optional[str] = None, calibration=None, **options) -> Forecast:
    """Forecast one job (default: the first declared). `failures`: a scenario's failures
    applied to `design`, the design compiled under it (analyses.scenarios.Applied, whose
    `design` it is). `options` take the place of the job's
    fields of the same names, for a what-if (`micro=2`, `attention="unfused"`, `zero=1`,
    `order="tp-cp-ep-pp-dp"`, ...: job.OPTIONS lists them) and are checked as the fields are;
    an option None clears the field (as if the job did not state it).
    `calibration`: a Calibration or the path of a fit file written by `astral calibrate -o`
    (`astral forecast --calibration`); default: the shipped fit."""
    # here, not with the package, for start-up (see _LAZY)
    from astral_dsl.seer.calibration import Calibration, read_calibration
    from astral_dsl.seer.operator_table import OperatorTable
    from astral_dsl.seer.envelope import extrapolated_warning, outside_warning
    from astral_dsl.seer.forecast import run
    from astral_dsl.seer.job import check_options, unknown_options
    from astral_dsl.seer.validate import unmatched_table_warning, validate_job
    from astral_dsl.seer.validate_memory import forecast_diagnostics

    unknown = unknown_options(options)
    if unknown:
        raise ForecastError("bad forecast option", unknown)
    bad = check_options(options)
    if bad:
        raise ForecastError("bad forecast option", bad)
    inst = find_job(design, job)
    notes = []
    scenario = design.scenario if failures is not None else None
    if failures is not None:
        notes.append(f"scenario `{scenario}`: " + ("; ".join(failures.notes) or "no change"))
    diags, spec, cluster = validate_job(design, inst, failures, **options)
    if failures is not None and spec is not None and cluster is not None:
        from astral_dsl.seer.scenario import blockers

        diags = diags + blockers(design, failures, inst, spec.parallel.gpus,
                                 cluster.net.gpus_per_host)
    errors = [d for d in diags if d.is_error]
    if errors or spec is None or cluster is None:
        raise ForecastError(f"job `{inst.template}` cannot be forecast", diags)
    table = OperatorTable.read(operator_table) if operator_table else None
    if calibration is not None and not isinstance(calibration, Calibration):
        calibration = read_calibration(calibration)
    result = run(spec, cluster.gpu, cluster.net, table, notes, calibration)
    result.placement = cluster.placement
    result.scenario = (scenario, failures) if failures is not None else None
    result.measured = len(table.matched) if table is not None else 0
    env, own = result.envelope(), _own(result.calibration)
    result.diagnostics = forecast_diagnostics(inst, diags, result, cluster) + \
        outside_warning(inst, env, own) + extrapolated_warning(inst, env, own)
    if table is not None:
        left = table.unmatched()
        result.notes += (f"operator table {operator_table}: {len(table.matched)} of its "
                         f"{len(table.rows)} rows priced an operator of the forecast"
                         + (f"; priced nothing: {left}" if left else ""),)
        if not table.matched:
            result.diagnostics.append(unmatched_table_warning(inst, operator_table))
    if any(d.is_error for d in result.diagnostics):     # the rule's choice clearly over memory
        raise ForecastError(f"job `{inst.template}` cannot be forecast", result.diagnostics)
    return result


def _own(calibration):
    """`calibration` when it is not the shipped fit (W753's hint), else None."""
    from astral_dsl.seer.calibration import shipped

    return None if calibration == shipped() else calibration


__all__ = ["Envelope", "Forecast", "ForecastError", "JobSpec", "ModelSpec", "OperatorTable",
           "ParallelSpec", "envelope", "find_job", "forecast", "hardware_flops", "model_flops",
           "run", "unknown_job", "validate_job", "validate_jobs"]
