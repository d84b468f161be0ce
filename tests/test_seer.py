"""Seer: lowering, FLOPs, the schedule, traces, scenarios, the CLI (docs/seer.md)."""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, List

from attrs import evolve as replace
import msgspec
import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.outputs.forecast import trace
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.pipeline import codes, decode, order
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.timeline import count
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.astral"))
A100 = GpuSpec("A100", (("bf16", 312e12),), 80e9, 2039e9, 300e9)
H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 300e9, (25e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
GPT3 = ModelSpec("GPT3_175B", 96, 12288, 96, 96, 49152, 51200, 2048, "gelu")
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")
MIXTRAL = ModelSpec("Mixtral", 32, 4096, 32, 8, 14336, 32000, 4096, "swiglu", experts=8, top_k=2,
                    moe_ffn=14336)


def gpt3_job(tp=8, pp=8, dp=16, b=1, B=1536, rec="full", sp=False, v=1, **kw):
    par = ParallelSpec(tp=tp, pp=pp, dp=dp, sp=sp, v=v,
                       schedule="interleaved" if v > 1 else "1f1b")
    return JobSpec("gpt3", GPT3, par, B, b, 2048, rec, "bf16", **kw)


def run(job, gpu=A100, net=NET):
    return seer.run(job, gpu, net)


# ---- lowering --------------------------------------------------------------------------------
def _ops(job, phase="F", stage=1, chunk=0):
    low = Lowering(job, Costs(A100, job.dtype), NET)
    return low, low.template(stage, chunk, phase).ops


def test_forward_layer_operators():
    job = gpt3_job(pp=96, sp=True, rec="selective", attention="unfused")
    _, ops = _ops(job)                          # stage 1 holds one layer
    names = [o.name for o in ops]
    assert names.count("qkv") == names.count("out proj") == 1
    assert names.count("fc1") == names.count("fc2") == 1
    assert names.count("attn scores") == names.count("attn context") == 1
    assert sum(o.cat == "norm" for o in ops) == 2
    tp = [o for o in ops if o.stream == "tp"]
    assert sorted(o.name.split()[-1] for o in tp) == ["all-gather"] * 2 + ["reduce-scatter"] * 2
    gemm = [o for o in ops if o.cat == "gemm"]
    assert len(gemm) == 4


def test_backward_layer_operators_and_recompute():
    full = gpt3_job(pp=96, rec="full")
    _, ops = _ops(full, "B")
    assert sum(o.name.endswith("dgrad") for o in ops if o.cat == "gemm") == 4
    assert sum(o.name.endswith("wgrad") for o in ops if o.cat == "gemm") == 4
    assert sum(o.cat == "recompute" and o.flops > 0 for o in ops) == 4 + 1  # 4 GEMMs + flash
    none = gpt3_job(pp=96, rec="none")
    _, ops = _ops(none, "B")
    assert not any(o.cat == "recompute" for o in ops)
    # without SP the column-parallel input gradients are all-reduced, overlapped with wgrad
    ar = [o for o in ops if o.stream == "tp"]
    assert len(ar) == 2 and all("all-reduce" in o.name for o in ar)
    wgrad = next(o for o in ops if o.name == "qkv wgrad")
    red = next(o for o in ops if o.name == "qkv grad all-reduce")
    assert red.start < wgrad.end and red.end > wgrad.start      # they overlap


def test_moe_layer_has_router_experts_and_all_to_all():
    par = ParallelSpec(tp=2, pp=1, dp=8, ep=8, sp=True)
    job = JobSpec("mix", MIXTRAL, par, 64, 1, 4096, "selective", "bf16")
    low = Lowering(job, Costs(H100, "bf16"), NET)
    ops = low.template(0, 0, "F").ops
    names = [o.name for o in ops]
    assert names.count("router") == 32
    assert sum(o.stream == "ep" for o in ops) == 2 * 32
    assert names.count("expert fc1") == 32
    bwd = low.template(0, 0, "B").ops
    assert sum(o.stream == "ep" for o in bwd) == 2 * 32


def test_embedding_and_head_on_first_and_last_stage():
    job = gpt3_job(pp=8)
    low = Lowering(job, Costs(A100, "bf16"), NET)
    first = [o.name for o in low.template(0, 0, "F").ops]
    last = [o.name for o in low.template(7, 0, "F").ops]
    middle = [o.name for o in low.template(3, 0, "F").ops]
    assert "embedding" in first and "logits" not in first
    assert "logits" in last and "cross entropy" in last and "embedding" not in last
    assert "embedding" not in middle and "logits" not in middle


def test_uneven_stages_and_interleaving():
    par = ParallelSpec(tp=8, pp=4, dp=1, stages=(7, 9, 9, 7))
    job = JobSpec("u", LLAMA_8B, par, 8, 1, 8192, "selective", "bf16")
    low = Lowering(job, Costs(H100, "bf16"), NET)
    assert [low.chunks[i][0][1] for i in range(4)] == [7, 9, 9, 7]
    inter = gpt3_job(pp=8, v=3)
    low = Lowering(inter, Costs(A100, "bf16"), NET)
    assert sum(n for stage in low.chunks for _, n in stage) == 96
    assert low.chunks[0][1][0] == 8 * 4          # chunk 1 of stage 0 follows stage 7's chunk 0


def test_flops_match_seer_md_formulas():
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200
    job = gpt3_job(rec="full")
    assert seer.model_flops(job) == pytest.approx(
        72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12)
    assert seer.hardware_flops(job) == pytest.approx(
        96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h)), rel=1e-12)


