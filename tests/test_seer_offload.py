"""Activation offloading to host memory (`offload_layers`; docs/seer.md, "Memory" and "The
rule"): what the GPU keeps, what the copies cost over the host link, and when the rule takes it.

Hand computations: a GPT-3 layer of Korthikanti et al. 2022 (s = 2048, b = 1, h = 12288,
a = 96, t = 8, unfused attention: s b h (10 + 24 / t + 5 a s / (h t)) bytes, Table 2) on one
pipeline stage; copies at `host_bandwidth` bytes/s each way."""
from __future__ import annotations

from attrs import evolve as replace
import pytest

import astral_dsl

from astral_dsl.explore.engines import LocalEngine
from astral_dsl.seer import rule
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.forecast import run
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.memory import estimate
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

S, H, A, T = 2048, 12288, 96, 8
GPT3 = ModelSpec("GPT3_175B", 96, H, A, A, 4 * H, 51200, S, "gelu")
PER_LAYER = S * H * (10 + 24 / T + 5 * A * S / (H * T))       # bytes, Table 2
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0),))


def gpu(host_bw: float, memory: float = 80e9, host_memory=None) -> GpuSpec:
    return GpuSpec("G", (("bf16", 989e12),), memory, 3350e9, 450e9, sms=132, arch="hopper",
                   host_bw=host_bw, host_memory=host_memory)


def job(offload, recompute="none", dp=1, micro=1, model=GPT3, zero=1) -> JobSpec:
    par = ParallelSpec(tp=T, pp=1, dp=dp, zero=zero)
    return JobSpec("j", model, par, dp * 4 * micro, micro, S, recompute, "bf16",
                   attention="unfused", offload_layers=offload)


# 24 GPT-3 layers with the distributed optimizer over 8: ~41 GB of model states per GPU and
# 24 x 1.16 GB of activations at micro-batch 2, which 60 GB cannot hold without recomputing or
# offloading
SMALL = replace(GPT3, layers=24)
SMALL_GB = 60e9


def small(offload, recompute="none") -> JobSpec:
    return job(offload, recompute, dp=8, micro=2, model=SMALL, zero=1)


def test_the_gpu_keeps_the_layers_not_offloaded_and_one_in_transit():
    assert layer_activation_bytes(job(0), 0) == pytest.approx(PER_LAYER, rel=1e-12)
    none, some = (estimate(job(k), lambda i: 0.0) for k in (0, 40))
    assert none.activations == pytest.approx(96 * PER_LAYER, rel=1e-12)
    assert none.offloaded == 0.0
    # 56 layers stay, and one offloaded layer is on the GPU while it is copied out or back
    assert some.activations == pytest.approx((96 - 40 + 1) * PER_LAYER, rel=1e-12)
    assert some.offloaded == pytest.approx(40 * PER_LAYER, rel=1e-12)
    assert some.weights == none.weights and some.logits == none.logits


def _blocks(host_bw: float, k: int):
    j = job(k)
    low = Lowering(j, Costs.of(j, gpu(host_bw)), NET)
    return low.template(0, 0, "F"), low.template(0, 0, "B")


def test_copies_run_beside_the_compute_on_a_fast_link():
    plain_f, plain_b = _blocks(1e15, 0)
    fast_f, fast_b = _blocks(1e15, 40)          # a copy takes ~2 ns: nothing to wait for
    assert fast_f.duration == pytest.approx(plain_f.duration, rel=1e-6)
    assert fast_b.duration == pytest.approx(plain_b.duration, rel=1e-6)
    copies = [o for o in fast_f.ops if o.stream == "offload_out"]
    assert len(copies) == 40 and {o.layer for o in copies} == set(range(40))
    assert all(o.nbytes == pytest.approx(PER_LAYER, rel=1e-12) for o in copies)
    reloads = [o for o in fast_b.ops if o.stream == "offload_in"]
    assert len(reloads) == 40


