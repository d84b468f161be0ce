"""A hybrid Mamba-2 model's layer widths (seer/lower_mamba.py `_mamba_dims`): the inner width is
mamba_expand x hidden, or, as Megatron-Core sets it from mamba_num_heads (ssm/mamba_mixer.py),
mamba_heads x mamba_head_dim; the in-projection makes z, x, B, C and dt (Dao and Gu 2024,
"Transformers are SSMs", section 7)."""
from __future__ import annotations

import attrs

from astral_dsl.runs.row_model import stdlib_models
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


def test_the_scan_is_its_triton_kernels_bytes_and_products():
    # per token, bf16 (e = 2), d = 4,096, G N = 8 x 128 = 1,024, s = h P N / Q = 64 x 64 x 128 /
    # 128 = 4,096 fp32-kept state elements, c = G Q = 8 x 128 = 1,024 chunk products, h = 64
    # (mamba_ssm 2.2.4 ssd_combined.py, lower_mamba.py `_ssd_kernels`); forward:
    #   chunk_cumsum (e + 8) h = 640; chunk_state e d + e G N + 8 h + 4 s = 27,136;
    #   state_passing (4 + e) s = 24,576; bmm_chunk 2 e G N + 4 c = 8,192;
    #   chunk_scan 4 c + 4 e d + e G N + e s + 8 h = 47,616: 108,160 bytes in 5 kernels;
    # backward: clone 256, chunk_cumsum 640, bmm_chunk 8,192, chunk_state 27,136,
    #   state_passing (fp32 out) 8 s = 32,768, dz 6 e d = 49,152, dstates 26,880,
    #   state_passing_bwd (8 + 2 e) s + 12 h = 49,920, dx 3 e d + 12 h + e G N + 4 c + e s =
    #   39,680, dB 23,296, its sum 8 G N = 8,192 and its dA cumsum 8 h = 512, dC 23,040 and its
    #   sum 8,192, dCB 2 e d + 8 h + 4 c = 20,992 and its sum 8 c = 8,192, two bmm_chunk_bwd
    #   2 x 12,288, flips and cumsum 3 x 8 h = 1,536, ddAcs 22,016 and its sum 20 h = 1,280,
    #   two adds 2 x 12 h = 1,536,
    #   chunk_cumsum_bwd (8 + 2 e) h = 768: 378,752 bytes in 26 kernels;
    #   and 10 small launches: the two sums of D's partials (4 h x ceil(128 / 32) / 128 = 8 each)
    #   and their casts to the bf16 parameter's dtype (per layer: 0 a token),
    #   state_passing_bwd's dA sum (4 h / Q = 2), the pre-hooks' zeroed dt and dA gradients
    #   (4 h = 256 each), the last position's dA added in place (12 h / Q = 6), the zeroed dA
    #   and dt-bias gradients (per layer: 0 a token): 536 more, 379,288 bytes in 36 kernels
    low, _ = _in_proj(HYBRID)
    assert low._ssd_bytes(False) == 8192 * 108160
    assert low._ssd_bytes(True) == 8192 * 379288
    assert (len(low._ssd_kernels(False)), len(low._ssd_kernels(True))) == (5, 36)
    names = [n for n, _, _ in low._ssd_kernels(True)]
    assert names.count("sum dD") == 2 and names.index("zero ddt") + 1 == names.index("bwd_dx")
    assert [names[i + 1] for i, n in enumerate(names) if n == "sum dD"] == ["cast dD"] * 2
    assert names.index("zero ddA") + 1 == names.index("bwd_dC")
    # products per token: forward 2 h P N (states) + 2 G Q N (C B^T) + 2 h P (N + Q) (output)
    #   = 1,048,576 + 262,144 + 2,097,152 = 3,407,872; backward the states and C B^T again, the
    #   state gradients, dx (2 h P (Q + N)), dB, dC, dCB, ddA (2 h P N or 2 h Q P each) and two
    #   C B^T gradients: 8 x 1,048,576 + 3 x 262,144 = 9,175,040
    assert low._ssd_flops(False) == 8192 * 3407872
    assert low._ssd_flops(True) == 8192 * 9175040
    scan = next(o for o in low.template(0, 0, "F").ops if o.name == "ssd scan")
    assert scan.nbytes == 8192 * 108160 and scan.kernels == 5
    # every kernel memory-bound on a GB200 (the output kernel's products, 2,097,152 x 152/128
    # FLOPs a token at 2.5 PFLOP/s x a 16-bit GEMM efficiency of ~0.45, take a third of its
    # 47,616 bytes at 85 % of 8 TB/s), one after another: the bytes at 6.8 TB/s and 5 x 4 us
    assert abs(scan.dur - (8192 * 108160 / 6.8e12 + 5 * 4e-6)) < 1e-12


