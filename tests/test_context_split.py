"""Context parallelism's split of the sequence (seer/validate_layout.py cp_split): the rule
validation and `astral search` share, and the ring's kernel priced once a ring."""
from __future__ import annotations

import pytest

from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.validate_layout import CP_TILE, cp_split

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 300e9, (25e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                      Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def test_the_sequence_splits_into_two_chunks_a_rank_of_at_least_a_tile():
    assert CP_TILE == 128
    assert cp_split(8192, 1) is None            # no split
    assert cp_split(8190, 3) is None            # 8,190 / 6 = 1,365 tokens a chunk
    assert cp_split(8190, 2) == "seq"           # 8,190 / 4 = 2,047.5: not 2 x 2 equal chunks
    assert cp_split(8192, 32) is None           # 8,192 / 64 = 128: one tile a chunk
    assert cp_split(8192, 64) == "tile"         # 8,192 / 128 = 64 < 128
    assert cp_split(8192, 4096) == "tile"       # 1 token a chunk (the 524,288-GPU search's)
    assert cp_split(131072, 512) is None        # 131,072 / 1,024 = 128


def _ring(framework="megatron", compiled=False, phase="F"):
    """cp = 8 on 8,192 tokens, one layer (stage 1 of 32), and the Costs that priced it."""
    par = ParallelSpec(tp=1, pp=32, dp=1, cp=8, sp=False)
    job = JobSpec("cp", LLAMA_8B, par, 8, 1, 8192, "none", "bf16", framework=framework,
                  torch_compile=compiled)
    costs = Costs(H100, "bf16")
    calls = []
    flash = costs.flash
    costs.flash = lambda *a, **k: calls.append(a) or flash(*a, **k)
    return Lowering(job, costs, NET).template(1, 0, phase).ops, costs, calls


def _flash_s(costs, flops, keys, backward=False):
    """A fused-attention kernel's time by hand: flops / (989 TFLOP/s x attn_eff x keys / (keys
    + attn_seq_half) [x 0.63 / 0.73 backward]) + 4 us (head 128: the head factor is 1)."""
    cal = costs.cal
    eff = cal.attn_eff * keys / (keys + cal.attn_seq_half) * (0.63 / 0.73 if backward else 1)
    return flops / (989e12 * eff) + 4e-6


def test_the_ring_prices_each_step_on_its_own_shape():
    """cp = 8 on 8,192 tokens: a rank holds chunks r and 15 - r, R = 1,024 rows. Step 0 is
    causal over its own 1,024 keys; a later step attends all 1,024 rows to the first chunk
    (512 keys) of an earlier rank's block, or its second chunk's 512 rows to all 1,024 keys of
    a later rank's, unmasked (Transformer Engine's cp_p2p_fwd_prepare_qkv, PyTorch's
    _templated_ring_attention), and waits for the slower: 512 keys a query. Every step is
    the same 2 x 2 x 32 heads x 128 x 1,024 x 512 FLOPs; the kernels are priced once a kind
    (3 pricings, not 8: a 524,288-GPU search had priced 615,867 for 1,891 rings)."""
    ops, costs, calls = _ring()
    kernels = [o for o in ops if o.name == "flash attention"]
    assert len(calls) == 3 and len(kernels) == 8 and len({id(o) for o in kernels}) == 8
    flops = 2 * 2 * 32 * 128 * 1024 * 512
    assert all(o.flops == flops for o in kernels)
    assert kernels[0].dur == pytest.approx(_flash_s(costs, flops, 1024))
    assert all(o.dur == pytest.approx(_flash_s(costs, flops, 512)) for o in kernels[1:])
    assert sum(o.stream == "cp" for o in ops) == 7


def test_transformer_engine_merges_the_outputs_after_the_ring_and_the_gradients_each_step():
    """Forward (TE 2.9 flash_attn_fwd_out_correction, after the last step): a fused kernel a
    step reading the step's and the running 16-bit output and writing it, 3 x 2 bytes x 1,024
    rows x 32 heads x 128 = 25,165,824 bytes. Backward (dq.add_, dk.add_, dv.add_ after each
    step, 3 kernels): 6 bytes x (1,024 x 32 x 128 query + keys x 8 KV heads x 256 key and value
    elements): 37,748,736 bytes at step 0 (1,024 keys), 31,457,280 at the others (512)."""
    ops, costs, _ = _ring()
    names = [o.name for o in ops if o.name in ("flash attention", "cp merge")]
    assert names == ["flash attention"] * 8 + ["cp merge"] * 8
    merges = [o for o in ops if o.name == "cp merge"]
    assert {o.nbytes for o in merges} == {25_165_824}
    assert merges[0].dur == pytest.approx(25_165_824 / (3350e9 * 0.85) + 4e-6)
    ops, _, _ = _ring(phase="B")
    names = [o.name for o in ops if o.name in ("flash attention bwd", "cp merge bwd")]
    assert names == ["flash attention bwd", "cp merge bwd"] * 8
    merges = [o for o in ops if o.name == "cp merge bwd"]
    assert [o.nbytes for o in merges] == [37_748_736] + [31_457_280] * 7
    ring = [i for i, o in enumerate(ops) if o.stream == "cp"]
    # step k's gradients are merged once the block sent during step k has arrived (TE: "wait
    # until dKV is received"); the last step sends none
    assert all(ring[k] in merges[k].deps for k in range(7)) and len(ring) == 7
    assert merges[0].dur == pytest.approx(37_748_736 / (3350e9 * 0.85) + 3 * 4e-6)


def test_pytorch_merges_each_step_in_fp32():
    """PyTorch 2.6's _SDPAMerger (convert_to_f32) after each step. Eager: the output cast to
    fp32 (6 bytes an element), out - block_out (12), the sigmoid-weighted product (8) and the
    difference (12), 38 bytes x 1,024 x 32 x 128 = 159,383,552, in 4 kernels; a later rank's
    block seen by half the rows would be 38 x 512 rows plus the whole output's torch.cat (8
    bytes x 1,024 rows): 79,691,776 + 33,554,432, under the 1,024-row step's. Compiled: one
    fused kernel, 10 bytes an element (the fp32 output read and written, the step's 16-bit
    one read): 41,943,040."""
    ops, costs, _ = _ring("torchtitan")
    names = [o.name for o in ops if o.name in ("flash attention", "cp merge")]
    assert names == ["flash attention", "cp merge"] * 8
    merges = [o for o in ops if o.name == "cp merge"]
    assert {(o.nbytes, o.kernels) for o in merges} == {(159_383_552, 4)}
    # torchtitan repeats the 8 KV heads to the 32 query heads before the attention the ring
    # replaces (repeat_kv): one all-gather of the 7 other blocks, 7 x 1,024 x 32 x 256 x 2 bytes
    assert [o.nbytes for o in ops if o.stream == "cp"] == [7 * 1024 * 32 * 256 * 2]
    ops, _, _ = _ring("torchtitan", compiled=True)
    assert {(o.nbytes, o.kernels) for o in ops if o.name == "cp merge"} == {(41_943_040, 1)}


def test_pytorch_passes_the_fp32_key_and_value_gradients_on_after_every_step():
    """PyTorch 2.6's ring backward (_templated_ring_attention_backward): the 7 other blocks'
    16-bit keys and values gathered once with step 0's kernel (7 x 1,024 rows x 32 repeated
    heads x 256 x 2 bytes = 117,440,512, 7 transfers of 16,777,216 bytes: 7 x (7 us + 16,777,216
    / (300 GB/s x 0.8)) = 538.3 us), waited for by step 1's kernel; the fp32 key and value
    gradients (1,024 x 32 x 256 x 4 = 33,554,432 bytes, 7 us + 139.8 us) sent on after each of
    the 8 steps' merges (dkv_rotater, an all-to-all permute), step k's merge waiting for the
    block sent after step k - 1, and the last waited for by what follows the ring."""
    ops, _, _ = _ring("torchtitan", phase="B")
    ring = [i for i, o in enumerate(ops) if o.stream == "cp"]
    gather, sends = ring[0], ring[1:]
    assert ops[gather].nbytes == 117_440_512 and len(sends) == 8
    assert ops[gather].dur == pytest.approx(7 * (7e-6 + 16_777_216 / 240e9))
    assert all(ops[i].nbytes == 33_554_432 for i in sends)
    assert ops[sends[0]].dur == pytest.approx(7e-6 + 33_554_432 / 240e9)
    kernels = [i for i, o in enumerate(ops) if o.name == "flash attention bwd"]
    merges = [i for i, o in enumerate(ops) if o.name == "cp merge bwd"]
    assert gather in ops[kernels[1]].deps and gather not in ops[kernels[0]].deps
    assert all(sends[k - 1] in ops[merges[k]].deps for k in range(1, 8))
    assert all(sends[k - 1] not in ops[kernels[k]].deps for k in range(1, 8))
    assert all(ops[s].deps == (m,) for s, m in zip(sends, merges))
    after = next(o for o in ops[merges[-1] + 1:] if o.stream == "compute")
    assert sends[-1] in after.deps


def test_a_compiled_blocks_ring_waits_for_each_transfer_where_it_is_issued():
    """Traced into a compiled block a functional collective is waited for at once (torch 2.6.0
    _functional_collectives.py `_maybe_wrap_tensor`: `wait_tensor` while tracing; Inductor's
    `reorder_for_compute_comm_overlap` off): step 0's kernel waits for the all-gather of the
    7 other blocks (forward and backward), and each step's backward kernel for the fp32
    gradients the previous step sent on. Eager, as the test above: only step 1 waits for the
    gather, and the kernels for no gradients."""
    for phase, name in (("F", "flash attention"), ("B", "flash attention bwd")):
        ops, _, _ = _ring("torchtitan", compiled=True, phase=phase)
        ring = [i for i, o in enumerate(ops) if o.stream == "cp"]
        kernels = [i for i, o in enumerate(ops) if o.name == name]
        assert ring[0] in ops[kernels[0]].deps
        assert ops[kernels[0]].start >= ops[ring[0]].end
        if phase == "B":
            assert all(ring[k] in ops[kernels[k]].deps for k in range(1, 8))
        eager, _, _ = _ring("torchtitan", phase=phase)
        first = next(i for i, o in enumerate(eager) if o.stream == "cp")
        step0 = next(o for o in eager if o.name == name)
        assert first not in step0.deps
