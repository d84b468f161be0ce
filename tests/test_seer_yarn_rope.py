"""YaRN's rotary embeddings as Megatron-Core 0.16.1 runs them: unfused when the attention factor
(mscale) is not 1, which Transformer Engine's fused RoPE does not take (lower.MCORE_YARN_ROPE);
fused where `rope_fusion` is stated true, as Megatron-Core 0.15 runs them (NeMo 25.09's and
25.11's GPT-OSS rows). Hand-counted bytes in the comments."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from astral_dsl.analyses.walk import Resolver
from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.moe_recipe import yarn_rope_fused
from astral_dsl.runs.table import parse_table
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs, GpuSpec
from astral_dsl.seer.job import job_spec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.workspace import Workspace

B200 = GpuSpec("B200", (("bf16", 2250e12),), 180e9, 8e12, 900e9, sms=148, arch="blackwell")
NET = Network(8, 900e9, (50e9,) * 8, (Tier("leaf", 64, True, 1.0),))
# GPT-OSS 120B's attention: 64 query heads and 8 key/value heads of 64
OSS = ModelSpec("oss", 4, 2880, 64, 8, 2880, 201088, 4096, "swiglu", head_size=64)
BW = 8e12 * HBM_EFF


def _rope(model, framework="megatron", **kw):
    job = JobSpec("j", model, ParallelSpec(dp=8), 8, 1, 4096, "none", "bf16",
                  framework=framework, **kw)
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


def test_yarn_rope_fused_where_stated():
    """`rope_fusion` stated true (`yarn_rope_fusion`): Transformer Engine's fused kernel under
    YaRN too, as Megatron-Core 0.15.0 takes it whenever apply_rope_fusion is set
    (models/common/embeddings/rope_utils.py:268-286); stated false stays unfused."""
    elems = 4096 * (64 + 8) * 64
    yarn = attrs.evolve(OSS, yarn_factor=32.0)
    fwd, bwd = _rope(yarn, yarn_rope_fusion=True)
    assert fwd.nbytes == pytest.approx(4 * elems) and fwd.kernels == 1
    assert bwd.dur == pytest.approx(4 * elems / BW + KERNEL_S)
    assert _rope(yarn, rope_fusion=False, yarn_rope_fusion=False)[0].nbytes == \
        pytest.approx(24 * elems)


def test_the_language_states_it():
    """Stated `rope_fusion = true` reads as yarn_rope_fusion; left out, the default fuses all but
    YaRN (seer/job.py)."""
    text = """
import stdlib.models { GPT_OSS_120B }
job j { model = GPT_OSS_120B, rope_fusion = true }
job k { model = GPT_OSS_120B }
job l { model = GPT_OSS_120B, rope_fusion = false }
"""
    d = Workspace.of_text(text, "t.astral").design
    res = Resolver(d)
    got = [(s.rope_fusion, s.yarn_rope_fusion)
           for s in (job_spec(x, res(x.field("model"))) for x in d.jobs)]
    assert got == [(True, True), (True, False), (False, False)]


def test_nemo_25_11s_gpt_oss_rows_ran_the_fused_rope():
    """NeMo 25.09 and 25.11 (Megatron-Bridge 0.2, Megatron-Core 0.15): GPT-OSS's RoPE fused
    (runs/moe_recipe.py YARN_FUSED_ROPE); from 26.02 (Megatron-Core 0.16) unfused."""
    path = Path(__file__).resolve().parents[1] / "astral_dsl/seer/calibration/modern.csv"
    lines = path.read_text().splitlines()
    want = {"r131": True, "r137": True, "r109": False, "r108": False, "r003": False}
    text = "\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",")[0] in want]) + "\n"
    got = {p.row.id: p.spec.yarn_rope_fusion for p in prepare(parse_table(text, str(path)))}
    assert got == want
    assert yarn_rope_fused("gptoss120b", (25, 9)) and not yarn_rope_fused("gptoss120b", (26, 2))
    assert not yarn_rope_fused("deepseekv3", (25, 11)) and not yarn_rope_fused("gptoss120b", None)


def test_other_frameworks_keep_their_rope():
    # torchtitan (compiled) and AutoModel do not take Megatron-Core's path
    for fw in ("torchtitan", "automodel"):
        assert _rope(attrs.evolve(OSS, yarn_factor=32.0), fw)[0].dur == _rope(OSS, fw)[0].dur