def test_lowered_flops_add_up_to_the_formula():
    """Sum of every block's operator FLOPs x ranks = the iteration's hardware FLOPs."""
    job = gpt3_job(dp=2, B=32, rec="full", attention="unfused")
    fc = run(job)
    per_rank = sum(fc.lowering.template(i, b.chunk, b.phase).flops
                   for i, r in enumerate(fc.runs) for b in r.blocks)
    p = job.parallel
    assert per_rank * p.tp * p.dp == pytest.approx(seer.hardware_flops(job), rel=1e-9)


# ---- the schedule ------------------------------------------------------------------------------
@pytest.mark.parametrize("p,v,m", [(4, 1, 8), (4, 2, 8), (8, 3, 16), (4, 1, 2), (2, 4, 5)])
def test_orders_run_every_block_once(p, v, m):
    for i in range(p):
        seq = order(p, v, m, i, "interleaved" if v > 1 else "1f1b")
        assert len(seq) == 2 * m * v and len(set(seq)) == 2 * m * v
        fast = codes(p, v, m, i, "interleaved" if v > 1 else "1f1b")
        assert [decode(x, v, m) for x in fast] == seq


def test_bubble_comes_from_the_schedule_not_a_formula():
    """The idle time of 1F1B matches (p-1)/m of the compute for balanced stages, and the
    interleaved schedule shrinks it."""
    job = gpt3_job(pp=8, dp=1, B=64)
    plain = run(job)
    inter = run(replace(job, parallel=replace(job.parallel, v=3, schedule="interleaved")))
    assert inter.breakdown["bubble"] < 0.6 * plain.breakdown["bubble"]
    ratio = plain.breakdown["bubble"] / plain.breakdown["compute"]
    assert 0.5 * 7 / 64 < ratio < 2.0 * 7 / 64


def test_breakdown_adds_up():
    for job in (gpt3_job(), gpt3_job(v=2, sp=True, rec="selective"),
                gpt3_job(pp=1, dp=128, B=1024, b=2)):
        fc = run(job)
        assert sum(fc.breakdown.values()) == pytest.approx(fc.iteration_time, rel=1e-9)
        assert 0 < fc.mfu <= fc.hfu < 1


def test_zero_and_fsdp():
    base = gpt3_job(pp=8, dp=16)
    z1 = run(replace(base, parallel=replace(base.parallel, zero=1)))
    z0 = run(base)
    z3 = run(replace(base, parallel=replace(base.parallel, zero=3)))
    assert z1.memory.optimizer < z0.memory.optimizer / 8
    params = z0.lowering.stage_params(z0.memory.stage)
    # sharded over 16 ranks, plus the layer in use and the prefetched one gathered (12 per stage)
    assert z3.memory.weights == pytest.approx(2 * params / 16 + 2 * 2 * params / 12)
    ops = z3.lowering.template(1, 0, "B").ops
    assert any(o.stream == "dp" and "all-gather" in o.name for o in ops)
    assert any(o.stream == "dp" and "reduce-scatter" in o.name for o in ops)


