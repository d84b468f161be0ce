"""Everything a forecast can be told is a job field (issue: a .astral job states what a
published run states), and the fields do what they say: the rank order, the schedule, the
sharding and the overlaps (docs/seer.md)."""
from __future__ import annotations

import json
from pathlib import Path

from attrs import evolve as replace
import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.model.kinds import KINDS
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.analyses.walk import Resolver
from astral_dsl.seer.job import OPTIONS, job_spec
from astral_dsl.seer.lower import Lowering, groups
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
LLAMA_70B = ModelSpec("Llama3_70B", 80, 8192, 64, 8, 28672, 128256, 8192, "swiglu")

HEAD = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Llama3_70B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
site S { racks = 32 x R }
"""


def design(job_body: str):
    d = astral_dsl.loads(HEAD + job_body, name="job.astral", root=REPO)
    assert d.valid, [(x.code, x.message) for x in d.diagnostics]
    return d


BASE = """
job j {
  model = Llama3_70B, placement = S, gpus = 1024, recompute = selective
  %s
  parallel { tp = 8, pp = 4, dp = 32, sp = true, zero = 1 %s }
  batch { global_batch = 1024, micro = 1, seq = 8192 }
}
"""


# ---- every option is a field ---------------------------------------------------------------------
def test_every_forecast_option_is_a_job_field():
    common = set.intersection(*(set(k.fields) for k in KINDS.values()))   # vendor, note, ...
    fields = {name for kind in ("job", "parallel", "batch") for name in KINDS[kind].fields}
    fields -= common
    assert set(OPTIONS) <= fields
    # what a job has beyond the options is what places it, not how it runs
    assert fields - set(OPTIONS) == {"model", "placement", "gpus", "hosts_per_rack",
                                     "utilization"}
    for name, record in OPTIONS.items():
        assert name in KINDS[record or "job"].fields
    assert set(EVERY_OPTION) == set(OPTIONS)         # each is tested below


@pytest.mark.parametrize("field,record,text,option", [
    ("attention", "", "unfused", "unfused"),
    ("grad_dtype", "", "bf16", "bf16"),
    ("overlap_grad_reduce", "", "true", True),
    ("overlap_param_gather", "", "true", True),
    ("tp_overlap", "", "none", "none"),
    ("order", "parallel", '"tp-cp-ep-pp-dp"', "tp-cp-ep-pp-dp"),
    ("schedule", "parallel", "interleaved, virtual_stages = 2", None),
    ("zero", "parallel", "2", 2),
])
def test_a_field_and_the_option_of_the_same_name_agree(field, record, text, option):
    if f"{field} = " in BASE:        # set once in a block (E202): the base's value replaced
        body = (BASE % ("", "")).replace(f"{field} = 1", f"{field} = {text}")
    else:
        body = BASE % ((f"{field} = {text}", "") if not record else ("", f", {field} = {text}"))
    from_field = seer.forecast(design(body))
    if option is None:
        from_option = seer.forecast(design(BASE % ("", "")), schedule="interleaved",
                                    virtual_stages=2)
    else:
        from_option = seer.forecast(design(BASE % ("", "")), **{field: option})
    assert from_field.job == from_option.job
    assert from_field.iteration_time == from_option.iteration_time


EVERY_OPTION = {           # option -> (how the field is written, the Python value)
    "recompute": ("full", "full"), "dtype": ("fp16", "fp16"), "attention": ("unfused", "unfused"),
    "grad_dtype": ("bf16", "bf16"), "overlap_grad_reduce": ("true", True),
    "overlap_param_gather": ("true", True), "tp_overlap": ("none", "none"),
    "tp": ("4", 4), "pp": ("2", 2), "dp": ("16", 16), "cp": ("2", 2), "ep": ("1", 1),
    "etp": ("2", 2),
    "sp": ("true", True), "order": ('"tp-cp-ep-pp-dp"', "tp-cp-ep-pp-dp"),
    "schedule": ("gpipe", "gpipe"), "virtual_stages": ("1", 1), "stages": ("[40, 40]", [40, 40]),
    "zero": ("2", 2), "fsdp": ("true", True), "reshard_after_forward": ("false", False),
    "global_batch": ("512", 512), "micro": ("2", 2), "seq": ("4096", 4096),
    "fp8_recipe": ("current", "current"), "framework": ("torchtitan", "torchtitan"),
    "cuda_graphs": ("true", True), "moe_dispatcher": ("deepep", "deepep"),
    "ep_overlap": ("true", True), "torch_compile": ("true", True),
    "pp_overlap": ("true", True), "layout": ("[40, 40]", [40, 40]), "offload_layers": ("4", 4),
    "recompute_layers": ("3", 3), "capacity_factor": ("1.25", 1.25),
    "pad_to_capacity": ("true", True), "grouped_gemm": ("false", False), "moe_routing": ("round_robin", "round_robin"),
    "optimizer_dtype": ("bf16", "bf16"), "pipeline_runs": ("2", 2), "fp8_params": ("true", True),
    "router_fusion": ("true", True), "cross_entropy": ("te", "te"),
    "attention_precision": ("fp8", "fp8"), "head_precision": ("fp8", "fp8"),
    "permute_fusion": ("false", False), "rope_fusion": ("false", False),
    "scale_swizzle": ("true", True),
    "recompute_modules": ("[layernorm, moe_act]", ["layernorm", "moe_act"]),
}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_option_reads_as_its_field(name):
    """Each option gives the JobSpec the field of the same name gives (seer/job.py)."""
    text, value = EVERY_OPTION[name]
    record = OPTIONS[name]
    body = {"": "", "parallel": "", "batch": ""}
    body[record] = f"{name} = {text}"
    d = design(f"""
