"""A hybrid Mamba-2 model's layer widths (seer/lower_mamba.py `_mamba_dims`): the inner width is
mamba_expand x hidden, or, as Megatron-Core sets it from mamba_num_heads (ssm/mamba_mixer.py),
mamba_heads x mamba_head_dim; the in-projection makes z, x, B, C and dt (Dao and Gu 2024,
"Transformers are SSMs", section 7)."""
from __future__ import annotations

import attrs

from astral_dsl.runs.express import stdlib_models
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

GB200 = GpuSpec("GB200", (("bf16", 2500e12),), 186e9, 8e12, 900e9, sms=148, arch="blackwell")
NET = Network(8, 900e9, (50e9,) * 8, (Tier("leaf", 64, True, 1.0),))
HYBRID = ModelSpec("h", 4, 2688, 32, 2, 1856, 131072, 8192, "relu2", head_size=128,
                   pattern="M*M-", mamba_heads_stated=64, mamba_head=64, mamba_state=128,
                   mamba_groups=8, mamba_chunk=128)


def _in_proj(model, tp=1):
    job = JobSpec("j", model, ParallelSpec(tp=tp, dp=8 // tp), 8, 1, 8192, "none", "bf16")
    low = Lowering(job, Costs.of(job, GB200), NET)
    return low, next(o for o in low.template(0, 0, "F").ops if o.name == "mamba in proj")


def test_mamba_heads_set_the_inner_width():
    # 64 heads of 64: d_inner 4,096 (not 2 x 2,688 = 5,376); the in-projection's output is z and
    # x (2 x 4,096), B and C (2 x 8 groups x 128) and dt (64 heads): 10,304 columns
    low, op = _in_proj(HYBRID)
    d_inner, heads, groups, width, conv = low._mamba_dims()
    assert (d_inner, heads, groups) == (4096, 64, 8)
    assert width == 2 * 4096 + 2 * 8 * 128 + 64 == 10304
    assert conv == 4096 + 2 * 8 * 128
    assert op.shape == "8192x10304x2688"
    # TP 2 shards heads and groups
    low2, _ = _in_proj(HYBRID, tp=2)
    assert low2._mamba_dims()[:3] == (2048, 32, 4)
    # without mamba_heads the width is mamba_expand x hidden
    low3, _ = _in_proj(attrs.evolve(HYBRID, mamba_heads_stated=0))
    assert low3._mamba_dims()[0] == 2 * 2688


def test_stdlib_nemotron_3_nano_states_the_recipe_widths():
    f = stdlib_models()["Nemotron3_Nano"]
    assert (f["mamba_heads"], f["mamba_head_dim"], f["head_dim"], f["mamba_chunk"]) == (
        64, 64, 128, 128)
    assert f["pattern"].count("M") == 23 and f["pattern"].count("E") == 23
    assert f["pattern"].count("*") == 6 and len(f["pattern"]) == f["layers"] == 52


def test_the_scan_moves_its_fp32_states_and_chunk_products():
    # per token, bf16 (e = 2), d = 4,096, G N = 8 x 128, h P N / Q = 64 x 64 x 128 / 128 = 4,096
    # state elements, G Q = 8 x 128 chunk products (mamba_ssm 2.2.4 ssd_combined.py):
    # forward 5 e d + 4 e G N + (8 + 2 e) h P N / Q + 8 G Q + (e + 8) h
    #       = 40,960 + 8,192 + 49,152 + 8,192 + 640 = 107,136 bytes;
    # backward 15 e d + 15 e G N + (24 + 5 e) h P N / Q + 20 G Q + 2 (e + 8) h
    #       = 122,880 + 30,720 + 139,264 + 20,480 + 1,280 = 314,624 bytes
    low, _ = _in_proj(HYBRID)
    assert low._ssd_bytes(False) == 8192 * 107136
    assert low._ssd_bytes(True) == 8192 * 314624
    scan = next(o for o in low.template(0, 0, "F").ops if o.name == "ssd scan")
    assert scan.nbytes == 8192 * 107136
    # memory-bound on a GB200: at least the bytes over 85 % of 8 TB/s
    assert scan.dur >= 8192 * 107136 / (8e12 * 0.85)
