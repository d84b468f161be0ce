"""Recomputing the first N layers of each model chunk whole (`recompute = full` with
`recompute_layers = N`: Megatron-LM's --recompute-method block --recompute-num-layers N): which
layers, their memory, their operators and FLOPs, the rule's choice of the fewest that fit, and
the field's diagnostic. Hand computations in the comments."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl import seer
from astral_dsl.outputs.forecast import report
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.forecast import hardware_flops, layer_flops_per_token, model_flops, run
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.memory import estimate, in_flight, stage_estimate
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.stages import full_recompute
from astral_dsl.workspace import Workspace

# H100 SXM data sheet: 989 TFLOP/s dense bf16, 80 GB HBM3 at 3.35 TB/s, NVLink 450 GB/s each way
H100 = GpuSpec("H100", (("bf16", 989e12), ("fp8", 1979e12)), 80e9, 3350e9, 450e9, sms=132,
               arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def job(recompute="full", n=None, micro=4):
    """32 layers on 2 stages of 2 chunks: 8 layers per chunk, stage 0 holds 0-7 and 16-23."""
    par = ParallelSpec(tp=2, pp=2, dp=2, sp=True, zero=1, v=2, schedule="interleaved")
    return JobSpec("j", LLAMA_8B, par, 64, micro, 8192, recompute, recompute_layers=n)


def test_the_first_layers_of_each_chunk():
    assert full_recompute(job(n=3)) == (0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26)
    assert full_recompute(job()) == tuple(range(32))
    assert full_recompute(job(n=20)) == tuple(range(32))      # more than a chunk holds: all
    assert full_recompute(job("none")) == () == full_recompute(job("modules"))


def test_memory_keeps_the_other_layers_activations():
    j = job(n=3)
    low = Lowering(j, Costs.of(j, H100), NET)
    est = stage_estimate(j, low.stage_params, 0)
    kept = layer_activation_bytes(j, 0)                         # a recomputed layer: its input
    plain = layer_activation_bytes(job("none"), 0)
    assert kept == 4 * 8192 * 4096 * 2 / 2                      # micro 4 x 8,192 tokens x h, bf16, / TP
    held = in_flight(2, 2, j.microbatches, 0, "interleaved")
    # per chunk 3 layers keep their input and 5 all they saved; one layer is rebuilt at a time
    assert est.activations == pytest.approx((3 * kept + 5 * plain) * held + plain)
    full = stage_estimate(job(), low.stage_params, 0)
    none = stage_estimate(job("none"), low.stage_params, 0)
    assert full.activations < est.activations < none.activations


def test_only_those_layers_are_recomputed():
    j = job(n=3)
    low = Lowering(j, Costs.of(j, H100), NET)
    for chunk in (0, 1):
        ops = low.template(0, chunk, "B").ops
        redone = sorted({o.layer for o in ops if o.cat == "recompute"})
        assert redone == [0, 1, 2]                       # layers counted from the chunk's first
        assert sum(o.name == "recompute qkv" for o in ops) == 3
    durations = [Lowering(x, Costs.of(x, H100), NET).template(0, 0, "B").duration
                 for x in (job("none"), j, job())]
    assert durations[0] < durations[1] < durations[2]


def test_hardware_flops_count_the_recomputed_layers():
    j = job(n=3)
    lin, attn = layer_flops_per_token(j, 0)
    # 12 of the 32 layers run their forward again: per token of the batch, their FLOPs
    assert hardware_flops(j) - model_flops(j) == pytest.approx(64 * 8192 * 12 * (lin + attn))


def test_the_rule_recomputes_the_fewest_layers_that_fit():
    """Micro-batch 4: nothing recomputed needs ~118 GB and the norms and activation functions
    ~89 GB of the 80; every layer recomputed fits at ~45 GB but costs a whole forward more."""
    fc = run(job("auto"), H100, NET)
    n = fc.job.recompute_layers
    assert fc.job.recompute == "full" and n is not None
    assert dict(fc.chosen) == {"recompute": "full", "recompute_layers": n}

    def total(x):
        return estimate(x, Lowering(x, Costs.of(x, H100), NET).stage_params).total

    assert total(job(n=n)) <= 80e9 < total(job(n=n - 1))
    assert total(job("modules")) > 80e9 and total(job("none")) > 80e9
    assert fc.iteration_time < run(job(), H100, NET).iteration_time
    assert fc.iteration_time == run(job(n=n), H100, NET).iteration_time
    # said in the table and the JSON
    assert f"recompute full (the first {n} layers of each chunk)" in report.render(fc)
    assert report.to_json(fc)["parallelism"]["recompute_layers"] == n
    assert report.to_json(fc)["chosen_by_rule"] == {"recompute": "full", "recompute_layers": n}


BASE = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Llama3_70B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
site S { racks = 2 x R }
job j {
  model = Llama3_70B, placement = S, gpus = 64, %s
  parallel { tp = 8, pp = 4, dp = 2, sp = true, zero = 1 }
  batch { global_batch = 64, micro = 1, seq = 8192 }
}
"""