def test_a_slow_link_bounds_the_forward_by_its_copies():
    bw = 1e9                                      # 1 GB/s: each copy far slower than a layer
    fwd, bwd = _blocks(bw, 40)
    copy = PER_LAYER / bw
    # the copies follow one another on their stream: the block ends with the last, which
    # cannot start before the 40th layer's forward ends
    last_layer = max(o.end for o in fwd.ops if o.stream == "compute" and o.layer == 39)
    assert fwd.duration >= 40 * copy
    assert fwd.duration == pytest.approx(max(fwd.duration, last_layer), rel=1e-9)
    assert fwd.exposed["offload_out"] > 0
    # in the backward each offloaded layer waits for its reload
    first_use = min(o.start for o in bwd.ops if o.stream == "compute" and o.layer == 39)
    reload_39 = next(o for o in bwd.ops if o.stream == "offload_in" and o.layer == 39)
    assert first_use >= reload_39.end
    assert bwd.duration >= 40 * copy


def test_the_rule_offloads_the_fewest_layers_that_fit_when_that_is_fastest():
    g = gpu(225e9, memory=SMALL_GB)
    auto = small(None, recompute="auto")
    fc = run(auto, g, NET)
    chosen = dict(fc.chosen)
    assert chosen["recompute"] == "none" and 0 < chosen["offload_layers"] < SMALL.layers
    assert fc.memory.total <= g.memory
    fewer = fc.job.with_(offload_layers=chosen["offload_layers"] - 1)
    low = Lowering(fewer, Costs.of(fewer, g), NET)
    assert estimate(fewer, low.stage_params).total > g.memory
    # the copies hide behind the layers (1.16 GB at 225 GB/s: 5 ms a layer); recomputing
    # fully instead is slower
    assert fc.breakdown["offload"] == 0.0
    full = run(small(0, recompute="full"), g, NET)
    assert full.iteration_time > fc.iteration_time


def test_a_slow_link_is_charged_to_the_offload_in_the_breakdown():
    fast = run(small(12), gpu(225e9, memory=SMALL_GB), NET)
    slow = run(small(12), gpu(20e9, memory=SMALL_GB), NET)
    extra = slow.iteration_time - fast.iteration_time
    assert extra > 0
    assert slow.breakdown["offload"] == pytest.approx(extra, rel=1e-4)
    assert sum(slow.breakdown.values()) == pytest.approx(slow.iteration_time, rel=1e-9)
    for key in ("compute", "tp_comm", "dp_comm"):
        assert slow.breakdown[key] == pytest.approx(fast.breakdown[key], rel=1e-3)


def test_the_rule_does_not_offload_without_a_host_link_or_with_stages():
    auto = small(None, recompute="auto")
    unlinked = run(auto, gpu(0.0, memory=SMALL_GB), NET)
    assert unlinked.job.offload_layers == 0
    assert "offload_layers" not in dict(unlinked.chosen)   # not a choice where it cannot run
    staged = auto.with_(parallel=replace(auto.parallel, pp=2, dp=4))
    fc = run(staged, gpu(225e9, memory=SMALL_GB), NET)
    assert fc.job.offload_layers == 0
    assert "offload_layers" not in dict(fc.chosen)      # not a choice where it cannot run


def test_offloading_is_a_candidate_only_where_it_can_run():
    g = gpu(225e9, memory=SMALL_GB)
    cand = small(0)
    costs = Costs.of(cand, g)
    low = Lowering(cand, costs, NET)
    c = rule.Candidate(cand, low, estimate(cand, low.stage_params), 0.0)
    assert c.memory.total > g.memory
    found = rule.offloading(c.job, g, costs, NET)
    assert found is not None and 0 < found.job.offload_layers < SMALL.layers
    assert found.memory.total <= g.memory
    assert rule.offloading(c.job, gpu(0.0, memory=SMALL_GB), costs, NET) is None
    assert rule.offloading(cand.with_(framework="torchtitan"), g, costs, NET) is None


def test_the_rule_does_not_offload_more_than_the_host_holds():
    """The fewest offloaded layers that fit in the GPU are the least that goes to host memory:
    a host with less than that per GPU rules offloading out, one with exactly that allows it."""
    cand = small(0)
    g = gpu(225e9, memory=SMALL_GB)
    costs = Costs.of(cand, g)
    found = rule.offloading(cand, g, costs, NET)          # the host declares no memory
    need = found.memory.offloaded
    assert need > 0
    assert rule.offloading(cand, gpu(225e9, SMALL_GB, host_memory=need), costs, NET).job \
        == found.job
    for less in (0.99 * need, 0.0):
        assert rule.offloading(cand, gpu(225e9, SMALL_GB, host_memory=less), costs, NET) is None


