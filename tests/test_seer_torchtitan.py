"""torchtitan's Llama as torchtitan runs it. Its selective per-op recomputation recomputes every
second matmul of a block (torchtitan 0.1.0, models/llama3/infra/parallelize.py: `_save_list`
keeps aten.mm's outputs "except every second mm", counted per block in call order wq, wk, wv,
wo, w1, w3, w2): the key projection, w3 of a gated MLP and, without TP, the output projection
are run again before the backward and not kept. Its wq, wk, wv and w1, w3 are separate linear layers (torchtitan 0.1.0
models/llama3/model/model.py): separate GEMMs whose input gradients are summed. Hand-computed
against seer/lower.py and seer/memory.py."""
from __future__ import annotations

import pytest

from astral_dsl.seer import activations, comm, memory
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# Llama 3 8B's widths: hidden 4,096, 32 heads of 128, 8 KV heads, FFN 14,336 (SwiGLU)
LLAMA = ModelSpec("Llama 3 8B", 2, 4096, 32, 8, 14336, 128256, 8192, "swiglu")
GELU = ModelSpec("gelu", 2, 4096, 32, 8, 16384, 32000, 2048, "gelu")
GPU = GpuSpec("H100", (("bf16", 989e12), ("fp8", 1979e12)), 80e9, 3.35e12, 900e9, 700.0, 700.0,
              132, "hopper")
NET = comm.Network(8, 900e9, (50e9,) * 8, (comm.Tier("leaf", 32, True, 1.0),
                                         comm.Tier("core", 10**6, False, 1.0)))
TOKENS = 2 * 8192                  # a micro-batch of 2 sequences of 8,192


