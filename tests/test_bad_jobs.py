"""Bad jobs: every design in tests/bad/jobs compiles, and Seer's job validation reports the code
of tests/bad/jobs/EXPECTED at exactly the span given there, never a traceback; `astral forecast`
prints it and exits with 1."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.seer import validate_jobs
from astral_dsl.diagnostics import CODES
from clirun import astral as _astral_cli  # noqa: E402

HERE = Path(__file__).resolve().parent
BAD = HERE / "bad" / "jobs"


def _cases():
    out = []
    for raw in (BAD / "EXPECTED").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, code, where = line.split()
            ln, col = where.split(":")
            out.append((name, code, int(ln), int(col)))
    return out


CASES = _cases()


def test_corpus_is_complete():
    listed = {c[0] for c in CASES}
    assert listed == {p.name for p in BAD.glob("*.astral")}
    # not about a job's source: a runs table, its rows and its --gpu-file (E766, E777, E767:
    # tests/test_runs.py)
    # and a forecast outside the calibrated envelope (W753, `astral forecast` only:
    # tests/test_envelope.py)
    # and a fit on too few runs (W769, `astral calibrate`: tests/test_calibrate.py)
    # and a forecast beyond the calibration runs' scale or layout (W759, `astral forecast`
    # only: tests/test_extrapolation.py)
    # and a runs-table row whose two figures disagree (W778: tests/test_runs_agree.py)
    elsewhere = {"E766", "E767", "E777", "W753", "W759", "W769", "W778"}
    assert {c[1] for c in CASES} >= {code for code in CODES if code[1:3] in ("75", "76")
                                     and code not in elsewhere}
    for _, code, _, _ in CASES:
        assert code in CODES


@pytest.mark.parametrize("name,code,line,column", CASES, ids=[c[0] for c in CASES])
def test_bad_job(name, code, line, column):
    design = astral_dsl.load(BAD / name)
    diags = list(design.diagnostics) if not design.valid else validate_jobs(design)
    hits = [d for d in diags if d.code == code and d.span is not None
            and (d.span.start.line, d.span.start.column) == (line, column)]
    assert hits, [(d.code, str(d.span), d.message) for d in diags]
    assert hits[0].message and hits[0].is_error == code.startswith("E")
    if code[1:3] in ("75", "76", "77"):        # Seer's job checks: each says what to do
        assert hits[0].hint, (code, hits[0].message)
    if not design.valid:            # a bad value: the front end's diagnostic, nothing else
        assert all(d.code == code for d in diags if d.is_error), [d.code for d in diags]
        return
    if code.startswith("E"):
        with pytest.raises(seer.ForecastError) as exc:
            seer.forecast(design)
        assert any(d.code == code for d in exc.value.diagnostics)
    else:                           # a warning: forecast, and the forecast carries it
        fc = seer.forecast(design)
        assert fc.iteration_time > 0
        assert code in [d.code for d in fc.diagnostics], [d.code for d in fc.diagnostics]


# a bad value (or a contradiction) of every forecast option, and the case that shows it
OPTION_CASES = {
    "recompute": "recompute_unknown", "dtype": "dtype_unknown", "attention": "attention_unknown",
    "grad_dtype": "grad_dtype_unknown", "overlap_grad_reduce": "overlap_grad_reduce_not_bool",
    "overlap_param_gather": "overlap_param_gather_not_bool", "tp_overlap": "tp_overlap_unknown",
    "tp": "tp_heads", "pp": "pp_layers", "dp": "dp_zero", "cp": "seq_cp", "ep": "ep_experts",
    "etp": "etp_ffn",
    "sp": "sp_not_bool", "order": "order_empty", "schedule": "schedule_typo",
    "virtual_stages": "virtual_stages_too_many", "stages": "stages_mismatch",
    "zero": "zero_out_of_range", "fsdp": "fsdp_false_zero3",
    "reshard_after_forward": "reshard_without_fsdp", "global_batch": "batch_divisible",
    "micro": "micro_zero", "seq": "seq_zero", "pipeline_runs": "pipeline_runs_zero", "cuda_graphs": "cuda_graphs_not_bool",
    "torch_compile": "torch_compile_not_bool", "ep_overlap": "ep_overlap_not_bool",
    "pp_overlap": "pp_overlap_not_bool",
    "fp8_recipe": "fp8_recipe_unknown", "framework": "framework_unknown",
    "moe_dispatcher": "moe_dispatcher_unknown", "layout": "layout_mismatch",
    "offload_layers": "offload_layers_negative", "recompute_layers": "recompute_layers_zero",
    "capacity_factor": "capacity_factor_zero", "pad_to_capacity": "pad_to_capacity_no_factor",
    "grouped_gemm": "grouped_gemm_not_bool", "router_fusion": "router_fusion_not_bool",
    "permute_fusion": "permute_fusion_not_bool", "rope_fusion": "rope_fusion_not_bool",
    "scale_swizzle": "scale_swizzle_not_bool",
    "cross_entropy": "cross_entropy_unknown",
    "attention_precision": "attention_precision_unknown",
    "head_precision": "head_precision_unknown",
    "moe_routing": "moe_routing_unknown", "optimizer_dtype": "optimizer_dtype_unknown",
    "recompute_modules": "recompute_modules_unknown", "fp8_params": "fp8_params_not_bool",
}


def test_every_forecast_option_has_a_bad_value_case():
    assert set(OPTION_CASES) == set(seer.OPTIONS)
    listed = {c[0] for c in CASES}
    for option, case in OPTION_CASES.items():
        assert f"{case}.astral" in listed, option
        text = (BAD / f"{case}.astral").read_text(encoding="utf-8")
        assert option in text, (option, case)


def test_memory_diagnostic_reports_the_estimate():
    design = astral_dsl.load(BAD / "memory.astral")
    d = next(d for d in validate_jobs(design) if d.code == "E757")
    assert "GB per GPU" in d.message
    assert any("weights" in n and "activations" in n for n in d.notes)


def test_memory_hint_names_the_rule_a_job_that_states_no_recompute_does_not_get():
    """A job that states no `recompute` recomputes nothing (Megatron-LM's default), not the
    rule's choice: E757's hint names `recompute = auto` beside `full`; a job that already
    recomputes whole layers (or leaves it to the rule, checked at full) is not told either."""
    base = (BAD / "memory.astral").read_text(encoding="utf-8")
    for stated, told in (("recompute = selective", True), ("recompute = none", True),
                         ("recompute = full", False), ("recompute = auto", False)):
        design = astral_dsl.loads(base.replace("recompute = selective", stated),
                                  name="memory.astral")
        d = next(d for d in validate_jobs(design) if d.code == "E757")
        assert ("`recompute = auto`" in d.hint) == told, (stated, d.hint)
        assert ("`recompute = full`" in d.hint) == told, (stated, d.hint)
    unstated = astral_dsl.loads(base.replace(", recompute = selective", ""), name="memory.astral")
    d = next(d for d in validate_jobs(unstated) if d.code == "E757")
    assert "`recompute = auto`: the fastest that fits" in d.hint, d.hint


@pytest.mark.parametrize("name,code", [(c[0], c[1]) for c in CASES[:3]])
def test_cli_forecast_reports_bad_job(name, code):
    repo = HERE.parent
    env = dict(os.environ, PYTHONPATH=str(repo))
    proc = _astral_cli("forecast", "--color", "never", f"tests/bad/jobs/{name}", cwd=repo,
                       env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"[{code}]" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