NVL72_JOB = """
import stdlib.hardware { NVL72 }
import stdlib.models { Llama3_70B }
site S { racks = 1 x NVL72 }
job llama70b {
  model = Llama3_70B, placement = S, gpus = 64, dtype = fp8, fp8_recipe = current
  recompute = auto, grad_dtype = bf16, overlap_grad_reduce = true
  parallel { tp = 1, pp = 1, dp = 64, fsdp = true }
  batch { global_batch = 128, micro = 2, seq = 8192 }
}
"""

# the same job on 8 of the rack's GPUs (a tray pair), the batch scaled with them
NVL8_JOB = NVL72_JOB.replace("gpus = 64", "gpus = 8").replace("dp = 64", "dp = 8") \
    .replace("global_batch = 128", "global_batch = 16")


@pytest.fixture(scope="module")
def nvl8_search(tmp_path_factory):
    """NVL8_JOB's file and `astral search`'s top 3 of it: the two tests below read the same
    search (each ran it: 0.5 s of CPU more)."""
    from astral_dsl.explore import search

    path = tmp_path_factory.mktemp("nvl8") / "nvl8.astral"
    path.write_text(NVL8_JOB, encoding="utf-8")
    return path, search.run(str(path), top=3, engine=LocalEngine(1))


def test_a_gb200_job_on_one_stage_offloads_through_the_language():
    """NeMo's GB200 FP8 layout of Llama 3 70B (one stage, FSDP over 64, micro-batch 2): its
    activations (~2 x 80 x 1.95 GB) do not fit in 186 GiB; the rule offloads the fewest layers
    over NVLink-C2C (stdlib GB200: host_bandwidth 225 GB/s) rather than recomputing, and the
    forecast's JSON says so."""
    from pathlib import Path

    import astral_dsl
    from astral_dsl import seer
    from astral_dsl.outputs.forecast.report import to_json

    d = astral_dsl.loads(NVL72_JOB, name="nvl.astral", root=Path(__file__).resolve().parents[1])
    assert d.valid, [(x.code, x.message) for x in d.diagnostics]
    fc = seer.forecast(d)
    chosen = dict(fc.chosen)
    assert chosen["recompute"] == "none" and 0 < chosen["offload_layers"] < 80
    assert fc.memory.total <= 186 * 2**30 and fc.memory.offloaded > 100e9     # 186 GiB
    doc = to_json(fc)
    assert doc["parallelism"]["offload_layers"] == chosen["offload_layers"]
    assert doc["offloaded_gb"] == pytest.approx(fc.memory.offloaded / 1e9)
    assert "offload" in doc["breakdown_s"]
    # stating the count gives the same forecast as the rule's choice
    stated = seer.forecast(d, recompute="none", offload_layers=chosen["offload_layers"])
    assert stated.iteration_time == fc.iteration_time


def test_search_keeps_a_declared_offload_and_rejects_stages_with_it(tmp_path, nvl8_search):
    """`astral search` keeps a declared count, and rejects layouts with pipeline stages as a
    forecast would reject them (E768). On 8 GPUs (NVL8_JOB): the 64-GPU job searched the
    same rules over 20,784 layouts instead of 2,630, 21 s of CPU instead of 1.5 (2026-12-05)."""
    from astral_dsl.explore import search

    path = tmp_path / "nvl.astral"
    path.write_text(NVL8_JOB.replace("recompute = auto", "recompute = none, offload_layers = 40"),
                    encoding="utf-8")
    result = search.run(str(path), top=3, engine=LocalEngine(1))
    rejected = {r["code"]: r["count"] for r in result.counts.to_json()["rejected"]}
    assert rejected.get("E768", 0) > 0
    assert result.rows and all(r["config"].pp == 1 for r in result.rows)
    assert all(r["offload_layers"] == 40 for r in result.rows)
    _, none = nvl8_search                          # no count: nothing rejected for it
    assert "E768" not in {r["code"] for r in none.counts.to_json()["rejected"]}


TRAY_WITHOUT_MEMORY = """import stdlib.hardware { GB200, Grace, CX7_400G }
host Tray {
  gpus = 4 x GB200, cpus = 2 x Grace, nics = 4 x CX7_400G, power = 5.65 kW, units = 1 U
  nvlink_bandwidth = 900 GB/s, nvlink_domain = rack
}
rack NVL72 { hosts = 18 x Tray }"""