def test_context_parallel_ring():
    """Transformer Engine's P2P ring (context_parallel.py, AttnFuncWithCPAndKVP2P): cp steps a
    layer, step i's kernel on the block step i - 1 received while block i + 1 travels."""
    par = ParallelSpec(tp=8, pp=1, dp=2, cp=4, sp=True)
    job = JobSpec("cp", LLAMA_8B, par, 8, 1, 32768, "selective", "bf16")
    fc = run(job, H100)
    ops = fc.lowering.template(0, 0, "F").ops
    assert sum(o.stream == "cp" for o in ops) == 32 * 3          # cp - 1 transfers a layer
    flash = [i for i, o in enumerate(ops) if o.name == "flash attention"]
    ring = [i for i, o in enumerate(ops) if o.stream == "cp"]
    assert len(flash) == 32 * 4
    # each step a quarter of the layer's FLOPs: 2 (QK and PV) x 2 x 4 heads (32 / TP 8) x 8192
    # query rows (32768 / CP 4) x 128 x the 16384 keys a causal query sees on average, / 4
    assert all(ops[i].flops == 2 * 2 * 4 * 8192 * 128 * 16384 / 4 for i in flash)
    for k in range(3):       # the first layer: step k + 1 waits for transfer k, which starts
        assert ring[k] in ops[flash[k + 1]].deps           # with step k (after its predecessor)
        assert ring[k] not in ops[flash[k]].deps
        assert ops[ring[k]].deps == ops[flash[k]].deps[:1]
    assert fc.iteration_time > 0


def test_context_parallel_ring_hidden_under_the_attention():
    """On NVLink (CP 2 inside one 8-GPU host) a step's transfer (a 2 x 4096-token block of 2
    KV heads, 4 MB) is far shorter than the step's kernel: the second step follows the first
    at once (the whole ring had been waited for before the attention)."""
    par = ParallelSpec(tp=4, pp=1, dp=1, cp=2, sp=True)
    job = JobSpec("cp", LLAMA_8B, par, 1, 1, 8192, "none", "bf16")
    t = run(job, H100).lowering.template(0, 0, "F")
    ring = [o for o in t.ops if o.stream == "cp"]
    kernel = [o for o in t.ops if o.name == "flash attention"]
    assert len(ring) == 32 and len(kernel) == 64 and ring[0].dur < kernel[0].dur
    for a, b in zip(kernel[::2], kernel[1::2]):     # a layer's second step waits for no ring
        assert b.start == a.end


def test_doubling_dp_does_not_double_forecast_time():
    """The cost of a forecast grows with operators per rank, not with GPUs: doubling DP (and
    the batch, so each pipeline runs as many micro-batches) simulates the same stages and emits
    the same events. Counted, not timed (benchmarks/bench_seer.py times it)."""
    def work(dp):
        fc = run(gpt3_job(dp=dp, B=96 * dp))
        return len(fc.runs), len(list(fc.timeline(level="layer")))
    assert work(16) == work(32)


# ---- examples, traces, scenarios ------------------------------------------------------------------
def _example_forecasts():
    out = []
    for path in EXAMPLES:
        design = astral_dsl.load(path)
        for job in design.jobs:
            out.append(pytest.param(path, job.template, id=f"{path.stem}:{job.template}"))
    return out


def forecast_example(path, job):
    design = astral_dsl.load(path)
    try:
        return seer.forecast(design, job=job)
    except seer.ForecastError as exc:
        codes = {d.code for d in exc.diagnostics if d.is_error}
        assert codes == {"E757"}, [d.message for d in exc.diagnostics]
        # the declared job does not fit: forecast it as it could run (recompute, ZeRO-1)
        return seer.forecast(design, job=job, recompute="full", zero=1)


class _Event(msgspec.Struct, gc=False):
    """A trace event as the invariants below read it: a field the event lacks is UNSET (a
    dict's missing key), which fails each assertion that reads it as a missing key did; the
    fields no assertion reads are skipped by the decoder."""
    ph: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    cat: Any = msgspec.UNSET
    pid: Any = msgspec.UNSET
    tid: Any = msgspec.UNSET
    ts: Any = msgspec.UNSET
    dur: Any = msgspec.UNSET
    args: Any = msgspec.UNSET


