"""Multi-head latent attention lowered as Megatron-Core 0.16.1 runs it with Transformer Engine
(models/gpt/gpt_layer_specs.py's MLA spec; transformer/multi_latent_attention.py): the
down-projections replicated over TP on the sequence-parallel shard, the latents' norms fused
into the column-parallel up-projections that gather the latents, the rotary key part gathered
apart. A small model at TP 2 with SP; every expected byte count by hand."""
from __future__ import annotations

import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# H100 SXM data sheet: 989 TFLOP/s dense bf16, 80 GB HBM3 at 3.35 TB/s, NVLink 450 GB/s each way
H100 = GpuSpec("H100", (("bf16", 989e12), ("fp8", 1979e12)), 80e9, 3350e9, 450e9, sms=132,
               arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
# 2 dense layers, hidden 1,024, 8 heads of 64 + 32 rotary dims, latents of 256 (queries) and 128
MLA = ModelSpec("MLA", 2, 1024, 8, 8, 4096, 32000, 4096, "swiglu", kv_lora=128, q_lora=256,
                rope_dim=32, v_head=64, head_size=64)
TOKENS, SHARD = 4096, 2048                  # micro-batch 1 x 4,096; its TP 2 sequence shard


def _ops(dtype="bf16", phase="F", tp=2):
    par = ParallelSpec(tp=tp, dp=8 // tp, sp=True, zero=1)
    job = JobSpec("j", MLA, par, 16, 1, 4096, "selective", dtype,
                  fp8_recipe="current" if dtype == "fp8" else "delayed")
    low = Lowering(job, Costs(H100, "fp8" if dtype == "fp8" else "bf16"), NET)
    return {o.name: o for o in low.template(0, 0, phase).ops if o.layer == 0}


def test_down_projections_run_on_the_shard_and_the_latents_are_gathered():
    ops = _ops()
    assert ops["q down"].shape == f"{SHARD}x256x1024"
    assert ops["kv down"].shape == f"{SHARD}x160x1024"        # kv_lora 128 + rope 32
    assert "attn all-gather" not in ops                        # no gather of the hidden state
    assert ops["q up all-gather"].nbytes == TOKENS * 256 * 2   # the q latent, bf16
    assert ops["kv up all-gather"].nbytes == TOKENS * 128 * 2
    assert ops["k pos all-gather"].nbytes == TOKENS * 32 * 2   # rope_dim wide
    assert ops["q up"].shape == f"{TOKENS}x{4 * 96}x256"       # 4 heads a rank of 64 + 32
    assert ops["q norm"].nbytes == 2 * SHARD * 256 * 2         # on the shard
    assert ops["kv norm"].nbytes == 2 * SHARD * 128 * 2


def test_backward_reduce_scatters_the_latent_gradients_not_the_hidden():
    ops = _ops(phase="B")
    assert ops["q up grad reduce-scatter"].nbytes == TOKENS * 256 * 2
    assert ops["kv up grad reduce-scatter"].nbytes == TOKENS * 128 * 2
    assert ops["q up input all-gather"].nbytes == TOKENS * 256 * 2
    assert ops["k pos grad reduce-scatter"].nbytes == TOKENS * 32 * 2
    assert ops["q down dgrad"].shape == f"{SHARD}x1024x256"
    assert ops["kv down wgrad"].shape == f"1024x160x{SHARD}"
    assert not any(n.startswith(("q down", "kv down")) and "comm" == o.cat
                   for n, o in ops.items())
    assert ops["q norm bwd"].nbytes == 3 * SHARD * 256 * 2


def test_casts_down_unfused_up_norm_fed():
    """Current scaling on Hopper (lower_linear.CAST_BYTES_NORM_AMAX): the down-projections'
    input cast unfused, 6 bytes an element of the shard's hidden state; the up-projections'
    fed by their latent norm, 4 bytes an element of the shard's latent (quantised before
    the gather, which moves 1 byte an element)."""
    ops = _ops("fp8")
    assert ops["q down quantise"].nbytes == 6 * SHARD * 1024
    assert ops["kv down quantise"].nbytes == 6 * SHARD * 1024
    assert ops["q up quantise"].nbytes == 4 * SHARD * 256
    assert ops["kv up quantise"].nbytes == 4 * SHARD * 128
    assert ops["q up all-gather"].nbytes == TOKENS * 256
    assert "q up amax all-reduce" in ops


def test_tp1_has_no_gathers():
    ops = _ops(tp=1)
    assert ops["q down"].shape == f"{TOKENS}x256x1024"
    assert not any("all-gather" in n for n in ops)
    assert ops["q norm"].nbytes == pytest.approx(2 * TOKENS * 256 * 2)