job j {{
  model = Llama3_70B, placement = S
  {body[""]}
  parallel {{ {body["parallel"]} }}
  batch {{ {body["batch"]} }}
}}
""")
    plain = design("job j {\n  model = Llama3_70B, placement = S\n}\n")
    model = Resolver(d)(d.jobs[0].field("model"))
    assert job_spec(d.jobs[0], model) == job_spec(plain.jobs[0], model, **{name: value})


def test_bad_option_values_get_the_fields_diagnostics():
    d = design(BASE % ("", ""))
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(d, attention="sparse")
    assert [x.code for x in exc.value.diagnostics] == ["E311"]
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(d, zero=4)
    assert [x.code for x in exc.value.diagnostics] == ["E309"]
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(d, order="tp-dp")          # a value the front end accepts, validation not
    assert [x.code for x in exc.value.diagnostics if x.is_error] == ["E759"]
    with pytest.raises(seer.ForecastError, match="not a job field"):
        seer.forecast(d, grad_reduce_dtype="fp32")


def test_interleaved_with_one_virtual_stage_is_1f1b_and_says_so():
    """`schedule = interleaved` with `virtual_stages = 1` (in the source, or as the option of a
    what-if) was forecast without a word: one chunk per stage has nothing to interleave, and the
    forecast is 1F1B's to the last digit (memory.in_flight and schedule.py take v = 1 as 1F1B).
    W751, as for the other fields without effect; the rule's own choice of 1 stays a note."""
    stated = design(BASE % ("", ", schedule = interleaved, virtual_stages = 1"))
    plain = seer.forecast(design(BASE % ("", "")))
    for fc in (seer.forecast(stated),
               seer.forecast(design(BASE % ("", ", schedule = interleaved")), virtual_stages=1)):
        w751 = [d for d in fc.diagnostics if d.code == "W751"]
        assert [d.message for d in w751] == [
            "job `j`: schedule = interleaved has no effect with virtual_stages = 1: one chunk "
            "per stage has nothing to interleave, and the job is forecast as 1F1B"]
        assert w751[0].span is not None and "schedule = 1f1b" in w751[0].hint
        assert fc.iteration_time == plain.iteration_time
    src = HEAD + BASE % ("", ", schedule = interleaved, virtual_stages = 1")
    line = next(i for i, t in enumerate(src.splitlines(), 1) if "virtual_stages = 1" in t)
    assert [d.span.start.line for d in seer.forecast(stated).diagnostics
            if d.code == "W751"] == [line]
    assert not [d for d in seer.forecast(design(BASE % ("", ", schedule = interleaved")))
                .diagnostics if d.code == "W751"]          # the rule chooses: no warning


def test_schedule_1f1b_bare_and_quoted():
    bare = design(BASE % ("", ", schedule = 1f1b"))
    quoted = design(BASE % ("", ', schedule = "1f1b"'))
    assert seer.forecast(bare).iteration_time == seer.forecast(quoted).iteration_time


# ---- the rank order ----------------------------------------------------------------------------------
def test_rank_order_numbers_ranks_megatron_style():
    par = ParallelSpec(tp=2, pp=2, dp=2, cp=2)
    order = RankOrder(par)                                   # tp-cp-ep-dp-pp
    assert order.rank(tp=1, cp=1, dp=1, pp=1) == 1 + 2 + 4 + 8
    assert order.group("tp", 5) == [4, 5]
    assert order.group("dp", 0) == [0, 4]
    assert order.group(("dp", "cp"), 0) == [0, 2, 4, 6]
    assert order.group("pp", 3) == [3, 11]
    assert order.coords(13) == {"tp": 1, "cp": 0, "ep": 0, "dp": 1, "pp": 1}
    pp_first = RankOrder(replace(par, order=("tp", "cp", "ep", "pp", "dp")))
    assert pp_first.group("pp", 0) == [0, 4] and pp_first.group("dp", 0) == [0, 8]