class _Trace(msgspec.Struct):
    traceEvents: List[_Event]


@pytest.mark.parametrize("path,job", _example_forecasts())
def test_trace_invariants_on_example_jobs(path, job, tmp_path):
    fc = forecast_example(path, job)
    out = tmp_path / "trace.json"
    trace.write_trace(fc, str(out))
    # msgspec reads the tens of megabytes of the larger jobs' traces in a third of json's time,
    # and into structs of the fields read here (not a dict per event, nor tracked by the
    # garbage collector) in half of that again: 1.3 -> 0.6 s of CPU for the largest
    doc = msgspec.json.decode(out.read_bytes(), type=_Trace)
    assert all(e.ph is not msgspec.UNSET and e.name is not msgspec.UNSET
               for e in doc.traceEvents)
    events = [e for e in doc.traceEvents if e.ph == "X"]
    assert events
    threads = defaultdict(list)
    for e in events:
        assert e.name and e.cat and isinstance(e.args, dict) and e.dur >= 0, e
        assert e.pid is not msgspec.UNSET and e.tid is not msgspec.UNSET, e
        threads[(e.pid, e.tid)].append(e)
    for key, evs in threads.items():
        evs.sort(key=lambda e: e.ts)
        for a, b in zip(evs, evs[1:]):
            assert b.ts >= a.ts + a.dur - 1e-6, (key, a, b)
    last = max(e.ts + e.dur for e in events)
    assert last == pytest.approx(fc.iteration_time * 1e6, abs=0.01)
    names = {e.args["name"] for e in doc.traceEvents if e.name == "process_name"}
    assert len(names) == fc.job.parallel.pp


def test_timeline_as_data_window_and_levels():
    fc = run(gpt3_job(pp=4, dp=1, B=16))
    ops = list(fc.timeline())
    window = list(fc.timeline(window=(0, 2)))
    layers = list(fc.timeline(level="layer"))
    blocks = list(fc.timeline(level="block"))
    assert len(blocks) < len(layers) < len(ops) and len(window) < len(ops)
    assert {e.stream for e in ops} >= {"compute", "tp", "pp"}
    assert max(e.end for e in ops) == pytest.approx(fc.iteration_time)


@pytest.mark.parametrize("level,window", [(None, None), ("op", (1, 3)), ("layer", None),
                                          ("block", None), ("block", (0, 2))])
def test_trace_file_is_the_trace_document_as_json(level, window, tmp_path):
    """write_trace makes each event's text from the timeline's columns: the file must be the
    bytes of chrome_trace's document (one dict per Event) dumped as compact JSON."""
    fc = run(gpt3_job(pp=4, dp=2, B=16, v=3, sp=True, rec="selective"))
    out = tmp_path / "trace.json"
    note = trace.write_trace(fc, str(out), level, window)
    level, window, _ = trace.choose(fc, level, window)
    doc = trace.chrome_trace(fc, level, window, note)
    assert out.read_text(encoding="utf-8") == json.dumps(doc, separators=(",", ":"))
    tl = fc.timeline(window=window, level=level)
    assert len(tl) == sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
    assert len(tl) <= count(fc, level, window)         # (count: a bound, not visiting blocks)


def test_timeline_rows_are_their_templates_shifted_to_each_block():
    fc = run(gpt3_job(pp=4, dp=1, B=8, v=2))
    tl = fc.timeline()
    events = list(tl)
    run0 = fc.runs[1]
    k = 3                                      # stage 1's fourth block
    x = run0.codes[k]
    vm = run0.v * run0.m
    phase, chunk, mb = ("B" if x >= vm else "F"), (x % vm) // run0.m, x % run0.m
    ops = [o for o in fc.lowering.template(1, chunk, phase).ops if o.dur > 0]
    stage1 = [e for e in events if e.stage == 1]
    per_block = len(ops)
    block = stage1[k * per_block:(k + 1) * per_block]
    first = fc.lowering.chunks[1][chunk][0]
    for e, o in zip(block, ops):
        assert (e.name, e.stream, e.cat) == (o.name, o.stream, o.cat)
        assert (e.start, e.end) == (run0.start[k] + o.start, run0.start[k] + o.end)
        assert dict(e.args)["micro_batch"] == mb
        assert dict(e.args)["layer"] == (o.layer + first if o.layer >= 0 else o.layer)