def test_two_sequences_a_micro_batch_copy_the_scan_s_input_and_output():
    # Megatron-Core's _ssm_training: rearrange(zxBCdt, "l b d -> b l d").contiguous() and
    # rearrange(y, "b l d -> l b d").contiguous() copy with b = 2 (a view with b = 1); the input's
    # gradient reaches TE's backward transposed and is copied by its reshape:
    # forward 2 x 16,384 tokens x 10,304 x 2 bytes and 2 x 16,384 x 4,096 x 2, backward the first
    job = JobSpec("j", HYBRID, ParallelSpec(tp=1, dp=8), 16, 2, 8192, "none", "bf16")
    low = Lowering(job, Costs.of(job, GB200), NET)
    fwd = {o.name: o.nbytes for o in low.template(0, 0, "F").ops}
    bwd = {o.name: o.nbytes for o in low.template(0, 0, "B").ops}
    assert fwd["mamba layout copy"] == 2 * 16384 * 10304 * 2
    assert fwd["mamba output copy"] == 2 * 16384 * 4096 * 2
    assert bwd["mamba layout copy bwd"] == 2 * 16384 * 10304 * 2
    one, _ = _in_proj(HYBRID)
    assert not any("copy" in o.name for ph in "FB" for o in one.template(0, 0, ph).ops)
    # the gated norm (no z: the scan gated it) reads and writes, its backward reads two, writes
    assert fwd["mamba gated norm"] == 2 * 16384 * 4096 * 2
    assert bwd["mamba gated norm bwd"] == 3 * 16384 * 4096 * 2


def test_the_mamba_layer_s_small_launches():
    # Megatron-Core 0.16.0 _ssm_training: -exp(A_log.float()) and dt_bias.float() on 64 heads of
    # bf16 parameters, D passed as it is (D_has_hdim False): 4 kernels, 64 x (6 + 8 + 8 + 6) =
    # 1,792 bytes; backward 4 (dt_bias's cast back 6, the negation 8, the exponential's product
    # 12, A_log's cast back 6): 64 x 32 = 2,048; causal-conv1d 1.5.2's backward zeroes and casts the
    # weight and bias gradients around its kernel, after the recomputed forward: 6 kernels;
    # the gated norm's backward sums and casts its weight-gradient partials: 3 kernels
    low, _ = _in_proj(HYBRID)
    fwd = {o.name: o for o in low.template(0, 0, "F").ops}
    bwd = {o.name: o for o in low.template(0, 0, "B").ops}
    assert (fwd["mamba A dt D"].nbytes, fwd["mamba A dt D"].kernels) == (1792, 4)
    assert (bwd["mamba A dt D bwd"].nbytes, bwd["mamba A dt D bwd"].kernels) == (2048, 4)
    assert bwd["mamba conv1d bwd"].kernels == 6 and bwd["mamba gated norm bwd"].kernels == 3
    # launch-bound: 4 x 4 us and 1,792 bytes at 85 % of 8 TB/s
    assert abs(fwd["mamba A dt D"].dur - (4 * 4e-6 + 1792 / 6.8e12)) < 1e-15
    # the norm's backward: 3 x 8,192 x 4,096 x 2 bytes at 6.8 TB/s and 3 x 4 us
    assert abs(bwd["mamba gated norm bwd"].dur - (3 * 8192 * 4096 * 2 / 6.8e12 + 3 * 4e-6)) < 1e-12


def test_a_hybrid_model_s_attention_has_no_rotary_embedding_under_megatron():
    # Megatron-Core's MambaModel defaults to position_embedding_type "none" (0.16.1
    # models/mamba/mamba_model.py:76), as Megatron-Bridge's MambaModelProvider does and its
    # Nemotron-H bridge sets: the hybrid's attention layer ("*") runs no RoPE either way; the same
    # attention in a Llama-style model rotates its queries and keys, read and written once:
    # 2 x 8,192 tokens x (32 + 2) x 128 x 2 bytes = 142,606,336
    low, _ = _in_proj(HYBRID)
    assert not any("rope" in o.name for ph in "FB" for o in low.template(0, 0, ph).ops)
    assert any(o.name == "flash attention" for o in low.template(0, 0, "F").ops)
    dense = attrs.evolve(HYBRID, pattern="", mamba_heads_stated=0)
    job = JobSpec("j", dense, ParallelSpec(tp=1, dp=8), 8, 1, 8192, "none", "bf16")
    ops = Lowering(job, Costs.of(job, GB200), NET).template(0, 0, "F").ops
    assert [o.nbytes for o in ops if o.name == "rope"] == [142606336] * 4
