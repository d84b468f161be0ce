"""The lowering's Mamba-2 layer (a mixin of lower.Lowering): the in-projection, the depthwise
convolution, the chunked state-space scan (SSD) and its kernels' bytes, the gated norm, the
out-projection, and their backward."""
from __future__ import annotations

from astral_dsl.seer.template import Op


class MambaOps:
    """Lowering's Mamba-2 operators (attributes: lower.Lowering)."""

    def _mamba_dims(self):
        """Per rank: (d_inner, heads, groups, in_proj width, conv channels) of a Mamba-2 layer
        (Dao and Gu 2024, "Transformers are SSMs", section 7: the in-projection makes z, x, B, C
        and dt; a depthwise convolution runs over x, B and C); TP shards heads and groups."""
        m, tp = self.job.model, self.tp
        d_inner = m.mamba_inner / tp
        heads = max(1.0, m.mamba_heads / tp)
        groups = max(1.0, m.mamba_groups / tp)
        conv = d_inner + 2 * groups * m.mamba_state
        return d_inner, heads, groups, 2 * d_inner + 2 * groups * m.mamba_state + heads, conv

    def _ssd_flops(self, backward: bool) -> float:
        """The chunked state-space scan (SSD, Dao and Gu 2024, section 6) of a rank's tokens:
        per token and head, the intra-chunk products over the chunk (Q x (N + P) multiply-adds
        per head and group) and the state updates and reads (2 N P)."""
        m = self.job.model
        d_inner, heads, groups, _, _ = self._mamba_dims()
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        per_token = 2 * (heads * (Q * P + 2 * N * P) + groups * Q * N)
        return self.tokens * per_token * (2.0 if backward else 1.0)

    def _ssd_bytes(self, backward: bool) -> float:
        """HBM bytes of the chunked scan's Triton kernels over a rank's tokens (mamba_ssm 2.2.4,
        ops/triton/ssd_combined.py, which Megatron-Core's Mamba layer calls through
        mamba_split_conv1d_scan_combined), per token, e the activations' bytes, d the inner
        width, G N the groups' B or C width, h P N / Q a chunk's states per token, G Q the
        chunk products C B^T per token:
        forward (chunk_cumsum, chunk_state, state_passing, bmm_chunk, chunk_scan): x read twice,
        z once, the output and the ungated output written, 5 e d; B and C read twice each,
        4 e G N; the states written in fp32, read and written again at e, read at e,
        (8 + 2 e) h P N / Q; C B^T written and read in fp32, 8 G Q; dt and its cumulative sum
        (e + 8) h;
        backward (_mamba_chunk_scan_combined_bwd: the states and C B^T recomputed, then the dz,
        dstates, state-passing, dx, dB, dC and dCB kernels and two bmm backwards): 15 e d,
        15 e G N, (24 + 5 e) h P N / Q, 20 G Q, 2 (e + 8) h."""
        m, e = self.job.model, self.elem
        d, heads, groups, _, _ = self._mamba_dims()
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        states, gn, cb = heads * P * N / Q, groups * N, groups * Q
        if backward:
            per = 15 * e * d + 15 * e * gn + (24 + 5 * e) * states + 20 * cb + 2 * (e + 8) * heads
        else:
            per = 5 * e * d + 4 * e * gn + (8 + 2 * e) * states + 8 * cb + (e + 8) * heads
        return self.tokens * per

    def _mamba_fwd(self, b, L, pre):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._norm_fwd(b, pre + "input norm", L)
        self._linear(b, pre + "mamba in proj", tokens, width, m.hidden, L, norm_fed=True,
                     gather=pre + "mamba all-gather")
        self._ew(b, pre + "mamba conv1d", 2 * tokens * conv * elem, L)
        flops = self._ssd_flops(False)
        nb = self._ssd_bytes(False)
        b.add(Op(pre + "ssd scan", "attention", "compute",
                 self.c.flash(pre + "ssd scan", flops, nb, False, m.mamba_head, m.mamba_chunk),
                 flops, nb, "", L))
        self._ew(b, pre + "mamba gated norm", 3 * tokens * d_inner * elem, L, "norm")
        self._linear(b, pre + "mamba out proj", tokens, m.hidden, d_inner, L)
        self._tp_out(b, pre + "mamba", L)
        self._residual(b, pre + "residual", L)

    def _mamba_bwd(self, b, L):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._residual(b, "residual bwd", L)
        self._linear_bwd(b, "mamba out proj", tokens, m.hidden, d_inner, L, column=False,
                         grad_gather="mamba grad all-gather")
        self._ew(b, "mamba gated norm bwd", 5 * tokens * d_inner * elem, L, "norm")
        flops = self._ssd_flops(True)
        nb = self._ssd_bytes(True)
        b.add(Op("ssd scan bwd", "attention", "compute",
                 self.c.flash("ssd scan bwd", flops, nb, True, m.mamba_head, m.mamba_chunk),
                 flops, nb, "", L))
        # the convolution recomputed (mamba_split_conv1d_scan_combined saves its input only:
        # read and write) before its backward (read the input and the gradient, write one)
        self._ew(b, "mamba conv1d bwd", 5 * tokens * conv * elem, L)
        self._linear_bwd(b, "mamba in proj", tokens, width, m.hidden, L, column=True)
        self._ew(b, "input norm bwd", 3 * self.sp_tokens * m.hidden * elem, L, "norm")