def test_huge_trace_is_windowed():
    par = ParallelSpec(tp=8, pp=64, dp=1)
    m = ModelSpec("1T", 128, 25600, 160, 160, 102400, 51200, 2048, "gelu")
    fc = run(JobSpec("1t", m, par, 512, 1, 2048, "full", "bf16"))
    level, window, note = trace.choose(fc)
    assert note and (window is not None or level != "op")
    assert count(fc, level, window) <= trace.MAX_EVENTS


SCENARIO_DESIGN = """
import stdlib.hardware { H100_SXM, CX7_2x200G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack R { hosts = 4 x Node }
pod P { racks = 16 x R }
fabric F {
  rails = 8, planes = 2
  tier tor { switch = Switch51T, scope = pod, per = [rail, plane], down = 128 x 200 Gb/s, up = 64 x 400 Gb/s }
  tier core { switch = Switch51T, scope = site, down = 128 x 400 Gb/s }
}
site S { pods = 1 x P, fabric = F }
job dp_heavy {
  model = Llama3_8B, placement = S, gpus = 512, recompute = full
  parallel { tp = 1, pp = 1, dp = 512, zero = 2 }
  batch { global_batch = 512, micro = 1, seq = 8192 }
}
job tp_only {
  model = Llama3_8B, placement = S, gpus = 8, recompute = selective
  parallel { tp = 8, pp = 1, dp = 1, sp = true }
  batch { global_batch = 8, micro = 1, seq = 8192 }
}
scenario plane_b_down { fail S.fabric.plane[B] }
"""


def test_plane_down_slows_dp_heavy_jobs():
    ws = astral_dsl.compiles(SCENARIO_DESIGN, name="scen.astral", root=REPO)
    design = ws.design
    assert design.valid, [d.message for d in design.diagnostics]
    base = seer.forecast(design, job="dp_heavy")
    down = astral_dsl.forecast(ws, job="dp_heavy", scenario="plane_b_down").detail
    assert down.iteration_time > base.iteration_time * 1.02
    assert down.breakdown["dp_comm"] > 1.5 * base.breakdown["dp_comm"]
    assert any("plane[B]" in n and n.startswith("dp: ") for n in down.notes)
    # only the groups the job communicates over: a dense bf16 job has no expert-data-parallel
    # ("edp") nor fp8 amax reduction, though both groups span the same hosts as its DP group
    kinds = {n.split(":")[0] for n in down.notes if not n.startswith("scenario")}
    assert kinds == {"dp"}, down.notes
    fp8 = astral_dsl.compiles(SCENARIO_DESIGN.replace("recompute = full",
                                                      "recompute = full, dtype = fp8"),
                              name="scen8.astral", root=REPO)
    notes = astral_dsl.forecast(fp8, job="dp_heavy", scenario="plane_b_down").detail.notes
    assert {n.split(":")[0] for n in notes if not n.startswith("scenario")} == {"dp", "amax"}
    # a job inside one host does not notice
    a = seer.forecast(design, job="tp_only")
    b = astral_dsl.forecast(ws, job="tp_only", scenario="plane_b_down").detail
    assert b.iteration_time == pytest.approx(a.iteration_time)


def test_operator_table_overrides_a_gemm(tmp_path):
    job = gpt3_job(pp=8, dp=1, B=8)
    low = Lowering(job, Costs(A100, "bf16"), NET)
    qkv = next(o for o in low.template(1, 0, "F").ops if o.name == "qkv")
    csv = tmp_path / "ops.csv"
    csv.write_text(f"operator,shape,dtype,time_ms\nqkv,{qkv.shape},bf16,50\n")
    table = seer.OperatorTable.read(str(csv))
    slow = seer.run(job, A100, NET, table)
    assert slow.iteration_time > run(job).iteration_time + 8 * 12 * 0.04
    assert table.matched == {("qkv", qkv.shape, "bf16")}