def test_rank_order_group_shapes_on_hosts():
    par = ParallelSpec(tp=2, pp=4, dp=8)
    order = RankOrder(par)                                   # dp stride 2, pp stride 16
    dp = order.shape(("dp",), 8)
    assert (dp.n, dp.per_host, dp.span_hosts, dp.stride) == (8, 4, 2, 2)
    pp = order.shape(("pp",), 8)
    assert (pp.n, pp.per_host, pp.span_hosts, pp.stride) == (4, 1, 7, 16)
    swapped = RankOrder(replace(par, order=("tp", "cp", "ep", "pp", "dp")))
    dp = swapped.shape(("dp",), 8)                          # dp stride 8: one per host
    assert (dp.n, dp.per_host, dp.span_hosts) == (8, 1, 8)
    experts = RankOrder(ParallelSpec(tp=2, pp=1, dp=4, cp=2, ep=4), experts=True)
    # expert tensor parallelism 1 (the MoE recipes'): TP and CP fold into the expert ranks, so
    # an EP group takes consecutive ranks (Megatron-Core's expert rank generator, etp = 1)
    assert experts.group("ep", 0) == [0, 1, 2, 3]
    assert experts.sizes["dp"] == 2 * 4 * 2 // 4        # expert data parallelism: tp dp cp / ep


def test_order_moves_data_parallel_traffic_off_nvlink():
    """tp 2 x dp 4 in one 8-GPU host with the default order; pp before dp spreads the DP
    group over hosts, and the gradient reduction slows down."""
    par = ParallelSpec(tp=2, pp=4, dp=4, sp=True)
    job = JobSpec("j", LLAMA_70B, par, 64, 1, 8192, "full", "bf16")
    inside = groups(job, NET)["dp"]
    outside = groups(replace(job, parallel=replace(par, order=("tp", "cp", "ep", "pp", "dp"))),
                     NET)["dp"]
    assert inside.hosts == 1 and outside.hosts == 4
    a = seer.run(job, H100, NET)
    b = seer.run(replace(job, parallel=replace(par, order=("tp", "cp", "ep", "pp", "dp"))),
                 H100, NET)
    assert b.breakdown["dp_comm"] > a.breakdown["dp_comm"]


# ---- sharding, overlaps, gradient precision -------------------------------------------------------------
def _job(**par):
    p = ParallelSpec(tp=8, pp=4, dp=32, sp=True, **par)
    return JobSpec("j", LLAMA_70B, p, 1024, 1, 8192, "selective", "bf16")


def test_fsdp_without_resharding_gathers_weights_once_per_micro_batch():
    keep = _job(zero=3, reshard_after_forward=False)
    again = _job(zero=3)
    names = lambda job, ph: [o.name for o in Lowering(job, Costs(H100, "bf16"), NET)  # noqa: E731
                             .template(1, 0, ph).ops if o.stream == "dp"]
    assert names(again, "F").count("param all-gather") == 20
    assert names(again, "B").count("param all-gather") == 20
    assert names(keep, "B").count("param all-gather") == 0
    assert seer.run(keep, H100, NET).memory.weights > seer.run(again, H100, NET).memory.weights


def test_overlap_param_gather_hides_the_gather_in_the_forward():
    plain = seer.run(_job(zero=1), H100, NET)
    hidden = seer.run(replace(_job(zero=1), overlap_param_gather=True), H100, NET)
    assert plain.runs[0].gather[0] > plain.runs[0].optimizer[0]   # after the step
    assert hidden.runs[0].gather[0] == 0.0                        # during the forward
    assert hidden.iteration_time < plain.iteration_time
    assert sum(hidden.breakdown.values()) == pytest.approx(hidden.iteration_time, rel=1e-9)


def test_overlap_grad_reduce_shortens_the_tail():
    plain = seer.run(_job(), H100, NET)
    overlapped = seer.run(replace(_job(), overlap_grad_reduce=True), H100, NET)
    assert overlapped.breakdown["dp_comm"] < plain.breakdown["dp_comm"]


def test_grad_dtype_sets_gradient_memory_and_traffic():
    fp32 = replace(_job(), grad_dtype="fp32")
    bf16 = replace(_job(), grad_dtype="bf16")
    a, b = seer.run(fp32, H100, NET), seer.run(bf16, H100, NET)
    assert a.memory.gradients == pytest.approx(2 * b.memory.gradients)
    assert sum(e - s for s, e, _ in b.runs[0].dp) < 0.6 * sum(e - s for s, e, _ in a.runs[0].dp)


def test_tp_reductions_on_the_critical_path_without_overlap():
    """tp_overlap = none (Megatron-LM of 2021): a column-parallel layer's input-gradient
    all-reduce follows its weight-gradient GEMM instead of running beside it."""
    job = replace(_job(), parallel=replace(_job().parallel, sp=False))
    low = Lowering(job, Costs(H100, "bf16"), NET)
    ops = {o.name: o for o in low.template(1, 0, "B").ops}
    assert ops["qkv grad all-reduce"].start < ops["qkv wgrad"].end           # overlapped
    serial = Lowering(replace(job, tp_overlap="none"), Costs(H100, "bf16"), NET)
    ops = {o.name: o for o in serial.template(1, 0, "B").ops}
    assert ops["qkv grad all-reduce"].start >= ops["qkv wgrad"].end
    assert seer.run(replace(job, tp_overlap="none"), H100, NET).iteration_time > \
        seer.run(job, H100, NET).iteration_time


# ---- the job's warnings reach the forecast (W750, W751, W752; W753 outside the envelope) -----------------
def _outside(path) -> list:
    """["W753"] when the forecast of the file's first job is outside the calibrated envelope
    (tests/test_envelope.py checks the warning itself), else []."""
    fc = seer.forecast(astral_dsl.load(REPO / path) if isinstance(path, str) else path)
    return [] if fc.envelope().inside else ["W753"]


