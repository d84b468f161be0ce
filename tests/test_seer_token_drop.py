"""MoE token dropping (`capacity_factor`, `pad_to_capacity`): the token copies a rank's experts
take, the host's wait for the token counts, the activations kept, and the runs tables' token-drop
rows. Hand-computed against Megatron-Core 0.16's get_capacity (moe_utils.py) and its
dispatcher's sync points (token_dispatcher.py)."""
from __future__ import annotations

import pytest

from astral_dsl.runs.express import express
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import RUN_FILES
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# Qwen3-30B-A3B's shape (128 experts, top 8, expert width 768): stdlib/models.astral
QWEN = ModelSpec("Qwen3_30B_A3B", 48, 2048, 32, 4, 6144, 151936, 4096, "swiglu", experts=128,
                 top_k=8, moe_ffn=768)
H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                      Tier("core", 10**6, False, 1.0)))


def job(**kw) -> JobSpec:
    par = ParallelSpec(tp=1, pp=1, dp=8, ep=8, zero=1)
    return JobSpec("j", QWEN, par, global_batch=64, micro=1, seq=4096, **kw)


# ---- the token copies the experts take ---------------------------------------------------------
def test_dropless_routes_top_k_copies_of_every_token():
    assert job().routed(4096) == 4096 * 8


@pytest.mark.parametrize("factor,copies", [
    (1.0, 32768),                       # ceil(32768 / 128 x 1.0) = 256 per expert, x 128
    (1.1, 282 * 128),                   # ceil(256 x 1.1) = ceil(281.6) = 282 per expert
    (0.5, 128 * 128),                   # ceil(128) per expert: half of them dropped
])
def test_padded_experts_take_exactly_their_capacity(factor, copies):
    assert job(capacity_factor=factor, pad_to_capacity=True).routed(4096) == copies


def test_capacity_rounds_up_per_expert():
    # 1,000 tokens x 8 = 8,000 copies: 62.5 per expert, a capacity of 63, 8,064 slots
    assert job(capacity_factor=1.0, pad_to_capacity=True).routed(1000) == 63 * 128


@pytest.mark.parametrize("factor,copies", [(0.5, 16384.0), (1.0, 32768.0), (1.5, 32768.0)])
def test_unpadded_capacity_drops_only_below_an_even_share(factor, copies):
    # Seer routes evenly: no expert exceeds its share, so only a factor below 1 drops
    assert job(capacity_factor=factor).routed(4096) == copies


# ---- the host's wait for the token counts ------------------------------------------------------
@pytest.mark.parametrize("fields,waits", [
    ({}, True),                                                   # dropless: one per pass
    ({"capacity_factor": 1.0}, True),                             # sizes still dynamic
    ({"capacity_factor": 1.0, "pad_to_capacity": True}, False),   # drop_and_pad: no sync point
    ({"cuda_graphs": True}, False),                               # sync-free, replayed
])
def test_the_host_waits_for_counts_unless_padded_or_replayed(fields, waits):
    assert job(**fields).host_counts is waits


def _ops(spec):
    low = Lowering(spec, Costs.of(spec, H100), NET)
    tpl = low.template(0, 0, "F")
    return {op.name: op for op in tpl.ops}


def _backward_ops(spec):
    low = Lowering(spec, Costs.of(spec, H100), NET)
    return {op.name for op in low.template(0, 0, "B").ops}


def test_padded_layers_lower_without_the_forward_wait_and_with_their_capacity():
    dropless, padded = _ops(job()), _ops(job(capacity_factor=1.1, pad_to_capacity=True))
    assert "moe token-count sync" in dropless
    assert "moe token-count sync" not in padded
    # the backward waits on nothing from the host (Megatron-Core 0.16.0 token_dispatcher.py:
    # the split sizes are the forward's), dropless or padded; its routing kernels stay
    for spec in (job(), job(capacity_factor=1.1, pad_to_capacity=True), job(cuda_graphs=True)):
        ops = _backward_ops(spec)
        assert "moe token-count sync bwd" not in ops
        assert "moe routing bwd" in ops
    # the expert GEMMs' FLOPs grow with the slots: 282 x 128 against 32,768 copies
    fc1 = [n for n in padded if n.endswith("expert fc1")]
    assert fc1
    ratio = padded[fc1[0]].flops / dropless[fc1[0]].flops
    assert ratio == pytest.approx(282 * 128 / 32768, rel=1e-12)


def test_kept_activations_follow_the_copies():
    # the routed part of a layer's activations scales with the copies, the rest does not
    full = layer_activation_bytes(job(), 0)
    half = layer_activation_bytes(job(capacity_factor=0.5), 0)
    same = layer_activation_bytes(job(capacity_factor=1.0, pad_to_capacity=True), 0)
    assert same == full
    tokens, h, elem, mats = 4096, 2048, 2, 2      # bf16; swiglu: fc1 gives 2 outputs
    # per token, top_k = 8: fc1's outputs and fc2's input, fc1's input (Megatron-Core keeps no
    # copy of the experts' output: activations.layer_activation_bytes)
    routed = 8 * 768 * (mats * elem + elem) + 8 * h * elem
    assert full - half == pytest.approx(tokens * routed / 2, rel=1e-12)


# ---- the runs tables' token-drop rows ----------------------------------------------------------
def test_token_drop_rows_drop_at_megatron_bridges_default_capacity():
    rows = [r for r in read_table(RUN_FILES["modern"]).runs if "tokendrop" in r.model.lower()]
    assert rows
    for row in rows:
        e = express(row)
        # Megatron-Bridge's token-drop helper's defaults: capacity 1, padded, and the
        # alltoall dispatcher it asserts (no flex dispatcher)
        assert "capacity_factor = 1\n" in e.source and "pad_to_capacity = true" in e.source
        assert "moe_dispatcher" not in e.source
        assert any("token-drop" in a for a in e.assumed)


def test_a_padded_forecast_says_how_little_of_its_saving_was_checked():
    from astral_dsl.seer.forecast import run
    padded = run(job(capacity_factor=1.0, pad_to_capacity=True), H100, NET)
    assert any("pad_to_capacity" in n and "do not state it" in n for n in padded.notes)
    assert not any("pad_to_capacity" in n for n in run(job(), H100, NET).notes)