def test_the_field_states_it_and_needs_full_recomputation():
    stated = seer.forecast(Workspace.of_text(BASE % "recompute = full, recompute_layers = 5",
                                             "<t>").design)
    assert stated.job.recompute_layers == 5
    assert full_recompute(stated.job) == tuple(
        L for first in range(0, 80, 20) for L in range(first, first + 5))
    design = Workspace.of_text(BASE % "recompute = none, recompute_layers = 5", "<t>").design
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(design)
    bad = [d for d in exc.value.diagnostics if d.is_error]
    assert [d.code for d in bad] == ["E770"]
    assert bad[0].span.start.line == 8
    zero = Workspace.of_text(BASE % "recompute = full, recompute_layers = 0", "<t>").design
    assert [d.code for d in zero.diagnostics if d.is_error] == ["E309"]
    # NeMo AutoModel checkpoints every layer or none
    auto = Workspace.of_text(BASE % "recompute = full, recompute_layers = 5, framework = automodel",
                             "<t>").design
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(auto)
    assert [d.code for d in exc.value.diagnostics if d.is_error] == ["E770"]


def test_the_rule_offers_it_to_megatron_jobs_only():
    """AutoModel's `activation_checkpointing` is every layer or none; torchtitan's
    layer-selective checkpointing takes every k-th layer: the rule recomputes all there."""
    for framework in ("automodel", "torchtitan"):
        fc = run(attrs.evolve(job("auto"), framework=framework), H100, NET)
        assert fc.job.recompute_layers is None


def test_search_recomputes_the_fewest_layers_a_layout_needs_to_fit(tmp_path):
    """Llama 3 70B on 8 GB200s with offloading ruled out (`offload_layers = 0`): a layout that
    recomputes nothing does not fit, so the search takes it with the fewest layers of each
    chunk recomputed whole that make it fit (seer.rule.partial_recompute, the rule's own
    choice), forecasts that, and reports the count; the lower bound that pruned it (of the
    layout recomputing nothing) stays below its forecast."""
    import astral_dsl
    from astral_dsl.explore import search
    from astral_dsl.explore.search.bounds import screen_bound
    from astral_dsl.explore.search.work import Setup, State
    from astral_dsl.outputs.search import row_json, table
    from astral_dsl.explore.engines import LocalEngine
    from test_seer_offload import NVL8_JOB

    text = NVL8_JOB.replace("recompute = auto", "recompute = auto, offload_layers = 0")
    path = tmp_path / "nvl8.astral"
    path.write_text(text, encoding="utf-8")
    result = search.run(str(path), top=5, engine=LocalEngine(1))
    partial = [r for r in result.rows if r.get("recompute_layers") is not None]
    assert partial, [(r["config"].label(), r["recompute"]) for r in result.rows]
    state = State(astral_dsl.load(str(path)), Setup((), None))
    cap = state.cluster.gpu.memory
    for row in partial:
        c, n = row["config"], row["recompute_layers"]
        assert c.recompute == "none" and row["recompute"] == "full"
        spec = c.spec(state.space).with_(recompute="full", recompute_layers=n)
        low, tail = state.group(c)
        assert estimate(spec, low.stage_params).total <= cap
        if n > 1:
            less = spec.with_(recompute_layers=n - 1)
            assert estimate(less, low.stage_params).total > cap
        fc = run(spec, state.cluster.gpu, state.cluster.net)
        assert row["iteration_time_s"] == fc.iteration_time
        bound = screen_bound(c.spec(state.space), state.profile(c, low.groups["tp"]), tail,
                             state.hop(c), dp=state.dp_profile(c, low.groups["dp"]))
        assert 0 < bound <= fc.iteration_time
        assert row_json(row)["recompute"] == "full" and row_json(row)["recompute_layers"] == n
    assert f"full {partial[0]['recompute_layers']}" in table(result, width=120)


# ---- operator-level recomputation by module (`recompute_modules`) ---------------------------------
# DeepSeek-V3's attention (multi-head latent attention: 128 heads of 128 + 64 rotary dims for
# the queries and keys, 128 for the values; latents of 1,536 and 512) on one MoE layer
DSV3 = ModelSpec("DSV3", 4, 7168, 128, 128, 18432, 129280, 4096, "swiglu", experts=256, top_k=8,
                 shared_experts=1, moe_ffn=2048, kv_lora=512, q_lora=1536, rope_dim=64,
                 v_head=128, head_size=128)


def _mla(modules, recompute="modules"):
    par = ParallelSpec(tp=1, dp=8, ep=8, zero=1)
    return JobSpec("j", DSV3, par, 8, 1, 4096, recompute, recompute_modules=modules)