def test_search_offloads_the_fewest_layers_a_layout_needs_to_fit(tmp_path, nvl8_search):
    """Llama 3 70B on 8 GB200s: no one-stage layout fits without recomputing or offloading;
    the search offloads the fewest layers that make each fit (the rule's own choice), forecasts
    it with its copies, and reports the count; the lower bound that pruned it (computed without
    the copies) stays below its forecast. A job that states `offload_layers = 0` gets no
    offloading."""
    from astral_dsl import seer
    from astral_dsl.explore import search
    from astral_dsl.explore.search.bounds import screen_bound
    from astral_dsl.outputs.search import summary
    from astral_dsl.explore.search.work import Setup, State
    from astral_dsl.seer.memory import estimate

    small = NVL8_JOB
    searched, result = nvl8_search
    assert result.rows and all(r["offload_layers"] > 0 for r in result.rows)
    # within the GB200 tray's 960 GB for its 4 GPUs
    assert result.host_memory_gb == 240.0
    assert all(0 < r["offloaded_gb"] <= 240.0 for r in result.rows)
    assert not any("W754" in line for line in summary(result))
    state = State(astral_dsl.load(str(searched)), Setup((), None))
    for row in result.rows:
        c, k = row["config"], row["offload_layers"]
        spec = c.spec(state.space).with_(offload_layers=k)
        low, tail = state.group(c)
        cap = state.cluster.gpu.memory
        assert estimate(spec, low.stage_params).total <= cap
        assert estimate(spec.with_(offload_layers=k - 1), low.stage_params).total > cap
        fc = seer.run(spec, state.cluster.gpu, state.cluster.net)
        assert row["iteration_time_s"] == fc.iteration_time
        bound = screen_bound(c.spec(state.space), state.profile(c, low.groups["tp"]), tail,
                             state.hop(c), dp=state.dp_profile(c, low.groups["dp"]))
        assert 0 < bound <= fc.iteration_time
    # a tray that declares no memory: the search offloads past 240 GB and says it is unchecked
    bare = small.replace("import stdlib.hardware { NVL72 }", TRAY_WITHOUT_MEMORY)
    path = tmp_path / "nvl8.astral"
    path.write_text(bare, encoding="utf-8")
    unchecked = search.run(str(path), top=3, engine=LocalEngine(1))
    assert unchecked.host_memory_gb is None
    assert max(r["offloaded_gb"] for r in unchecked.rows) > 240.0
    assert any("not checked (W754)" in line for line in summary(unchecked))
    path.write_text(small.replace("recompute = auto", "recompute = auto, offload_layers = 0"),
                    encoding="utf-8")
    kept = search.run(str(path), top=3, engine=LocalEngine(1))
    assert kept.rows and all(r["offload_layers"] == 0 for r in kept.rows)
    assert [r["config"] for r in kept.rows] != [r["config"] for r in result.rows]


def test_a_trace_and_a_plot_show_the_copy_streams(tmp_path):
    """An offloading forecast's Chrome trace (every level) and plot draw the copies on threads
    of their own (they crashed with KeyError 'offload' before). 12 layers offloaded, 4
    micro-batches (global 64 / (dp 8 x micro 2)): 48 copies out and 48 back per stage, each
    2 x PER_LAYER bytes (micro-batch 2) at 20 GB/s."""
    import json

    from astral_dsl.outputs.forecast.plot import plot
    from astral_dsl.outputs.forecast.trace import chrome_trace, write_trace

    fc = run(small(12), gpu(20e9, memory=SMALL_GB), NET)
    copy_us = 2 * PER_LAYER / 20e9 * 1e6
    for level in ("op", "layer"):
        doc = chrome_trace(fc, level)
        names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        assert names[6] == "offload to host" and names[7] == "reload from host"
        out = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == 6]
        back = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == 7]
        assert len(out) == len(back) == 48
        assert all(e["name"] == "activation offload" for e in out)
        assert all(e["dur"] == pytest.approx(copy_us, abs=2e-3) for e in out + back)
    assert chrome_trace(fc, "block")["traceEvents"]
    path = tmp_path / "t.json"
    write_trace(fc, str(path), level="op")
    assert json.loads(path.read_text()) == chrome_trace(fc, "op")
    png = tmp_path / "t.png"
    plot(fc, str(png))
    assert png.stat().st_size > 0
