"""YaRN's rotary embeddings as Megatron-Core 0.16.1 runs them: unfused when the attention factor
(mscale) is not 1, which Transformer Engine's fused RoPE does not take (lower.MCORE_YARN_ROPE).
Hand-counted bytes in the comments."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

B200 = GpuSpec("B200", (("bf16", 2250e12),), 180e9, 8e12, 900e9, sms=148, arch="blackwell")
NET = Network(8, 900e9, (50e9,) * 8, (Tier("leaf", 64, True, 1.0),))
# GPT-OSS 120B's attention: 64 query heads and 8 key/value heads of 64
OSS = ModelSpec("oss", 4, 2880, 64, 8, 2880, 201088, 4096, "swiglu", head_size=64)
BW = 8e12 * HBM_EFF


def _rope(model, framework="megatron"):
    job = JobSpec("j", model, ParallelSpec(dp=8), 8, 1, 4096, "none", "bf16",
                  framework=framework)
    low = Lowering(job, Costs.of(job, B200), NET)
    ops = {ph: next(o for o in low.template(0, 0, ph).ops if o.name.startswith("rope"))
           for ph in ("F", "B")}
    return ops["F"], ops["B"]


def test_megatron_runs_yarn_rope_unfused():
    # 4,096 tokens x (64 + 8) heads x 64 = 18.9 M elements of queries and keys, bf16: the fused
    # kernel reads and writes each once (4 bytes); unfused, 24 bytes forward in 6 kernels and
    # 20 backward in 5
    elems = 4096 * (64 + 8) * 64
    fwd, bwd = _rope(attrs.evolve(OSS, yarn_factor=32.0))
    assert fwd.nbytes == pytest.approx(24 * elems)
    assert fwd.dur == pytest.approx(24 * elems / BW + 6 * KERNEL_S)
    assert bwd.dur == pytest.approx(20 * elems / BW + 5 * KERNEL_S)
    plain_fwd, plain_bwd = _rope(OSS)
    assert plain_fwd.dur == pytest.approx(4 * elems / BW + KERNEL_S)
    assert plain_bwd.dur == pytest.approx(4 * elems / BW + KERNEL_S)


def test_other_frameworks_keep_their_rope():
    # torchtitan (compiled) and AutoModel do not take Megatron-Core's path
    for fw in ("torchtitan", "automodel"):
        assert _rope(attrs.evolve(OSS, yarn_factor=32.0), fw)[0].dur == _rope(OSS, fw)[0].dur
