"""The lowering's context-parallel attention (a mixin of lower.Lowering, whose docstring tells
the model; the attention sub-block around it: lower_attention.py): the ring of key/value blocks
that fused attention runs over when `cp` > 1, Transformer Engine's and PyTorch's, each step's
kernel priced on its own shape and its partial results merged."""
from __future__ import annotations

from astral_dsl.seer import comm
from astral_dsl.seer.template import Op


class RingOps:
    """Lowering's context-parallel ring (attributes: lower.Lowering)."""

    def _cp_attention(self, b, name, ring, kv, L, backward):
        """Context parallelism's ring (Transformer Engine 2.9, attention/dot_product_attention/
        context_parallel.py, AttnFuncWithCPAndKVP2P: "Split attention compute into multiple
        steps, and overlap current-step compute with next-step communication"): cp steps, step
        i's kernel on the key/value block received at step i - 1 while block i + 1 travels.
        torchtitan's default (`context_parallel_rotate_method = "allgather"`, torchtitan 0.2.0
        config/job_config.py) gathers every other rank's block at once, overlapped with the
        first step only (PyTorch's ring attention templates). Each step's kernel is priced on
        its own shape and its partial results merged (_cp_steps); Transformer Engine merges
        the forward's outputs after the last step and the backward's gradients after each,
        once the block that carries the key and value gradients on has arrived ("wait until
        dKV is received"); PyTorch merges after each step. Traced into a compiled block
        (JobSpec.compiled_blocks) a functional collective is waited for where it is issued:
        torch 2.6.0 distributed/_functional_collectives.py `_maybe_wrap_tensor` returns
        `wait_tensor(self)` while tracing, and Inductor keeps that order unless
        `reorder_for_compute_comm_overlap` (_inductor/config.py, default False; torchtitan
        0.1.0 never sets it) moves it: the ring's transfers overlap no kernel."""
        gather = self.job.framework == "torchtitan"
        if gather and backward:
            self._torch_ring_bwd(b, name, ring, kv, L)
            return
        step = comm.p2p(self.net, self.groups["cp"], kv)
        steps = self._cp_steps(name, L, backward)
        held, after = None, []
        for i, (kernel, merge) in enumerate(steps):
            nxt = None
            if i < self.cp - 1 and (i == 0 or not gather):  # with this step's kernel, for the next
                dur, nb = (step * (self.cp - 1), kv * (self.cp - 1)) if gather else (step, kv)
                nxt = b.add(Op(ring, "comm", "cp", dur, 0.0, nb, "cp", L), chain=False)
                if self.job.compiled_blocks:
                    nxt = None                            # waited for by this step's kernel
                else:
                    b.pending.remove(nxt)
            if held is not None:
                b.pending.append(held)
            b.add(Op(*kernel))
            if backward and not gather and nxt is not None:
                b.pending.append(nxt)     # the gradients' merge waits for the block it updates
                nxt = None
            if backward or gather:
                self._ew(b, *merge)
            else:
                after.append(merge)
            held = nxt
        for merge in after:
            self._ew(b, *merge)

    def _torch_ring_bwd(self, b, name, ring, kv, L):
        """PyTorch's ring backward (2.6, torch/distributed/tensor/experimental/_attention.py,
        _templated_ring_attention_backward; torchtitan's 2024-12 rows ran a nightly of its
        era): the other ranks' key and value blocks gathered once (`kv_rotater`, the rotate
        method: all-gather by default), with the first step's kernel; the key and value
        gradients accumulated in fp32 (`convert_to_f32`) and sent on to the next rank after
        every step (`dkv_rotater`, always `_RotateMethod.ALL_TO_ALL`: a permute), each step's
        merge waiting for the block the previous rank sent after its own step, and the last
        block waited for after the last step (`dkv_rotater.next_buffer()`), with no kernel
        left to hide it. `kv`: the bytes of a 16-bit key and value block and its gradients,
        those of an fp32 gradient block. In a compiled block each is waited for where it is
        issued (_cp_attention): the gathered blocks by the first step, the gradients by the
        next."""
        cp, group = self.cp, self.groups["cp"]
        waited = self.job.compiled_blocks
        half = kv / 2                                     # the 16-bit keys and values
        gathered = b.add(Op(ring, "comm", "cp", comm.p2p(self.net, group, half) * (cp - 1),
                            0.0, half * (cp - 1), "cp", L), chain=False)
        if not waited:
            b.pending.remove(gathered)
        send, sent = comm.p2p(self.net, group, kv), None
        for i, (kernel, merge) in enumerate(self._cp_steps(name, L, True)):
            if i == 1 and not waited:
                b.pending.append(gathered)                # next_buffer(): the gathered blocks
            b.add(Op(*kernel))
            if sent is not None and not waited:
                b.pending.append(sent)                    # the previous rank's gradients
            self._ew(b, *merge)
            sent = b.add(Op(ring + " grad", "comm", "cp", send, 0.0, kv, "cp", L), chain=False)
            if i < cp - 1 and not waited:
                b.pending.remove(sent)                    # the last stays: waited for next

    def _ring_kv_heads(self) -> int:
        """The key/value heads the ring carries and merges: torchtitan repeats them to the
        query heads before scaled-dot-product attention, which the ring replaces (torchtitan
        0.1.0 models/llama3/model/model.py, Attention.forward: repeat_kv)."""
        return self.heads if self.job.framework == "torchtitan" else self.kv_heads

    def _cp_steps(self, name, L, backward):
        """The ring's steps on a rank, each `(kernel, merge)`: its attention kernel (the
        operator's arguments) and the kernel(s) merging its partial result (`_ew`'s arguments).
        With the load-balanced split a rank holds chunks r and 2 cp - 1 - r of
        the sequence (R = s / cp rows) and every step computes R x R / 2 scores
        (Transformer Engine 2.9 context_parallel.py cp_p2p_fwd_prepare_qkv and
        cp_p2p_fwd_flash_attn, as 1.9's attention.py AttnFuncWithCP; PyTorch 2.6
        torch/distributed/tensor/experimental/_attention.py, _templated_ring_attention): step 0
        is causal over the rank's own R keys; a block from a rank before it is attended in
        full by all R queries but only its first chunk, R / 2 keys (`causal=False`); a block
        from a rank after it, all its R keys, by the second chunk's R / 2 queries alone. At
        step i >= 1 ranks r >= i take the first kind and the others the second, so each such
        step waits for the slower of the two. A windowed model keeps one kernel a step on
        s / cp keys (_flash_args), each merged as a step of all the rank's rows."""
        m, R = self.job.model, self.job.seq / self.cp
        merge = self._cp_merge(name, L, backward)
        if m.window and m.window < self.job.seq:
            kernel = self._flash_args(name, L, backward, steps=self.cp)
            return [(kernel, merge(1.0, R))] * self.cp
        diag = (self._flash_step(name, L, backward, 1.0, R, True), merge(1.0, R))
        kinds = [(self._flash_step(name, L, backward, 1.0, R / 2, False), merge(1.0, R / 2)),
                 (self._flash_step(name, L, backward, 0.5, R, False), merge(0.5, R))]
        slow = max(kinds, key=lambda k: k[0][3] + self.c.stream(k[1][0], k[1][1], k[1][4]))
        return [diag] + [slow] * (self.cp - 1)

    def _flash_step(self, name, L, backward: bool, q_share: float, keys: float,
                    causal: bool) -> tuple:
        """One ring step's fused attention on a rank: `q_share` of its s / cp query rows
        against `keys` keys, causal (half of them on average) or not, priced at the
        efficiency of its own key length."""
        rows = q_share * self.job.seq / self.cp
        parts = [(1.0, keys / 2 if causal else keys, keys)]
        return self._flash_priced(name, L, backward, rows, 1, parts, self.cp)

    def _cp_merge(self, name, L, backward):
        """merge(q_share, keys): `_ew`'s arguments for merging one ring step's partial result
        (its output and log-sum-exp forward, its gradients backward) on a rank.
        Transformer Engine 2.9 (context_parallel.py): forward, flash_attn_fwd_out_correction
        (one fused kernel) rescales the step's 16-bit output and adds it into the output,
        reading both and writing one (3 x 2 bytes an output element; the log-sum-exp's
        correction, per row and head, is left out); backward, dq.add_, dk.add_ and dv.add_
        (3 kernels, 3 x 2 bytes a gradient element). PyTorch 2.6 (_attention.py, _SDPAMerger
        with convert_to_f32; _templated_ring_attention_backward), eager: forward, the output
        cast to fp32 (2 + 4 bytes), out - block_out (12), the sigmoid-weighted product (8) and
        the difference (12): 38 bytes an output element in 4 kernels (the log-sum-exp's 5
        are per row: left out); a step of half the queries rebuilds the whole output with
        torch.cat (_partial_update: 8 bytes a whole element); backward, the fp32 gradients
        accumulated (4 + 2 + 4 bytes a query, key and value element), the key and value
        gradients concatenated for the next rank (8 bytes a whole element), a half step
        rebuilding its whole gradient (8 bytes a whole element): 4 kernels. Compiled
        (`torch_compile`: the templates are traced into the block's graph, _maybe_wait's "when
        tracing"), each merge is ASSUMED to be one fused kernel reading the fp32 result and the
        step's 16-bit one and writing the fp32 result: 10 bytes an element."""
        m, bsz, R = self.job.model, self.job.micro, self.job.seq / self.cp
        torch = self.job.framework == "torchtitan"
        fused = torch and self.job.torch_compile
        out_row = bsz * self.heads * m.v_dim
        q_row = bsz * self.heads * m.qk_dim
        kv_row = bsz * self._ring_kv_heads() * (m.qk_dim + m.v_dim)
        label = name.replace("flash attention", "cp merge")

        def merge(q_share, keys):
            rows, half = q_share * R, q_share < 1 or keys < R
            if fused:
                elems = rows * out_row if not backward else rows * q_row + keys * kv_row
                return label, 10 * elems, L, "elementwise", 1
            if not backward:
                if torch:
                    nbytes = 38 * rows * out_row + (8 * R * out_row if q_share < 1 else 0)
                    return label, nbytes, L, "elementwise", 4 + (q_share < 1)
                return label, 3 * self.elem * rows * out_row, L, "elementwise", 1
            if torch:
                nbytes = (10 * (rows * q_row + keys * kv_row) + 8 * R * kv_row
                          + (8 * R * (q_row if q_share < 1 else kv_row) if half else 0))
                return label, nbytes, L, "elementwise", 4 + half
            return label, 3 * self.elem * (rows * q_row + keys * kv_row), L, "elementwise", 3
        return merge
