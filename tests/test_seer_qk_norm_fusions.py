"""Stop 62's MoE-model pricing, hand-computed: the query-key norm (`qk_norm`), Llama 4's NoPE
layers (`nope_every`), Megatron-Core's unfused token permutation and RoPE (`permute_fusion`,
`rope_fusion` false), one quantise kernel an expert on the per-expert GEMM path, and the NeMo
2.x rows that the runs reader gives these (runs/moe_recipe.py)."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GEMM_STREAMS, KERNEL_S, Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.lower_attention import MCORE_YARN_ROPE
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

H100 = GpuSpec("H100", (("bf16", 989e12), ("fp8", 1979e12)), 80e9, 3350e9, 450e9)
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                      Tier("core", 10**6, False, 1.0)))
# Qwen3's attention (32 query heads, 4 key/value heads of 128), 8 layers, 16 experts, top 2
MOE = ModelSpec("m", 8, 2048, 32, 4, 6144, 151936, 4096, "swiglu", experts=16, top_k=2,
                moe_ffn=768, head_size=128)
TOKENS = 4096                                  # micro-batch 1 x 4,096
QK = TOKENS * (32 + 4) * 128                   # elements of the queries and keys a layer


def job(model=MOE, pp=1, **kw) -> JobSpec:
    par = ParallelSpec(tp=1, pp=pp, dp=8, ep=8 if model.experts else 1, zero=1)
    return JobSpec("j", model, par, global_batch=64, micro=1, seq=TOKENS, **kw)


def ops(spec, phase, stage=0):
    return Lowering(spec, Costs.of(spec, H100), NET).template(stage, 0, phase).ops


def named(spec, phase, name, stage=0):
    return [o for o in ops(spec, phase, stage) if o.name == name]


# ---- the query-key norm -------------------------------------------------------------------------
@pytest.mark.parametrize("norm,label", [("rms", "qk norm"), ("l2", "qk l2 norm")])
def test_qk_norm_reads_and_writes_the_queries_and_keys(norm, label):
    spec = job(attrs.evolve(MOE, qk_norm=norm))
    fwd, bwd = named(spec, "F", label), named(spec, "B", label + " bwd")
    assert len(fwd) == len(bwd) == 8                         # every layer, once each way
    # bf16: a read and a write of 4,096 x 36 x 128 elements (2 bytes each) forward, and the
    # input and output gradient read with the input gradient written backward: 1.5 times that
    assert fwd[0].nbytes == pytest.approx(2 * 2 * QK)
    assert bwd[0].nbytes == pytest.approx(1.5 * 2 * 2 * QK)
    assert fwd[0].kernels == bwd[0].kernels == 2             # q_layernorm and k_layernorm


def test_no_qk_norm_unless_stated_or_outside_megatron():
    names = {o.name for o in ops(job(), "F")}
    assert "qkv" in names and not any(" norm" in n and "qk" in n for n in names)
    for fw in ("torchtitan", "automodel"):
        spec = job(attrs.evolve(MOE, qk_norm="rms"), framework=fw)
        assert not any(" norm" in o.name and "qk" in o.name for o in ops(spec, "F"))


# ---- NoPE layers --------------------------------------------------------------------------------
def test_every_fourth_layer_has_neither_rope_nor_norm():
    # NeMo 2.4.0 is_nope_layer: 1-based layer numbers 4 and 8, i.e. layers 3 and 7
    spec = job(attrs.evolve(MOE, qk_norm="l2", nope_every=4))
    for phase, suffix in (("F", ""), ("B", " bwd")):
        rope = {o.layer for o in named(spec, phase, "rope" + suffix)}
        norm = {o.layer for o in named(spec, phase, "qk l2 norm" + suffix)}
        assert rope == norm == {0, 1, 2, 4, 5, 6}


def test_nope_layers_enter_the_shape_key():
    # 12 layers on 4 stages of 3: stage 1 (layers 3-5) has its NoPE layer first, stage 2
    # (6-8) its second: alike in every other way, their templates must not be shared
    model = attrs.evolve(MOE, layers=12, nope_every=4)
    spec = job(model, pp=4)
    for stage, nope in ((1, 3), (2, 7)):
        rope = {o.layer for o in named(spec, "F", "rope", stage)}
        assert nope not in rope and len(rope) == 2, (stage, rope)


# ---- the unfused permutation and RoPE -----------------------------------------------------------
def test_unfused_permutation_moves_the_rows_megatron_core_moves():
    # 4,096 tokens, top 2: 8,192 routed rows of 2,048 bf16 elements (4,096 bytes a row)
    row = 2048 * 2
    spec = job(permute_fusion=False)
    got = {o.name: o for ph in ("F", "B") for o in ops(spec, ph) if o.name.endswith(" unfused")}
    assert got["permute unfused"].nbytes == 0                       # index_select: as fused
    assert got["unpermute unfused"].nbytes == pytest.approx((2 * 8192 + 2 * 4096) * row)
    assert got["unpermute bwd unfused"].nbytes == pytest.approx(3 * 8192 * row)
    assert got["permute bwd unfused"].nbytes == pytest.approx(2 * 4096 * row)
    assert {o.kernels for o in got.values()} == {4}
    assert not any(o.name.endswith(" unfused") for o in ops(job(), "F"))
    titan = job(permute_fusion=False, framework="torchtitan")
    assert not any(o.name.endswith(" unfused") for o in ops(titan, "F"))


def test_unfused_rope_is_megatron_cores_pytorch_rope():
    fused, unfused = job(), job(rope_fusion=False)
    for phase, name, (ratio, kernels) in (("F", "rope", MCORE_YARN_ROPE[0]),
                                          ("B", "rope bwd", MCORE_YARN_ROPE[1])):
        a, b = named(fused, phase, name)[0], named(unfused, phase, name)[0]
        assert a.nbytes == pytest.approx(2 * 2 * QK) and a.kernels == 1
        assert b.nbytes == pytest.approx(ratio * 2 * 2 * QK) and b.kernels == kernels
    assert ratio == 5 and kernels == 5                     # 20 bytes an element in 5 kernels


# ---- one quantise kernel an expert on the per-expert path ---------------------------------------
def test_per_expert_quantise_kernels():
    spec = job(dtype="fp8", fp8_recipe="current")
    local = 16 // 8
    f, b = ops(spec, "F"), ops(spec, "B")
    fc1 = [o for o in f if o.name == "expert fc1 quantise"]
    grad = [o for o in b if o.name == "expert fc2 grad quantise"]
    assert fc1 and grad and GEMM_STREAMS > 1
    assert {o.kernels for o in fc1 + grad} == {local}
    graphed = job(dtype="fp8", fp8_recipe="current", cuda_graphs=True)   # one grouped kernel
    assert {o.kernels for o in ops(graphed, "F") if o.name == "expert fc1 quantise"} == {1}
    assert {o.kernels for o in ops(graphed, "B") if o.name == "expert fc2 grad quantise"} == {1}
    # the kernels' launches are what changes: the same bytes
    one = next(o for o in ops(graphed, "F") if o.name == "expert fc1 quantise")
    assert fc1[0].dur - one.dur == pytest.approx((local - 1) * KERNEL_S, rel=1e-6)


# ---- the runs reader: NeMo 2.x's Llama 4 and Mixtral, Qwen3's and Llama 4's models -----------
def test_rows_take_their_models_norms_and_their_configs_fusions():
    from astral_dsl.runs.evaluate import prepare_row
    from astral_dsl.runs.table import parse_table
    from test_runs import _csv, _row

    got = {}
    for rid in ("r193", "r185", "r004"):
        row = next(r for r in parse_table(_csv([_row(rid)]), "t.csv").runs)
        s = prepare_row(row).spec
        got[rid] = (s.model.qk_norm, s.model.nope_every, s.permute_fusion, s.rope_fusion)
    # NeMo 25.07's Llama 4: its Llama4Config turns both fusions off, its performance script
    # (nemo_toolkit 2.4.0 scripts/performance/llm/pretrain_llama4_e16.py:84-85) back on
    assert got == {"r193": ("l2", 4, True, True),
                   "r185": ("none", 0, False, True),      # NeMo 25.04 MixtralConfig
                   "r004": ("rms", 0, True, True)}        # Megatron-Bridge's Qwen3 recipe


def test_the_language_states_them():
    from astral_dsl.analyses.walk import Resolver
    from astral_dsl.seer.job import job_spec
    from astral_dsl.workspace import Workspace

    text = """