def test_an_operator_table_says_what_it_priced(tmp_path):
    """The forecast notes how many of the table's rows priced an operator; a table none of
    whose rows matches (a misspelt operator, a shape of another job) is W751, not silence."""
    design = astral_dsl.load(REPO / "examples/single_pod.astral")
    csv = tmp_path / "ops.csv"
    csv.write_text("operator,shape,dtype,time_ms\nfc1,8192x7168x8192,bf16,2\nfc_1,1x1x1,bf16,1\n")
    fc = seer.forecast(design, operator_table=str(csv))
    assert (f"operator table {csv}: 1 of its 2 rows priced an operator of the forecast; "
            "priced nothing: line 3 (`fc_1`, shape `1x1x1`, bf16)") in fc.notes
    assert "W751" not in [d.code for d in fc.diagnostics]
    csv.write_text("operator,shape,dtype,time_ms\nfc_1,8192x7168x8192,bf16,2\n")
    fc = seer.forecast(design, operator_table=str(csv))
    w = [d for d in fc.diagnostics if d.code == "W751"]
    assert len(w) == 1 and "no row of the operator table" in w[0].message
    assert fc.iteration_time == pytest.approx(seer.forecast(design).iteration_time)


# ---- the command line --------------------------------------------------------------------------------
def _cli(*args):
    return _astral_cli(*args, cwd=REPO)


def test_cli_forecast_json_and_trace(tmp_path):
    trace = tmp_path / "t.json"
    proc = _cli("forecast", "examples/single_pod.astral", "--format", "json", "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    fc = doc                      # the forecast's fields sit beside version/valid/diagnostics
    for key in ("job", "gpus", "parallelism", "iteration_time_s", "tokens_per_s", "mfu", "hfu",
                "breakdown_s"):
        assert key in fc
    assert doc["valid"] is True and "diagnostics" in doc
    assert sum(fc["breakdown_s"].values()) == pytest.approx(fc["iteration_time_s"], rel=1e-6)
    assert json.loads(trace.read_text())["traceEvents"]


def test_cli_forecast_json_of_a_job_the_rule_completes():
    """The reference job leaves its virtual stages to Seer's rule: the JSON says what the rule
    chose (`chosen_by_rule`) beside what sizing chose (`chosen`, as in every command's JSON);
    the two once collided (an internal error, E000)."""
    proc = _cli("forecast", "examples/astral.astral", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["chosen_by_rule"] == {"virtual_stages": doc["parallelism"]["virtual_stages"]}
    assert doc["chosen"] == []
    assert "W753" in [d["code"] for d in doc["diagnostics"]]


def test_cli_forecast_table_and_errors():
    proc = _cli("forecast", "examples/single_pod.astral", "--color", "never")
    assert proc.returncode == 0 and "iteration time" in proc.stdout and "MFU" in proc.stdout
    proc = _cli("forecast", "examples/single_pod.astral", "--job", "nope")
    assert proc.returncode == 1 and proc.stdout.startswith("error[E221]: --job nope: no such")
    proc = _cli("forecast", "tests/bad/jobs/tp_heads.astral", "--color", "never")
    assert proc.returncode == 1 and "[E750]" in proc.stdout


def test_cli_plot(tmp_path):
    out = tmp_path / "gantt.png"
    proc = _cli("forecast", "examples/single_pod.astral", "--plot", str(out), "--window", "0:2")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_has_no_empty_lanes(tmp_path):
    fc = run(gpt3_job(pp=4, dp=1, B=8))
    doc = trace.chrome_trace(fc)
    threads = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["name"] == "thread_name"}
    used = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "X"}
    assert threads == used                         # no CP, EP or DP lane: nothing runs there
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert "CP comm" not in names and "EP comm" not in names and "DP comm" not in names


def test_report_names_the_stage_of_every_figure():
    from astral_dsl.outputs.forecast import report

    fc = run(gpt3_job(pp=8, dp=2, B=32))
    text = report.render(fc)
    assert f"on stage {fc.memory.stage}, the fullest" in text
    assert f"stage {fc.stage} (rank " in text and "the busiest" in text
    if fc.stage != fc.memory.stage:
        assert f"on stage {fc.stage}, the breakdown's" in text
    doc = report.to_json(fc)
    assert doc["breakdown_stage"] == fc.stage and doc["memory_stage"] == fc.memory.stage