def test_mla_up_proj_keeps_no_queries_keys_or_values():
    """Q (128 x 192), K (128 x 192) and V (128 x 128) in bf16: 2 x 65,536 bytes a token fewer
    (Megatron-Core's mla_up_proj checkpoint discards them; the latents stay)."""
    kept = layer_activation_bytes(_mla(("layernorm",)), 1)
    redo = layer_activation_bytes(_mla(("layernorm", "mla_up_proj")), 1)
    assert kept - redo == pytest.approx(4096 * 2 * (128 * 192 + 128 * 192 + 128 * 128))


def test_each_module_recomputes_its_operators_only():
    """The backward re-runs what the modules name: the two norms for `layernorm`, the experts'
    activation for `moe_act`, the query and key/value up-projections for `mla_up_proj`."""
    costs = Costs(H100, "bf16")

    def redone(modules):
        low = Lowering(_mla(modules), costs, NET)
        return {o.name for o in low.template(0, 0, "B").ops if o.name.startswith("recompute ")}

    assert redone(("layernorm",)) == {"recompute input norm", "recompute post-attn norm"}
    assert redone(("moe_act",)) == {"recompute expert activation"}
    # the up-projections with the latents' norms fused into them (TE's LayerNormLinear, called
    # inside Megatron-Core 0.16.1's qkv_up_proj_and_rope_apply checkpoint), not the layer's norms
    assert redone(("mla_up_proj",)) == {"recompute q norm", "recompute q up",
                                        "recompute kv norm", "recompute kv up"}
    assert redone(None) == redone(("layernorm", "activation", "moe_act"))     # the default


def test_selective_in_a_pytorch_framework_is_the_default_modules():
    j = _mla(None, "selective").with_(framework="torchtitan")
    assert j.recomputed == frozenset({"layernorm", "activation", "moe_act"})
    assert _mla(None, "selective").recomputed == frozenset()       # Megatron-LM's: attention core


def test_hardware_flops_count_the_recomputed_up_projections():
    """HFU adds, per token of each attention layer, 2 (1,536 x 128 x 192 + 512 x 128 x 256)
    FLOPs for the recomputed query and key/value up-projections."""
    from astral_dsl.seer.forecast import hardware_flops, model_flops
    j = _mla(("mla_up_proj",))
    per_token = 2 * (1536 * 128 * 192 + 512 * 128 * 256) * DSV3.layers
    assert hardware_flops(j) - model_flops(j) == pytest.approx(8 * 4096 * per_token)
    assert hardware_flops(_mla(("layernorm",))) == model_flops(_mla(("layernorm",)))


# Megatron-Core's `mlp` module (transformer/mlp.py under tensor_parallel.checkpoint): a dense
# layer's whole MLP re-run in the backward, its TP collectives included (Llama 3 8B, TP 2 + SP)
def _dense(modules):
    par = ParallelSpec(tp=2, dp=4, sp=True, zero=1)
    return JobSpec("j", LLAMA_8B, par, 8, 1, 8192, "modules", recompute_modules=modules)


def test_mlp_recomputes_the_whole_dense_mlp_with_its_collectives():
    low = Lowering(_dense(("mlp",)), Costs(H100, "bf16"), NET)
    ops = [o for o in low.template(0, 0, "B").ops if o.name.startswith("recompute ")
           and o.layer == 0]
    names = {o.name for o in ops}
    assert names == {"recompute fc1", "recompute swiglu", "recompute fc2",
                     "recompute mlp all-gather", "recompute mlp reduce-scatter"}
    flops = {o.name: o.flops for o in ops if o.flops}
    # fc1: 8,192 tokens x (2 x 14,336 / 2) x 4,096; fc2: 8,192 x 4,096 x 14,336 / 2
    assert flops == pytest.approx({"recompute fc1": 2 * 8192 * 14336 * 4096,
                                   "recompute fc2": 2 * 8192 * 4096 * 7168})


def test_mlp_keeps_only_the_mlps_input():
    """Against recomputing the norms alone: fc1's two outputs and fc2's input (bf16) are not
    kept: 8,192 tokens x 14,336 x (2 x 2 + 2) bytes over TP 2."""
    kept = layer_activation_bytes(_dense(("layernorm",)), 0)
    redo = layer_activation_bytes(_dense(("layernorm", "mlp")), 0)
    assert kept - redo == pytest.approx(8192 * 14336 * 6 / 2)


def test_hardware_flops_count_the_recomputed_mlps():
    """2 x 3 x 4,096 x 14,336 FLOPs a token of each of the 32 dense layers."""
    j = _dense(("mlp",))
    assert hardware_flops(j) - model_flops(j) == pytest.approx(
        8 * 8192 * 2 * 3 * 4096 * 14336 * 32)
