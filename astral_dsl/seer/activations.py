"""The activations one rank keeps for one layer and one micro-batch, term by term: the
tensors each operator saves for its backward (memory.py's module docstring says which, with
their sources; the estimate of a stage adds them over its layers and the micro-batches in
flight, memory.stage_estimate)."""
from __future__ import annotations

from astral_dsl.seer.spec import JobSpec


def layer_activation_bytes(job: JobSpec, layer: int) -> float:
    """Bytes one rank keeps for one layer and one micro-batch (memory.py's module docstring
    states the terms and their sources)."""
    m, par, elem = job.model, job.parallel, job.bytes
    # a linear layer's saved input: Transformer Engine keeps it quantised (its column-wise copy
    # for the weight gradient); torchao's row-wise float8 keeps the 16-bit input and quantises
    # it again in the backward (torchao 0.7.0-0.11.0 float8/float8_linear.py,
    # manual_float8_matmul_with_args_in_hp: `ctx.save_for_backward(input_hp, weight_hp_t)`)
    lin = job.quant_bytes if job.fp8 and job.fp8_recipe != "rowwise" else elem
    t, tokens = par.tp, job.micro * job.seq / par.cp
    h, q, kv = m.hidden, m.q_width, m.kv_heads * m.qk_dim + m.kv_heads * m.v_dim
    sp = par.sp and t > 1
    if job.recompute == "full":
        return tokens * h * elem / (t if sp else 1)
    kind = m.layer_kind(layer)
    if kind == "M":       # Mamba-2: its norm input, in-projection input and output, the
        #                   convolution's output, the scan's output and state inputs, the gated
        #                   norm's input and the out-projection's input (Dao and Gu 2024)
        d = m.mamba_inner / t
        groups = max(1.0, m.mamba_groups / t)
        width = 2 * d + 2 * groups * m.mamba_state + m.mamba_heads / t
        conv = d + 2 * groups * m.mamba_state
        per = elem * h / (t if sp else 1) + lin * h + elem * (width + conv + 2 * d) + lin * d
        return tokens * per
    mask = 1 if m.gpt else 0                 # dropout masks: one byte per element
    router = 0.0
    # selective recomputation in a PyTorch framework (torchtitan's "selective op", PyTorch's
    # operator-level selective checkpointing): the cheap operators are recomputed, so the
    # norms' outputs (the QKV and fc1 inputs) and the activation function's output (the fc2
    # input) are not kept. Megatron-LM's selective recomputation is the core attention's, which
    # with fused attention keeps what it would have kept anyway.
    # Megatron-Core's recompute modules do the same by name (JobSpec.recomputed: `layernorm`,
    # the activations, `mla_up_proj`).
    redo = job.recomputed
    # outside the TP regions: two norm inputs, two dropout masks, the QKV and fc1 inputs
    replicated = 2 * elem * h + 2 * mask * h + (0 if "layernorm" in redo else 2 * lin * h)
    mats = m.mats - 1
    if m.is_moe(layer):
        # expert fc1 output(s) and fc2 input; the permuted tokens (fc1 input) and the output
        # (not with Megatron-Core, below).
        # A rank's experts take top_k tokens for each of the tokens/TP it routes (balanced
        # routing: the all-to-all brings back as many as it sends out, whatever EP is), and
        # the shared experts run on its tokens/TP: lower_moe.py `_moe_fwd` prices the same
        # tokens.
        # Operator-level recomputation re-runs the experts' activation (Megatron-Core's
        # `moe_act` module), so the fc2 inputs are not kept, as in a dense MLP.
        # With token dropping the experts take the copies JobSpec.routed counts instead.
        # With expert tensor parallelism (ETP) a rank's experts take ETP times the copies at
        # 1/ETP of the width (lower_moe.py): the same fc1 output and fc2 input elements, but
        # fc1 keeps its all-gathered input, ETP times the copies the rank routed.
        # A clamped gated activation (activation_clamp) keeps the clamped copy of fc1's
        # output(s) for the activation's backward besides fc1's own for the clamp's (Megatron-
        # Core 0.16.1 fused_bias_geglu.py: the clamps and their concatenation run unfused),
        # unless the activation is recomputed.
        # Megatron-Core weights the routed copies by their probabilities in the experts' own
        # activation (0.16.1 experts.py, TEGroupedMLP.forward: bias_act_func's
        # `* permuted_probs`, the fused weighted SwiGLU / quick-GeGLU), so its combine unpermutes
        # without probabilities: Transformer Engine 2.9's fused unpermute then saves its row map
        # only (pytorch/permutation.py, _moe_unpermute_mask_map: `inp` is saved with
        # merging_probs alone), and the all-to-all and chunk sort save nothing: the experts'
        # output is not kept. Other frameworks weight the output after the experts (a product
        # that keeps it).
        act = 0 if "moe_act" in redo else lin
        fc1 = mats * elem * (2 if m.clamped and "moe_act" not in redo else 1)
        k = job.routed(tokens / t) / (tokens / t)
        out = 0.0 if job.framework == "megatron" else elem
        routed = k * m.moe_ffn * (fc1 + act) + k * h * (par.etp * lin + out)
        shared = m.shared_experts * m.shared_width * (fc1 + act)
        mlp_tp = routed + shared
        # the router, on every token of the rank (its tokens / TP with SP): fp32 scores over the
        # experts and the boolean routing map (Transformer Engine 2.9's fused top-k,
        # pytorch/router.py: `save_for_backward(routing_map, intermediate_output)`; Megatron-
        # Core's unfused router keeps the fp32 softmax's output instead, about as much)
        router = 0 if job.gate_free else m.experts * (4 + 1)   # a weightless gate: none
    else:                                     # fc1 output(s) and the fc2 input
        dense_act = "activation" in redo
        # torchtitan's every second matmul (lower.Lowering._every_second_mm): w3's output
        kept = mats - (1 if job.every_second_mm and mats == 2 else 0)
        mlp_tp = m.ffn * (kept * elem * (2 if m.clamped and not dense_act else 1)
                          + (0 if dense_act else lin))
        if "mlp" in redo:       # Megatron-Core's `mlp` module: the MLP keeps its input only
            mlp_tp = 0.0
    # Q, K, V and the context; with `mla_up_proj` recomputed, MLA's up-projections run again in
    # the backward from the latents their weight gradients keep anyway, so Q, K and V are not
    # kept (Megatron-Core 0.16.1, multi_latent_attention.py, recompute_up_proj)
    qkv = 0.0 if m.mla and "mla_up_proj" in redo else elem * (q + kv)
    if job.every_second_mm and not m.mla:          # wk's output is recomputed
        qkv -= elem * m.kv_heads * m.qk_dim
    attn_tp = qkv + lin * m.context_width
    scores = 0.0
    if job.attention == "unfused":
        if job.recompute != "selective":      # softmax output, its dropout mask and output
            scores = (2 * elem + mask) * m.heads * job.seq / par.cp
    else:
        attn_tp += 4 * m.heads                # fused attention: fp32 log-sum-exp per head
        # the fused kernel keeps its 16-bit output for its backward (Transformer Engine 2.9
        # FusedAttnFunc saves q, k, v and `out`; FlashAttention's backward needs the output);
        # the out-projection's saved input is that same tensor unless the projection quantises
        # it, when the quantised copy is kept besides
        if lin != elem:
            attn_tp += elem * m.context_width
    if kind == "*":             # attention only: one norm, no MLP
        replicated, mlp_tp = replicated / 2, 0.0
    elif kind in ("E", "-"):    # MLP only: one norm, no attention
        replicated, attn_tp, scores = replicated / 2, 0.0, 0.0
    per_token = (replicated + router) / (t if sp else 1) + (attn_tp + mlp_tp + scores) / t
    return tokens * per_token
