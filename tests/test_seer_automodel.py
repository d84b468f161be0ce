"""NeMo AutoModel as its code runs (nemo_automodel 0.1.0 / 0.2.0, the releases around the runs
table's AutoModel page of 2025-10-02): its benchmark gate has no weights (FakeBalancedGate:
no router GEMM, scores, top-k or backward; spec.JobSpec.gate_free), its MoE parallelizer keeps
the weights gathered from the forward to the backward under a pipeline (reshard_after_forward
False), and a row whose notes say "FlexAttn" runs attention on FlexAttention's kernels, priced as
FlashAttention-2's (runs/stacks.py). Hand-counted in bytes."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.table import parse_table
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.params import layer_params
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_runs import _csv, _row
from test_seer_gpt_oss_kernels import GPU, NET, OSS
from test_seer_moe_sort import ELEM, H, TOKENS

SHARED = attrs.evolve(OSS, shared_experts=1, shared_ffn=5760)
ROW = TOKENS * H * ELEM          # the rank's 16,384 tokens x 2,880 bf16 values: 94,371,840 bytes


def job(model=OSS, **kw):
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=64, zero=1)
    kw.setdefault("framework", "automodel")
    return JobSpec("j", model, par, global_batch=256, micro=4, seq=4096, **kw)


def ops(phase, model=OSS, **kw):
    j = job(model, **kw)
    low = Lowering(j, Costs.of(j, GPU), NET)
    return {op.name: op for op in low.template(0, 0, phase).ops}


def test_the_fake_balanced_gate_runs_five_small_kernels_and_no_router_gemm():
    fwd = ops("F", moe_routing="round_robin")
    assert "router" not in fwd
    gate = fwd["fake gate"]
    # ones / k (fp32: 4 + 8 bytes an entry), arange and % experts (int64: 8 + 16), type_as
    # (4 + 2): 42 bytes x 16,384 tokens x k = 4 entries = 2,752,512 bytes in 5 kernels; on the
    # test GPU's 3,350 GB/s at HBM_EFF 0.85: 0.97 us + 5 x 4 us
    assert gate.nbytes == 42 * TOKENS * 4 == 2_752_512 and gate.kernels == 5
    assert gate.dur == pytest.approx(2_752_512 / (3350e9 * HBM_EFF) + 5 * KERNEL_S, rel=1e-12)
    # the router's top-k gate (the default) keeps its GEMM: 16,384 x 128 x 2,880
    assert "router" in ops("F") and "fake gate" not in ops("F")
    assert ops("F")["router"].flops == 2 * TOKENS * 128 * H
    # a weightless gate has no scores or top-k under any framework: Megatron-Core's router
    # kernels (router_kernels.py) follow the top-k gate only
    mega = {"F": "router scores and top-k", "B": "router scores and top-k bwd"}
    for phase, name in mega.items():
        assert name in ops(phase, framework="megatron")
        assert name not in ops(phase, framework="megatron", moe_routing="round_robin")


def test_the_fake_balanced_gate_has_no_backward():
    bwd = ops("B", moe_routing="round_robin")
    assert "router dgrad" not in bwd
    # the dispatch's gradient alone reaches the layer's input: nothing to sum
    assert "moe input dgrad sum" not in bwd
    # with shared experts, theirs and the dispatch's: one addition, 3 passes of [16,384 x 2,880]
    shared = ops("B", model=SHARED, moe_routing="round_robin")
    assert shared["moe input dgrad sum"].nbytes == 3 * ROW and \
        shared["moe input dgrad sum"].kernels == 1
    # the router's gate: router, dispatch and shared gradients, two additions
    assert ops("B", model=SHARED)["moe input dgrad sum"].nbytes == 2 * 3 * ROW


def test_the_fake_balanced_gate_holds_no_weights_and_keeps_no_scores():
    fake, topk = job(moe_routing="round_robin"), job()
    assert fake.gate_free and not topk.gate_free
    # the router's 2,880 x 128 weights are not there
    assert layer_params(topk, 0) - layer_params(fake, 0) == 2880 * 128
    # nor its saved fp32 scores and routing map: 128 x (4 + 1) bytes a token, 16,384 tokens
    assert layer_activation_bytes(topk, 0) - layer_activation_bytes(fake, 0) == \
        pytest.approx(128 * 5 * TOKENS, rel=1e-9)
    # a dense model has no gate either way
    assert not job(attrs.evolve(OSS, experts=0, top_k=0)).gate_free


def _specs(*ids):
    t = parse_table(_csv([_row(i) for i in ids]), "t.csv")
    return {p.row.id: p for p in prepare(t)}


def test_automodel_keeps_its_weights_gathered_under_a_pipeline():
    """nemo_automodel 0.1.0 models/deepseek_v3/parallelizer.py (`reshard_after_forward=not
    pp_enabled`) and 0.2.0 moe/parallelizer.py (default False): DeepSeek-V3 with PP 4 and Kimi
    K2 with PP 8 keep them; Qwen3 30B-A3B without a pipeline reshards (FSDP2's default)."""
    p = _specs("r206", "r208", "r209")
    assert not p["r206"].spec.parallel.reshard_after_forward
    assert not p["r208"].spec.parallel.reshard_after_forward
    assert p["r209"].spec.parallel.reshard_after_forward


def test_flexattn_in_the_notes_runs_flashattention_2_class_kernels():
    """GPT-OSS 20B's row ("kernels: TE + DeepEP + FlexAttn") is priced on FlashAttention-2's
    efficiency (attn_eff_sdpa); the other AutoModel rows keep Transformer Engine's fused
    attention."""
    from astral_dsl.seer.calibration import shipped
    p = _specs("r210", "r209")
    assert p["r210"].spec.attention == "flash2" and p["r209"].spec.attention == "flash"
    assert any("FlexAttention" in a for a in p["r210"].expressed.assumed)
    r210 = p["r210"]
    assert Costs.of(r210.spec, r210.gpu).attn_eff == shipped().attn_eff_sdpa
    # and the fit's Jacobian counts it under that constant (runs/fit.py uses)
    from astral_dsl.runs.uses import uses
    assert uses("attn_eff_sdpa", r210.spec, r210.gpu) and not uses("attn_eff", r210.spec, r210.gpu)