import stdlib.models { Llama4_Scout }
model M { layers = 8, hidden = 2048, heads = 32, kv_heads = 4, head_dim = 128, vocab = 32000,
  seq = 4096, experts = 16, top_k = 2, moe_ffn = 768, activation = swiglu, qk_norm = rms,
  nope_every = 4 }
job j { model = M, permute_fusion = false, rope_fusion = false }
job k { model = Llama4_Scout }
"""
    d = Workspace.of_text(text, "t.astral").design
    res = Resolver(d)
    j, k = (job_spec(x, res(x.field("model"))) for x in d.jobs)
    assert (j.model.qk_norm, j.model.nope_every, j.permute_fusion, j.rope_fusion) == \
        ("rms", 4, False, False)
    assert (k.model.qk_norm, k.model.nope_every, k.permute_fusion, k.rope_fusion) == \
        ("l2", 4, True, True)                              # the default: fused kernels


def test_the_fusion_switches_warn_outside_megatron():
    """`permute_fusion` and `rope_fusion` are Megatron-Core's switches: stated false with
    torchtitan they change nothing, and W751 says so at each (tests/bad/jobs)."""
    from pathlib import Path

    import astral_dsl

    path = Path(__file__).parent / "bad" / "jobs" / "permute_fusion_torchtitan.astral"
    fc = astral_dsl.forecast(path)
    said = [d.message for d in fc.diagnostics if d.code == "W751"]
    assert any("permute_fusion has no effect with framework = torchtitan" in m for m in said)
    assert any("rope_fusion has no effect with framework = torchtitan" in m for m in said)