def _cli(*args):
    return _astral_cli(*args, cwd=REPO)


def test_cli_forecast_shows_the_may_not_fit_warning_in_text_and_json():
    import json

    proc = _cli("forecast", "tests/bad/jobs/memory_margin.astral", "--color", "never")
    assert proc.returncode == 0, proc.stderr
    assert "warning[W750]: job `tight` may not fit in GPU memory: 87 GB estimated, 85.9 GB " \
           "(80 GiB) on the GPU, estimate +/- 8 %" in proc.stdout
    assert "iteration time" in proc.stdout
    proc = _cli("forecast", "tests/bad/jobs/memory_margin.astral", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["valid"] is True and sorted(d["code"] for d in doc["diagnostics"]) == \
        sorted(["W216", "W750"] + _outside("tests/bad/jobs/memory_margin.astral"))   # by position
    # (W216: HGX8's assumed liquid share, which the design keeps)
    assert doc["memory_gb"]["total"] > 80 * 2**30 / 1e9          # an H100's 80 GiB
    proc = _cli("forecast", "tests/bad/jobs/overlap_param_gather_no_zero.astral", "--format",
                "json")
    assert sorted(d["code"] for d in json.loads(proc.stdout)["diagnostics"]) == \
        sorted(["W216", "W751"] + _outside("tests/bad/jobs/overlap_param_gather_no_zero.astral"))


def test_forecast_says_may_not_fit_where_search_does_without_w750():
    """A memory estimate under the GPU's 80 GiB whose uncertainty reaches past it: no W750 (the
    estimate alone fits), but the forecast says "may not fit" beside its memory, as `astral
    search` flags the same configuration (explore.search.may_not_fit: one test)."""
    from astral_dsl.explore.search import may_not_fit
    from astral_dsl.outputs.forecast.report import render

    d = astral_dsl.load(REPO / "tests/bad/jobs/memory_margin.astral")
    # at seq 8,704 the activations are 45.0 GB x 8,704 / 8,192 = 47.81 GB; with weights 8.82,
    # gradients 17.64, optimizer 6.62 and reserved 3.0 GB: 83.90 GB, +/- (4.78 + 1.5) = 6.28 GB:
    # 83.90 <= 85.90 (80 GiB) < 90.18
    fc = seer.forecast(d, seq=8704)
    assert fc.memory.total / 1e9 == pytest.approx(83.899, abs=1e-3)
    assert fc.memory.uncertainty / 1e9 == pytest.approx(6.282, abs=1e-3)
    assert "W750" not in [x.code for x in fc.diagnostics]
    assert ("83.9 GB  +/- 7 % on stage 0, the fullest; may not fit in 85.9 GB (80 GiB)"
            in render(fc))
    assert may_not_fit({"memory_gb": 83.899, "memory_uncertainty_gb": 6.282}, 80 * 2**30 / 1e9)
    # at seq 6,144: 36.08 + 45.0 x 0.75 = 69.83 GB, +/- (3.38 + 1.5): 74.7 GB fits either way
    fc = seer.forecast(d, seq=6144)
    assert fc.memory.total / 1e9 == pytest.approx(69.83, abs=0.01)
    assert "may not fit" not in render(fc)
    # over 80 GiB at the file's 9,216 tokens, 36.08 + 45.0 x 9,216 / 8,192 = 86.71 GB (W750's
    # test too): said beside the memory as well
    assert ("86.7 GB  +/- 8 % on stage 0, the fullest; may not fit in 85.9 GB (80 GiB)"
            in render(seer.forecast(d)))


def test_api_forecast_carries_the_warnings():
    fc = seer.forecast(astral_dsl.load(REPO / "tests/bad/jobs/memory_margin.astral"))
    w = [d for d in fc.diagnostics if d.code == "W750"]
    assert len(w) == 1 and not w[0].is_error and fc.memory.total > 80 * 2**30
    assert "estimate +/- 8 %" in w[0].message
    fc = seer.forecast(astral_dsl.load(REPO / "tests/bad/jobs/model_no_vocab.astral"))
    assert [d.code for d in fc.diagnostics] == \
        ["W752"] + _outside("tests/bad/jobs/model_no_vocab.astral") and fc.job.model.vocab == 32000
    plain = design(BASE % ("", ""))
    assert [d.code for d in seer.forecast(plain).diagnostics] == _outside(plain)


def test_rule_fallback_over_memory_warns():
    """The reference job with selective recomputation: no number of virtual stages fits the
    H800's 80 GB; the rule takes the one needing the least memory (1) and the forecast says it
    may not fit, naming the rule's choice."""
    fc = seer.forecast(astral_dsl.load(REPO / "examples/astral.astral"), recompute="selective")
    assert fc.memory.total > 80e9 and dict(fc.chosen) == {"virtual_stages": 1}
    (w,) = [d for d in fc.diagnostics if d.code == "W750"]
    assert "least memory (virtual_stages = 1)" in " ".join(w.notes)


# ---- keywords that read as quantities, values accepted silently before --------------------------------------
def _front_end(text):
    d = astral_dsl.loads(HEAD + text, name="job.astral", root=REPO)
    return [x for x in d.diagnostics if x.is_error]


def test_keyword_outside_its_field_says_how_to_write_it():
    (e,) = _front_end("let sch = 1f1b\n" + BASE % ("", ", schedule = sch"))
    assert e.code == "E300" and "keyword, not a quantity" in e.message
    assert "`schedule = 1f1b`" in e.hint and '"1f1b"' in e.hint
    (e,) = _front_end(BASE % ("", ", order = 1f1b"))
    assert e.code == "E303" and "double quotes" in e.message and '`order = "1f1b"`' in e.hint
    quoted = design('let sch = "1f1b"\n' + BASE % ("", ", schedule = sch"))
    assert seer.forecast(quoted).job.parallel.schedule == "1f1b"


def test_empty_order_and_fsdp_false_with_zero_3_are_refused():
    empty = BASE % ("", ', order = ""')
    contradiction = (BASE % ("", ", fsdp = false")).replace("zero = 1", "zero = 3")
    for body, code in ((empty, "E759"), (contradiction, "E761")):
        with pytest.raises(seer.ForecastError) as exc:
            seer.forecast(design(body))
        assert code in [d.code for d in exc.value.diagnostics], body
    with pytest.raises(seer.ForecastError) as exc:       # the option as the field
        seer.forecast(design(BASE % ("", "")), order="")
    assert "E759" in [d.code for d in exc.value.diagnostics]


def test_model_defaults_that_are_guesses_warn():
    body = """
model Mine { layers = 8, hidden = 4096, heads = 32, activation = swiglu }
job j {
  model = Mine, placement = S, gpus = 8, recompute = selective
  parallel { tp = 8, pp = 1, dp = 1, sp = true }
  batch { global_batch = 8, micro = 1 }
}
"""
    fc = seer.forecast(design(body))
    msgs = [d.message for d in fc.diagnostics if d.code == "W752"]
    assert len(msgs) == 3
    assert any("`vocab`" in m and "32,000" in m for m in msgs)
    assert any("`seq`" in m and "2,048" in m for m in msgs)
    # 8h/3 = 8 x 4,096 / 3 = 10,922 (rounded down)
    assert any("`ffn`" in m and "10,922" in m for m in msgs)
    assert fc.job.seq == 2048 and fc.job.model.ffn == 10922


def test_the_command_says_every_guess_where_one_place_has_several(tmp_path):
    """The three W752s point at the model's declaration, one place: `astral forecast` printed
    the first (`vocab`) only, its text and its JSON, as if a scenario's split had copied one
    warning (model/allows.py `once`), so the sequence and FFN width it guessed went unsaid;
    `astral check` said all three."""
    path = tmp_path / "job.astral"
    path.write_text(HEAD + """
model Mine { layers = 8, hidden = 4096, heads = 32, activation = swiglu }
job j {
  model = Mine, placement = S, gpus = 8, recompute = selective
  parallel { tp = 8, pp = 1, dp = 1, sp = true }
  batch { global_batch = 8, micro = 1 }
}
""", encoding="utf-8")
    out = _astral_cli("forecast", str(path), "--format", "json", cwd=tmp_path)
    said = [d["message"] for d in json.loads(out.stdout)["diagnostics"] if d["code"] == "W752"]
    assert sorted(("`vocab`" in m, "`seq`" in m, "`ffn`" in m) for m in said) == [
        (False, False, True), (False, True, False), (True, False, False)]
    text = _astral_cli("forecast", str(path), "--color", "never", cwd=tmp_path).stdout
    assert text.count("warning[W752]") == 3
    checked = _astral_cli("check", str(path), "--format", "json", cwd=tmp_path).stdout
    assert [d["message"] for d in json.loads(checked)["diagnostics"]
            if d["code"] == "W752"] == said


def test_a_hybrid_pattern_without_mamba_dimensions_warns():
    # the Mamba-2 layers of a `pattern` (M) take the assumed dimensions as `mamba_layers` do, and
    # W752 names them; `mamba_expand` is not used (nor named) when `mamba_heads` gives the width
    body = """
model Hy { layers = 4, hidden = 1024, heads = 8, kv_heads = 8, ffn = 4096, vocab = 32000,
  seq = 2048, activation = swiglu, pattern = "M*M-"%s }
job j {
  model = Hy, placement = S, gpus = 8
  parallel { tp = 1, pp = 1, dp = 8 }
  batch { global_batch = 8, micro = 1 }
}
"""
    msgs = [d.message for d in seer.forecast(design(body % "")).diagnostics if d.code == "W752"]
    assert len(msgs) == 1 and "mamba_state = 128" in msgs[0] and "mamba_chunk = 256" in msgs[0]
    assert "mamba_expand = 2" in msgs[0]
    stated = body % ", mamba_heads = 32, mamba_head_dim = 64, mamba_state = 128, mamba_groups = 8"
    msgs = [d.message for d in seer.forecast(design(stated)).diagnostics if d.code == "W752"]
    assert len(msgs) == 1 and "does not state mamba_chunk:" in msgs[0]
    assert "mamba_expand" not in msgs[0]


# ---- virtual stages only as Megatron-LM lays them out ----------------------------------------------------
def test_chunks_split_each_stage_evenly_or_count_embedding_and_loss():
    from astral_dsl.seer.stages import chunk_split, virtual_stage_options

    llama = (7,) + (8,) * 14 + (7,)            # Llama 3 405B: 126 layers on 16 stages
    # no even split of 7 and 8; with the embedding and the loss as a layer: 8 units per stage
    assert chunk_split(llama, 2) == ((3, 4),) + ((4, 4),) * 14 + ((4, 3),)
    assert chunk_split(llama, 8)[0] == (0,) + (1,) * 7          # the embedding alone first
    assert chunk_split(llama, 8)[-1] == (1,) * 7 + (0,)         # the loss alone last
    assert chunk_split(llama, 7) is None                        # 8 layers in 7 chunks: no
    assert chunk_split(llama, 3) is None
    assert virtual_stage_options(llama) == [1, 2, 4, 8]
    assert chunk_split((12,) * 8, 3) == ((4, 4, 4),) * 8
    assert virtual_stage_options((12,) * 8) == [1, 2, 3, 4, 6, 12]
    assert chunk_split((6, 12, 12, 6), 2) == ((3, 3), (6, 6), (6, 6), (3, 3))  # uneven first/last
    assert chunk_split((5, 12, 12, 6), 2) is None


def test_the_rule_picks_only_megatron_layouts():
    fc = seer.forecast(astral_dsl.load(REPO / "examples/astral.astral"))
    assert dict(fc.chosen)["virtual_stages"] in (2, 4, 8)
    body = BASE % ("", ", stages = [19, 20, 20, 21], schedule = interleaved, virtual_stages = 3")
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(design(body))
    (e,) = [d for d in exc.value.diagnostics if d.code == "E751"]
    assert "do not split into 3 virtual stages" in e.message


def test_interleaving_megatron_refuses_is_warned_and_the_rule_says_why_it_did_not():
    """One rule for interleaving: Megatron-Core 0.16.1 runs an interleaved schedule's
    micro-batches in groups of pp and refuses a last group of fewer (schedules.py). Declared,
    such a layout is forecast with W757; left to the rule, the rule takes 1 virtual stage and
    the forecast says why, printing the schedule as the 1F1B it is."""
    from astral_dsl.outputs.forecast.report import render

    job = """
job J {
  model = Tiny, placement = S, gpus = 4
  parallel { tp = 1, pp = 4, dp = 1, schedule = interleaved%s }
  batch { global_batch = %d, micro = 1 }
}
"""

    def load(v, gb):
        return astral_dsl.loads(TINY + job % (v, gb), name="job.astral", root=REPO)

    # global batch 6, micro 1, dp 1: 6 micro-batches, 6 % 4 = 2: refused by Megatron-LM
    d = load(", virtual_stages = 2", 6)
    diags, _, _ = seer.validate_job(d, d.jobs[0])
    (w,) = [x for x in diags if x.code == "W757"]
    assert not w.is_error and w.message.startswith(
        "job `J`: 6 micro-batches per pipeline, not a multiple of pp = 4")
    assert "W757" in [x.code for x in seer.forecast(d).diagnostics]
    # 8 micro-batches: two groups of 4, as Megatron-LM runs them
    d = load(", virtual_stages = 2", 8)
    assert "W757" not in [x.code for x in seer.validate_job(d, d.jobs[0])[0]]
    # left to the rule with 6: one chunk, and the reason
    fc = seer.forecast(load("", 6))
    assert dict(fc.chosen)["virtual_stages"] == 1
    text = render(fc)
    assert "1f1b (interleaved with 1 virtual stage)" in text
    assert ("virtual_stages = 1: interleaving needs the micro-batches per pipeline (6) to be a "
            "multiple of pp = 4 (Megatron-LM, W757)") in text
    fc = seer.forecast(load("", 8))
    assert dict(fc.chosen)["virtual_stages"] > 1 and "interleaving needs" not in render(fc)


TINY = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
site S { hosts = 2 x HGX8(gpu = H100_SXM, nic = CX7_400G) }
model Tiny { layers = 120, hidden = 256, heads = 4, vocab = 1000, seq = 256, ffn = 1024 }
"""


@pytest.mark.parametrize("pp", [3, 4, 5])
@pytest.mark.parametrize("v", [2, 3])
@pytest.mark.parametrize("micro", ["", "micro = 1"])
def test_check_accepts_only_interleaved_jobs_that_forecast(pp, v, micro):
    """Declared virtual stages with any global batch, the micro-batch declared or left to the
    rule: `check` either refuses the job (E760) or `forecast` runs it (the rule's pick made the
    schedule deadlock, an E000, while check said ok); the rule never picks an order the
    schedule cannot run."""
    from astral_dsl.seer.rule import candidates
    from astral_dsl.seer.schedule import runnable

    refused = 0
    for gb in range(1, 12):
        body = (f"job J {{\n  model = Tiny, placement = S, gpus = {pp}\n"
                f"  parallel {{ tp = 1, pp = {pp}, dp = 1, schedule = interleaved, "
                f"virtual_stages = {v} }}\n  batch {{ global_batch = {gb}, {micro} }}\n}}\n")
        d = astral_dsl.loads(TINY + body, name="job.astral", root=REPO)
        diags, spec, _ = seer.validate_job(d, d.jobs[0])
        errors = [x.code for x in diags if x.is_error]
        for c in candidates(spec):
            m = c.global_batch // (c.micro * c.parallel.dp)
            assert runnable(pp, v, m, "interleaved"), (gb, c.micro)
        if errors:
            assert errors == ["E760"], (gb, errors)
            refused += 1
            with pytest.raises(seer.ForecastError):
                seer.forecast(d)
            continue
        fc = seer.forecast(d)
        assert fc.iteration_time > 0
        # forecast, but Megatron-LM would refuse it unless some micro-batch count it may take is
        # a multiple of pp (W757); the rule and `astral search` never choose those
        counts = {c.run_microbatches for c in candidates(spec)}
        assert ("W757" in [x.code for x in diags]) == all(m % pp for m in counts), (gb, counts)
    def micros(gb):       # the rule's: powers of two dividing the batch (budget.py)
        return [1] if micro else [b for b in (1, 2, 4, 8) if gb % b == 0]

    assert refused == sum(1 for gb in range(1, 12)
                          if not any(runnable(pp, v, gb // b, "interleaved") for b in micros(gb)))


# ---- the peak a job's GEMMs run at: its precision's, never another's (docs/seer.md) ------------
def test_a_gemm_runs_at_its_own_precisions_peak_or_the_job_is_e758():
    from astral_dsl.seer import validate_jobs

    def g(*flops):
        return GpuSpec("G", flops, 80e9, 3.35e12, 450e9, sms=132, arch="hopper")

    # bf16 and fp16 are one tensor-core rate (H100: 989 TFLOP/s both): either stands in
    assert g(("fp16", 989e12)).peak("bf16") == 989e12
    assert g(("bf16", 989e12)).peak("fp16") == 989e12
    assert g(("bf16", 989e12), ("fp8", 1979e12)).peak("fp8") == 1979e12
    # no other precision does: the fp8 or fp32 peak is not a bf16 one (was max(): 1,979 TF)
    for only in (("fp8", 1979e12), ("fp32", 67e12)):
        assert not g(only).has_peak("bf16")
        with pytest.raises(ValueError):
            g(only).peak("bf16")
    assert not g(("bf16", 989e12)).has_peak("fp32")
    with pytest.raises(ValueError):       # an fp8 job's other GEMMs run at the 16-bit peak
        Costs(g(("fp8", 1979e12)), "fp8")
    # through the language: E758 naming the field to declare
    text = (REPO / "tests/bad/jobs/gpu_fp8_peak_only.astral").read_text(encoding="utf-8")
    d = astral_dsl.loads(text, name="fp8only.astral", root=REPO)
    errors = [x for x in validate_jobs(d) if x.code == "E758"]
    assert len(errors) == 1 and "`flops_bf16` or `flops_fp16`" in errors[0].message
    assert "declare `flops_bf16` on `G`" in errors[0].hint
    # a GPU of no declared generation: Ampere's efficiency, and W752 says so
    bare = text.replace("flops_fp8 = 1979", "flops_bf16 = 989").replace(
        ", architecture = hopper", "")
    fc = seer.forecast(astral_dsl.loads(bare, name="bare.astral", root=REPO))
    assert any(x.code == "W752" and "`architecture`" in x.message for x in fc.diagnostics)


# ---- NVLink per GPU: the lesser of the GPU's and its host's (docs/language.md, `host`) ---------
NVLINK = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Llama3_8B }
host Own { gpus = 8 x H100_SXM, nics = 8 x CX7_400G%s }
host Std = HGX8(gpu = H100_SXM, nic = CX7_400G)
site S { hosts = 1 x %s }
job j {
  model = Llama3_8B, placement = S, gpus = 8, recompute = selective
  parallel { tp = 8, pp = 1, dp = 1, sp = true }
  batch { global_batch = 8, micro = 1, seq = 8192 }
}
scenario host_nv { set S.hosts.nvlink_bandwidth = 100 GB/s }
scenario gpu_nv { set S.hosts.gpus.nvlink_bandwidth = 100 GB/s }
"""


def test_the_nvlink_bandwidth_is_the_lesser_of_the_gpus_and_the_hosts():
    def link(host_field, host="Own"):
        d = design_text(NVLINK % (host_field, host))
        _, _, cluster = seer.validate_job(d, d.jobs[0])
        return cluster.gpu.nvlink_bw

    # H100 SXM: 450 GB/s each way; the host's value counts where it is lower (it was ignored)
    assert link("") == 450e9
    assert link(", nvlink_bandwidth = 100 GB/s") == 100e9
    assert link(", nvlink_bandwidth = 900 GB/s") == 450e9       # the GPU's links bound it
    # a what-if on either one lowers it: stdlib HGX8 states its GPU's value on the host
    ws = astral_dsl.compiles(NVLINK % ("", "Std"), name="nv.astral", root=REPO)
    base = seer.forecast(ws.design).iteration_time
    times = [astral_dsl.forecast(ws, scenario=s).detail.iteration_time
             for s in ("host_nv", "gpu_nv")]
    assert times[0] == times[1] > 1.05 * base
    assert times[0] == pytest.approx(seer.forecast(design_text(
        NVLINK % (", nvlink_bandwidth = 100 GB/s", "Own"))).iteration_time, rel=1e-12)


def design_text(text: str):
    d = astral_dsl.loads(text, name="nv.astral", root=REPO)
    assert d.valid, [(x.code, x.message) for x in d.diagnostics]
    return d


def test_a_power_cap_what_if_caps_the_clocks():
    """`set ....gpus.power = 500 W` on an H100 SXM (700 W, no `flops_power`: its peaks are quoted
    at the declared 700 W) is a cap: clock (500 / 700)^(1 / power_exponent) (docs/seer.md,
    "Compute costs"); it changed nothing when flops_power defaulted to the set power."""
    from astral_dsl.seer.calibration import shipped

    text = NVLINK % ("", "Own") + "scenario cap { set S.hosts.gpus.power = 500 W }\n" \
        "scenario quoted { set S.hosts.gpus.flops_power = 1000 W }\n"
    ws = astral_dsl.compiles(text, name="cap.astral", root=REPO)
    base = seer.forecast(ws.design)
    cap = astral_dsl.forecast(ws, scenario="cap").detail
    costs = cap.lowering.c
    assert (costs.gpu.power, costs.gpu.flops_power) == (500.0, 700.0)
    assert costs.clock == pytest.approx((500 / 700) ** (1 / shipped().power_exponent), rel=1e-12)
    assert base.lowering.c.clock == 1.0 and cap.iteration_time > 1.05 * base.iteration_time
    # the quote is set, the power stays the declared 700 W: capped at 700 of 1,000 W
    quoted = astral_dsl.forecast(ws, scenario="quoted").detail.lowering.c
    assert (quoted.gpu.power, quoted.gpu.flops_power) == (700.0, 1000.0)


def test_a_scenario_sets_an_enumeration_bare_as_the_job_body_does():
    """`set j.attention = unfused` as `attention = unfused` in the job (it was E200 unknown
    name); a keyword that reads as a quantity too (`1f1b`). Where a part of the file has that
    name, the bare word is still the word (docs/language.md 5.3): it was E303, "not a scenario
    `unfused`"."""
    text = NVLINK % ("", "Own") + """
scenario bare { set j.attention = unfused }
scenario quoted { set j.attention = "unfused" }
scenario sched { set j.parallel.schedule = 1f1b }
"""
    ws = astral_dsl.compiles(text, name="enum.astral", root=REPO)
    assert ws.design.valid, [(x.code, x.message) for x in ws.design.diagnostics]
    bare, quoted = (astral_dsl.forecast(ws, scenario=s).detail for s in ("bare", "quoted"))
    assert bare.job.attention == quoted.job.attention == "unfused"
    assert bare.iteration_time == quoted.iteration_time
    assert seer.forecast(ws.design).job.attention == "flash"
    assert astral_dsl.forecast(ws, scenario="sched").detail.job.parallel.schedule == "1f1b"
    shadowed = astral_dsl.loads(NVLINK % ("", "Own") +
                                "scenario unfused { set j.attention = unfused }\n",
                                name="enum.astral", root=REPO)
    # nothing but HGX8's assumed liquid share, which the design keeps (W216)
    assert shadowed.valid and [x.code for x in shadowed.diagnostics] == ["W216"], \
        [(x.code, x.message) for x in shadowed.diagnostics]
    ws = astral_dsl.compiles(NVLINK % ("", "Own") + "scenario unfused { set j.attention = "
                             "unfused }\n", name="enum.astral", root=REPO)
    assert astral_dsl.forecast(ws, scenario="unfused").detail.job.attention == "unfused"


def test_a_layout_states_its_virtual_stages_as_megatron_derives_them():
    """A layout of pp x k chunks without `virtual_stages` runs k of them, interleaved, as
    Megatron-Core 0.16.0 derives the virtual pipeline size from pipeline_model_parallel_layout
    (transformer_config.py): the forecast is the one with `virtual_stages = k` stated."""
    layout = ", layout = [10, 10, 10, 10, 10, 10, 10, 10]"
    derived = design(BASE % ("", layout))
    stated = design(BASE % ("", layout + ", virtual_stages = 2"))
    spec = job_spec(derived.jobs[0], Resolver(derived)(derived.jobs[0].field("model")))
    assert (spec.parallel.v, spec.parallel.schedule) == (2, "interleaved")
    a, b = seer.forecast(derived), seer.forecast(stated)
    assert a.iteration_time == b.iteration_time and dict(a.chosen).get("virtual_stages") is None
    # a layout pp does not divide still says how many counts to list
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(design(BASE % ("", ", layout = [27, 27, 26]")))
    assert [d.code for d in exc.value.diagnostics] == ["E752"]