def job(framework="torchtitan", tp=1, recompute="selective", dtype="bf16", model=LLAMA,
        compiled=True):
    par = ParallelSpec(tp=tp, dp=8 // tp, sp=tp > 1)
    return JobSpec("j", model, par, 8 // tp * 2, 2, model.seq, recompute, dtype,
                   framework=framework, fp8_recipe="current", torch_compile=compiled)


def recomputed(j):
    """{name: FLOPs} of the first layer's recomputed GEMMs in the backward."""
    cat = "fp8" if j.dtype == "fp8" else j.dtype
    low = Lowering(j, Costs(GPU, cat, calibration=shipped()), NET)
    ops = low.template(0, 0, "B").ops
    return {o.name: o.flops for o in ops if o.cat == "recompute" and o.flops and o.layer == 0}


def test_without_tp_the_key_output_projection_and_w3_are_recomputed():
    """2 x tokens x n x k each: wk 1,024 x 4,096 (8 KV heads of 128), wo 4,096 x 4,096, w3
    14,336 x 4,096."""
    got = recomputed(job())
    assert got == pytest.approx({"recompute k proj": 2 * TOKENS * 1024 * 4096,
                                 "recompute out proj": 2 * TOKENS * 4096 * 4096,
                                 "recompute fc1 (w3)": 2 * TOKENS * 14336 * 4096})


def test_with_tp_the_kept_reduce_scatter_spares_the_output_projection():
    """TP 8 with SP: the reduce-scatter after wo is kept, so wo is not re-run; wk and w3 shrink
    to their 1/8 (one KV head of 128, 1,792 of the FFN)."""
    got = recomputed(job(tp=8))
    assert got == pytest.approx({"recompute k proj": 2 * TOKENS * 128 * 4096,
                                 "recompute fc1 (w3)": 2 * TOKENS * 1792 * 4096})


def test_a_non_gated_mlp_recomputes_no_mlp_matmul():
    """wq, wk, wv, wo, w1, w2: the sixth (w2) feeds only the block's output."""
    assert set(recomputed(job(model=GELU))) == {"recompute k proj", "recompute out proj"}


@pytest.mark.parametrize("framework,recompute", [("megatron", "selective"),
                                                 ("torchtitan", "modules"),
                                                 ("automodel", "selective")])
def test_only_torchtitans_selective_recomputes_matmuls(framework, recompute):
    assert not recomputed(job(framework=framework, recompute=recompute))


def test_a_quantised_job_casts_the_recomputed_inputs_again():
    j = job(dtype="fp8")
    low = Lowering(j, Costs(GPU, "fp8", calibration=shipped()), NET)
    names = {o.name for o in low.template(0, 0, "B").ops if o.layer == 0}
    assert {"recompute k proj quantise", "recompute out proj quantise",
            "recompute fc1 (w3) quantise"} <= names


def test_memory_keeps_neither_the_key_nor_w3_output():
    """Against Megatron-Core's recompute modules (the same norms and activations re-run): per
    token, the key projection's 1,024 and w3's 14,336 outputs of 2 bytes are not kept."""
    saved = activations.layer_activation_bytes(job(recompute="modules"), 0)
    titan = activations.layer_activation_bytes(job(), 0)
    assert saved - titan == pytest.approx(TOKENS * 2 * (1024 + 14336))
    tp8 = activations.layer_activation_bytes(job(tp=8, recompute="modules"), 0) \
        - activations.layer_activation_bytes(job(tp=8), 0)
    assert tp8 == pytest.approx(TOKENS * 2 * (1024 + 14336) / 8)


def ops_of(j, phase):
    low = Lowering(j, Costs(GPU, "bf16", calibration=shipped()), NET)
    return low, {o.name: o for o in low.template(0, 0, phase).ops if o.layer == 0}


def test_torchtitans_separate_projections_are_separate_gemms():
    """torchtitan's Llama runs wq, wk, wv (4,096, 1,024 and 1,024 columns) as three GEMMs on the
    same input, where Megatron-Core runs one of 6,144: the same FLOPs, each priced alone."""
    low, fwd = ops_of(job(recompute="none"), "F")
    c = low.c
    parts = sum(c.gemm("qkv", TOKENS, n, 4096)[0] for n in (4096, 1024, 1024))
    assert fwd["qkv"].dur == pytest.approx(parts)
    assert fwd["qkv"].flops == pytest.approx(2 * TOKENS * 6144 * 4096)
    w13 = 2 * c.gemm("fc1", TOKENS, 14336, 4096)[0]
    assert fwd["fc1"].dur == pytest.approx(w13)
    _, mega = ops_of(job(framework="megatron", recompute="none"), "F")
    assert mega["qkv"].dur == pytest.approx(c.gemm("qkv", TOKENS, 6144, 4096)[0])


@pytest.mark.parametrize("compiled,factor", [(True, (4, 3)), (False, (6, 3))])
def test_their_data_gradients_are_summed(compiled, factor):
    """Three partial input gradients of tokens x 4,096 in bf16 summed: compiled, one kernel
    reading 3 and writing 1 (4 tensors); eager, two additions of 3 tensors each (6); w1 and w3:
    3 either way."""
    _, bwd = ops_of(job(recompute="none", compiled=compiled), "B")
    tensor = TOKENS * 4096 * 2
    assert bwd["qkv dgrad sum"].nbytes == pytest.approx(factor[0] * tensor)
    assert bwd["fc1 dgrad sum"].nbytes == pytest.approx(factor[1] * tensor)
    _, mega = ops_of(job(framework="megatron", recompute="none"), "B")
    assert not [n for n in mega if n.endswith("dgrad sum")]


def test_async_tp_splits_the_overlapped_gemms_into_tp_steps():
    """torchtitan's async TP (torch.compile's micro-pipelined TP) runs the GEMM beside an
    all-gather or reduce-scatter as TP GEMMs of 1/TP of the rows: with TP 8, wq, wk, wv of
    512, 128 and 128 columns on 1/8 of the 16,384 rows, eight times; out proj before its
    reduce-scatter likewise, two steps at a time (torch's two streams: RING_STREAMS).
    Megatron-LM's `tp_overlap = full` keeps whole GEMMs."""
    j = job(tp=8, recompute="none").with_(tp_overlap="full")
    low, fwd = ops_of(j, "F")
    c, rows = low.c, TOKENS / 8
    assert low.ring == 8
    # the transfers the GEMMs lose `interfere` to: the bf16 input's all-gather, the output's
    # reduce-scatter (tests/test_seer_async_tp.py: the collectives' operators add a GEMM step)
    ag = comm.all_gather(NET, low.groups["tp"], TOKENS * 4096 * 2)
    rs = comm.reduce_scatter(NET, low.groups["tp"], TOKENS * 4096 * 2)
    assert fwd["qkv"].dur == pytest.approx(
        sum(c.gemm("qkv", rows, n, 4096, 8, streams=2)[0] for n in (512, 128, 128))
        + low.c.cal.interfere * ag)
    assert fwd["out proj"].dur == pytest.approx(
        c.gemm("out", rows, 4096, 512, 8, streams=2)[0] + low.c.cal.interfere * rs)
    mega, mfwd = ops_of(job(framework="megatron", tp=8, recompute="none")
                        .with_(tp_overlap="full"), "F")
    assert mega.ring == 1
    assert mfwd["out proj"].dur == pytest.approx(
        c.gemm("out", TOKENS, 4096, 512)[0] + low.c.cal.interfere
        * mfwd["attn reduce-scatter"].dur)


@pytest.mark.parametrize("tp,per_token", [(1, 2 * 4096 * (1024 + 4096 + 14336)),
                                          (8, 2 * 4096 * (1024 + 14336))])
def test_hardware_flops_count_the_recomputed_matmuls(tp, per_token):
    """HFU adds, per token of each of the 2 layers, wk's 4,096 x 1,024, w3's 4,096 x 14,336 and,
    without TP, wo's 4,096 x 4,096 multiply-adds."""
    from astral_dsl.seer.forecast import hardware_flops, model_flops
    j = job(tp=tp)
    tokens = j.global_batch * j.seq
    assert hardware_flops(j) - model_flops(j) == pytest.approx(tokens * per_token * 2)
    k = job(tp=tp, recompute="modules")
    assert hardware_flops(k) == model_flops(k)
