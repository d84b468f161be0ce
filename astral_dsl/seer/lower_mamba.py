"""The lowering's Mamba-2 layer (a mixin of lower.Lowering): the in-projection, the depthwise
convolution, the chunked state-space scan (SSD) as the sequence of Triton kernels mamba_ssm runs
(each kernel's FLOPs and HBM bytes), the gated norm, the out-projection, and their backward."""
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

    def _ssd_kernels(self, backward: bool):
        """The chunked scan (SSD, Dao and Gu 2024, section 6) as the Triton kernels of mamba_ssm
        2.2.4 (ops/triton/ssd_combined.py, which Megatron-Core's Mamba layer calls through
        mamba_split_conv1d_scan_combined, z gated in the scan, no norm weight): per kernel, its
        HBM bytes and its matrix products as (FLOPs, inner dimension), over a rank's tokens.

        Per token, e the activations' bytes, d the inner width, G N the groups' B or C width,
        s = h P N / Q a chunk's states per token, c = G Q the chunk products C B^T per token, h
        the heads; the states and C B^T are kept in fp32 (4 bytes) where the code says so, dt
        and its cumulative sum dA are fp32 per head and position (8 h read together). The
        products: a chunk's states from B and x (2 h P N, over the Q positions), C B^T (2 G Q N,
        over N), the chunk's output from C, the states and C B^T (2 h P (N + Q)).
        Forward (_mamba_chunk_scan_combined_fwd): chunk_cumsum (dt in, dt and dA out in fp32),
        chunk_state (x, B, dt, dA in; fp32 states out), state_passing (fp32 states in, e out),
        bmm_chunk (C and B in, fp32 C B^T out), chunk_scan (C B^T, x, z, C, states, dt, dA in;
        the gated and the ungated output out).
        Backward (_mamba_chunk_scan_combined_bwd): dt's clone; chunk_cumsum, bmm_chunk,
        chunk_state and state_passing again (fp32 out); chunk_scan_bwd_dz (x, z, the ungated
        output and dout in; dz and the ungated gradient out); chunk_scan_bwd_dstates (C, dout
        in; fp32 state gradients out: 2 h P N); state_passing_bwd (the fp32 states and their
        gradients in, both out at e); chunk_scan_chunk_state_bwd_dx (x, B, C B^T, dout, the
        state gradients in; dx out: 2 h P (Q + N)); chunk_state_bwd_db (x, the state gradients,
        B in; dB in fp32, summed over its splits by a reduction: one split once batch x chunks x h
        fills the SMs h / G times, as at training sizes; its dA gradient's cumulative sum:
        2 h P N); chunk_scan_bwd_dC (the states, dout, C in; dC in fp32, summed: 2 h P N);
        chunk_scan_bwd_dcb (x, dout in; the fp32 C B^T gradient, summed: 2 h Q P); two
        bmm_chunk_bwd (C or B, that gradient and dB or dC in, e out: 2 G Q N each); the dA
        gradients' flips, cumulative sum and sums (fp32 per head); chunk_scan_bwd_ddAcs_stable
        (x, dout, C B^T in; 4 fp32 partials per position, summed: 2 h Q P); chunk_cumsum_bwd.
        The backward's small launches besides (mamba_ssm 2.2.4 and 2.2.6.post3 alike): the sums
        of D's fp32 partials after the dz and the dx kernels (Megatron-Core passes D, one per
        head: `dD[:n_valid_blocks].sum(...).to(dtype=D.dtype)`, at most ceil(Q / 32) partials a
        chunk and head, each sum cast to the bf16 parameter's dtype: per layer), the sum
        of state_passing_bwd's dA partials over its blocks (h fp32 a chunk each: launch-bound,
        counted at its output), the autotuner's pre-hooks that zero the dx kernel's dt gradient
        and the dC kernel's dA gradient before their atomic adds (`init_to_zero`: 4 h each) and
        chunk_cumsum_bwd's dA and dt-bias gradients (h fp32: per layer, not per token), and the
        chunk's last dA gradient added in place (`ddA_cumsum_prev[..., -1] +=`)."""
        m, e = self.job.model, self.elem
        d, h, g, _, _ = self._mamba_dims()
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        gn, s, c = g * N, h * P * N / Q, g * Q
        state, cbf, scan = 2 * h * P * N, 2 * g * Q * N, 2 * h * P * Q
        if not backward:
            ks = (("chunk_cumsum", (e + 8) * h, ()),
                  ("chunk_state", e * d + e * gn + 8 * h + 4 * s, ((state, Q),)),
                  ("state_passing", (4 + e) * s, ()),
                  ("bmm_chunk", 2 * e * gn + 4 * c, ((cbf, N),)),
                  ("chunk_scan", 4 * c + 4 * e * d + e * gn + e * s + 8 * h,
                   ((2 * h * P * N, N), (scan, Q))))
        else:
            ks = (("clone dt", 2 * e * h, ()),
                  ("chunk_cumsum", (e + 8) * h, ()),
                  ("bmm_chunk", 2 * e * gn + 4 * c, ((cbf, N),)),
                  ("chunk_state", e * d + e * gn + 8 * h + 4 * s, ((state, Q),)),
                  ("state_passing", 8 * s, ()),
                  ("bwd_dz", 6 * e * d, ()),
                  ("sum dD", 4 * h * -(-Q // 32) / Q, ()), ("cast dD", 0.0, ()),
                  ("bwd_dstates", e * gn + 4 * h + e * d + 4 * s, ((state, Q),)),
                  ("state_passing_bwd", (8 + 2 * e) * s + 12 * h, ()),
                  ("sum ddA chunk", 4 * h / Q, ()),
                  ("zero ddt", 4 * h, ()),
                  ("bwd_dx", 3 * e * d + 12 * h + e * gn + 4 * c + e * s, ((scan, Q), (state, N))),
                  ("sum dD", 4 * h * -(-Q // 32) / Q, ()), ("cast dD", 0.0, ()),
                  ("bwd_db", e * d + 12 * h + e * s + e * gn + 4 * gn, ((state, P),)),
                  ("sum db", 8 * gn, ()), ("cumsum", 8 * h, ()),
                  ("zero ddA", 4 * h, ()),
                  ("bwd_dC", e * s + 8 * h + e * d + e * gn + 4 * gn, ((state, P),)),
                  ("sum dC", 8 * gn, ()),
                  ("bwd_dcb", 2 * e * d + 8 * h + 4 * c, ((scan, P),)),
                  ("sum dcb", 8 * c, ()),
                  ("bmm_chunk_bwd B", 2 * e * gn + 4 * c + 4 * gn, ((cbf, Q),)),
                  ("bmm_chunk_bwd C", 2 * e * gn + 4 * c + 4 * gn, ((cbf, Q),)),
                  ("add last", 12 * h / Q, ()),
                  ("flip", 8 * h, ()), ("cumsum", 8 * h, ()), ("flip", 8 * h, ()),
                  ("bwd_ddAcs", 2 * e * d + 8 * h + 4 * c + 16 * h, ((scan, P),)),
                  ("sum ddA", 20 * h, ()), ("add", 12 * h, ()), ("add", 12 * h, ()),
                  ("zero dA", 0.0, ()), ("zero ddt_bias", 0.0, ()),
                  ("chunk_cumsum_bwd", (8 + 2 * e) * h, ()))
        t = self.tokens
        return tuple((name, t * nb, tuple((t * f, k) for f, k in dots)) for name, nb, dots in ks)

    def _ssd_flops(self, backward: bool) -> float:
        """The scan's matrix products over a rank's tokens (the backward's recomputed chunk
        states and C B^T included): `_ssd_kernels`."""
        return sum(f for _, _, dots in self._ssd_kernels(backward) for f, _ in dots)

    def _ssd_bytes(self, backward: bool) -> float:
        """HBM bytes of the scan's kernels over a rank's tokens (`_ssd_kernels`)."""
        return sum(nb for _, nb, _ in self._ssd_kernels(backward))

    def _ssd(self, b, name, backward, L):
        kernels = self._ssd_kernels(backward)
        flops = sum(f for _, _, dots in kernels for f, _ in dots)
        nb = sum(n for _, n, _ in kernels)
        b.add(Op(name, "attention", "compute", self.c.kernels(name, flops, kernels), flops, nb,
                 "", L, kernels=len(kernels)))

    def _mamba_layout(self, b, name, width, L):
        """Megatron-Core 0.16.1's Mamba mixer (ssm/mamba_mixer.py `_ssm_training`) hands the scan
        the in-projection's output as `rearrange(zxBCdt, "l b d -> b l d").contiguous()` and
        the out-projection `rearrange(y, "b l d -> l b d").contiguous()`: with more than one
        sequence a micro-batch each is a copy (read and write); with one it is a view."""
        if self.job.micro > 1:
            self._ew(b, name, 2 * self.tokens * width * self.elem, L)

    def _mamba_params(self, b, name, heads, backward, L):
        """Megatron-Core 0.16.0 and 0.16.1's mixer (ssm/mamba_mixer.py `_ssm_training`, lines
        645-668 of 0.16.0) hands the scan A = -torch.exp(A_log.float()) and dt_bias.float(), and
        D as it is (`D.float()` only with `D_has_hdim`, default False, which no Megatron-Bridge
        provider sets; mamba_ssm casts the summed D gradient back itself): with the parameters
        in bf16 (Float16Module, transformer/module.py, casts the model) that is 4 kernels on a
        vector of `heads` (a cast, exp and negation; dt_bias's cast: 6 + 8 + 8 + 6 = 28 bytes a
        head), and their autograd backward 4 more (dt_bias's cast back 6, the negation's 8, the
        exponential's product 12 and A_log's cast back 6: 32 bytes a head)."""
        self._ew(b, name, (32 if backward else 28) * heads, L, kernels=4)

    def _mamba_fwd(self, b, L, pre):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._norm_fwd(b, pre + "input norm", L)
        self._linear(b, pre + "mamba in proj", tokens, width, m.hidden, L, norm_fed=True,
                     gather=pre + "mamba all-gather")
        self._mamba_layout(b, pre + "mamba layout copy", width, L)
        self._mamba_params(b, pre + "mamba A dt D", heads, False, L)
        self._ew(b, pre + "mamba conv1d", 2 * tokens * conv * elem, L)
        self._ssd(b, pre + "ssd scan", False, L)
        self._mamba_layout(b, pre + "mamba output copy", d_inner, L)
        # the gated norm: mamba_ssm's RMSNormGated with no z (the scan gated the output), group
        # size d / G: reads its input and writes its output
        self._ew(b, pre + "mamba gated norm", 2 * tokens * d_inner * elem, L, "norm")
        self._linear(b, pre + "mamba out proj", tokens, m.hidden, d_inner, L)
        self._tp_out(b, pre + "mamba", L)
        self._residual(b, pre + "residual", L)

    def _mamba_bwd(self, b, L):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._residual(b, "residual bwd", L)
        self._linear_bwd(b, "mamba out proj", tokens, m.hidden, d_inner, L, column=False,
                         grad_gather="mamba grad all-gather")
        # the norm's backward reads its input and the gradient and writes one (no z), then sums
        # its per-program weight-gradient partials and casts the sum to the weight's dtype
        # (mamba_ssm 2.2.4 ops/triton/layernorm_gated.py `_layer_norm_bwd`: 3 kernels)
        self._ew(b, "mamba gated norm bwd", 3 * tokens * d_inner * elem, L, "norm", kernels=3)
        self._ssd(b, "ssd scan bwd", True, L)
        # the convolution recomputed (mamba_split_conv1d_scan_combined saves its input only:
        # read and write) before its backward (read the input and the gradient, write one);
        # causal-conv1d 1.5.2 (causal_conv1d/cpp_functions.py `causal_conv1d_bwd_function`, which
        # mamba_ssm 2.2.6.post3 calls) zeroes the fp32 weight and bias gradients first and
        # casts them to the parameters' dtype after: 6 kernels
        self._ew(b, "mamba conv1d bwd", 5 * tokens * conv * elem, L, kernels=6)
        self._mamba_params(b, "mamba A dt D bwd", heads, True, L)
        # the in-projection's output gradient, laid out as the scan's input (b l d), reaches
        # Transformer Engine's linear backward as a transposed view, which its
        # grad_output_preprocess reshapes to (l b, d): a copy (TE 2.9 module/base.py)
        self._mamba_layout(b, "mamba layout copy bwd", width, L)
        self._linear_bwd(b, "mamba in proj", tokens, width, m.hidden, L, column=True)
        self._ew(b, "input norm bwd", 3 * self.sp_tokens * m.hidden * elem, L, "norm")