# ---- the plot, readable at 64 stages ---------------------------------------------------------------------------
def test_plot_lane_keeps_forward_blocks_between_backward_ones():
    from astral_dsl.outputs.forecast.plot import _runs

    # blocks narrower than a pixel (tol = 1): pixel 0 holds 0.7 B + 0.3 F -> B, pixel 1 0.5 B +
    # 0.3 F -> B; then a forward block of a whole pixel between idle time and a backward block:
    # each pixel takes the category that fills most of it, so it is not hidden
    bars = [(0.0, 0.6, "backward"), (0.6, 0.3, "forward"), (0.9, 0.6, "backward"),
            (1.5, 0.3, "forward"), (3.0, 1.0, "forward"), (4.0, 2.0, "backward")]
    runs = _runs(bars, 1.0)
    assert runs["forward"] == [(3.0, 1.0)]
    assert runs["backward"] == [(0.0, 2.0), (4.0, 2.0)]
    # a lane less than half busy in a pixel leaves it empty (the idle shading shows)
    assert _runs([(0.0, 0.4, "gemm")], 1.0) == {}


def test_plot_names_every_stage_at_64_stages():
    from astral_dsl.outputs.forecast.plot import figure
    import matplotlib.pyplot as plt

    m = ModelSpec("M", 64, 1024, 16, 16, 4096, 32000, 2048, "gelu")
    job = JobSpec("m", m, ParallelSpec(tp=1, pp=64, dp=1), 64, 1, 2048, "full", "bf16")
    fc = run(job)
    fig = figure(fc)
    try:
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert len(labels) == 64 and all(t.get_visible() for t in fig.axes[0].get_yticklabels())
        assert labels[fc.stage].startswith(f"stage {fc.stage} (breakdown")
        assert "fullest memory" in labels[fc.memory.stage]
        assert fig.axes[0].get_yticklabels()[0].get_fontsize() >= 4.0
    finally:
        plt.close(fig)


@pytest.mark.parametrize("text,message", [
    ("operator,shape,dtype,time_ms\nfc1,1x1x1,bf16,abc\n", "line 2: time_ms `abc` is not a number"),
    ("operator,shape,dtype,time_ms\nfc1,1x1x1,bf16,inf\n", "line 2: time_ms `inf` is not a finite"),
    ("operator,shape,dtype,time\nfc1,1x1x1,bf16,1\nfc2,1x1x1,bf16,-1\n",
     "line 3: time `-1` is not a finite time >= 0"),
    ("operator,shape\nfc1,1x1x1\n", "line 2: the row has no time, time_ms or time_us"),
    # a time past an hour, a unit slip: 1e308 s made the iteration infinite (a usage error that
    # named no line, "the value of a Quantity is a finite number"), 1e300 s one of 302 digits
    ("operator,shape,dtype,time\ngemm,4096x14336x4096,bf16,1e308\n",
     "line 2: time `1e308` is more than an hour: one operator's measured time (milliseconds go "
     "in time_ms, microseconds in time_us)"),
    ("operator,shape,dtype,time_us\ngemm,4096x14336x4096,bf16,3.7e9\n",
     "line 2: time_us `3.7e9` is more than an hour"),
    (b"\xff\xfe\x00", "not a UTF-8 CSV table"),
    ("fifo", "not a regular file"),
    # a header without `operator` (or `shape`), a dtype no operator has, an empty file: each
    # row priced nothing, and the forecast said only that no row named an operator (W751)
    ("op,shape,dtype,time\nqkv,8192x3072x8192,bf16,0.001\n",
     "line 1: no `operator` column (the header names `op`, `shape`, `dtype`, `time`)"),
    ("operator,dims,time\nqkv,8192x3072x8192,0.001\n", "line 1: no `shape` column"),
    ("operator,shape,dtype,time\nqkv,8192x3072x8192,BF16,0.001\n",
     "line 2: dtype `BF16` is none of the operators' input dtypes (bf16, fp16, fp32, fp8, "
     "fp8_block, mxfp8, nvfp4)"),
    ("", "the table is empty: its first line names the columns"),
])
def test_a_bad_operator_table_is_a_usage_error_with_its_line(tmp_path, text, message):
    path = tmp_path / "ops.csv"
    if text == "fifo":
        os.mkfifo(path)
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    proc = _cli("forecast", "examples/single_pod.astral", "--operator-table", str(path))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stderr
