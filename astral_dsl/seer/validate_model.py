"""The job checks of its model (validate.py runs them): its own shape (E763), the fields Seer has
to guess (W752), and its size against Seer's work budget (E762)."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import budget, validate_moe
from astral_dsl.seer.model_spec import hybrid_pattern
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.spec import DEFAULT_SEQ, DEFAULT_VOCAB, JobSpec
from astral_dsl.units.readable import count as _n


def shape(spec: JobSpec, where) -> List[Diagnostic]:
    """The model's own shape: whole heads, key/value groups, experts (E763)."""
    m, out = spec.model, []
    name = f"`{m.name}`"
    if not m.head_size and m.hidden % m.heads:
        out.append(_err("E763", f"{name}: hidden size {m.hidden} is not a multiple of its "
                                f"{_n(m.heads)} attention heads", where.model_field("heads"),
                        "each head has hidden / heads dimensions"))
    elif m.kv_heads > m.heads or m.heads % m.kv_heads:
        out.append(_err("E763", f"{name}: {_n(m.kv_heads)} key/value heads do not divide its "
                                f"{_n(m.heads)} attention heads", where.model_field("kv_heads"),
                        "grouped-query attention shares each key/value head among a whole "
                        "number of query heads"))
    if m.experts and m.top_k > m.experts:
        out.append(_err("E763", f"{name}: top_k = {m.top_k} routes to more experts than its "
                                f"{m.experts}", where.model_field("top_k"),
                        f"a token's experts are among the model's: at most `top_k = "
                        f"{m.experts}`"))
    if m.pattern and (len(m.pattern) != m.layers or set(m.pattern) - set("M*E-")):
        out.append(_err("E763", f"{name}: the pattern has {len(m.pattern)} layers, "
                                f"{m.layers} declared, and may only hold M, *, E and -",
                        where.model_field("pattern"),
                        "one character per layer: M Mamba-2, * attention, E MoE, - MLP"))
    elif m.pattern and "E" in m.pattern and not m.experts:
        out.append(_err("E763", f"{name}: the pattern has MoE layers (E) but no `experts`",
                        where.model_field("pattern"),
                        "state the MoE layers' `experts` (and `top_k`), or write their layers "
                        "as - (MLP)"))
    if not m.pattern and m.mamba_layers + m.attention_layers > m.layers:
        out.append(_err("E763", f"{name}: {m.mamba_layers} Mamba-2 and {m.attention_layers} "
                                f"attention layers of {m.layers}",
                        where.model_field("mamba_layers"),
                        f"at most {m.layers} together (the rest are MLP or MoE layers)"))
    if m.mamba_heads_stated and where.model.field("mamba_expand") is not None:
        out.append(_err("E763", f"{name}: both mamba_heads and mamba_expand set the Mamba-2 "
                                f"width", where.model_field("mamba_heads"),
                        "state one: `mamba_heads` (Megatron's mamba_num_heads: the width is "
                        "heads x mamba_head_dim) or `mamba_expand` (the width over hidden)"))
    elif m.hybrid and m.mamba_inner % m.mamba_head:
        out.append(_err("E763", f"{name}: the Mamba-2 width {m.mamba_inner:g} (mamba_expand x "
                                f"hidden) is not a whole number of {m.mamba_head}-wide heads",
                        where.model_field("mamba_head_dim"),
                        "a mamba_head_dim that divides the width, or the width as "
                        "`mamba_heads`"))
    if m.dense_layers > m.layers:
        out.append(_err("E763", f"{name}: {m.dense_layers} dense layers of {m.layers}",
                        where.model_field("dense_layers"),
                        f"at most `dense_layers = {m.layers}` (the first layers, with a dense "
                        "MLP)"))
    out.extend(validate_moe.expert_groups(spec, where))
    out.extend(mtp(spec, where))
    return out


def mtp(spec: JobSpec, where) -> List[Diagnostic]:
    """An MTP depth's block (`mtp_pattern`): E763 for a block Seer cannot build as Megatron-Core
    does (its hybrid layers only, in a hybrid model: Megatron-Core 0.18.0 models/hybrid/
    hybrid_model.py passes the pattern to MultiTokenPredictionBlock; a GPT model's depth is one
    transformer layer)."""
    m, model, out = spec.model, where.model, []
    name = f"`{m.name}`"
    if model.field("mtp_pattern") is None:
        return out
    block = m.mtp_pattern
    if not block or set(block) - set("M*E-"):
        out.append(_err("E763", f"{name}: the MTP pattern \"{block}\" may only hold M, *, E "
                                f"and -, at least one", where.model_field("mtp_pattern"),
                        "one character per layer of a depth: M Mamba-2, * attention, E MoE, "
                        "- MLP (Nemotron 3.5 Lightning: \"*E\")"))
    elif not m.hybrid:
        out.append(_err("E763", f"{name}: an MTP pattern needs a hybrid model (a `pattern` or "
                                f"`mamba_layers`)", where.model_field("mtp_pattern"),
                        "a transformer's MTP depth is one layer like its last (Megatron-Core's "
                        "GPT path): leave `mtp_pattern` out"))
    elif "E" in block and not m.experts:
        out.append(_err("E763", f"{name}: the MTP pattern has MoE layers (E) but no `experts`",
                        where.model_field("mtp_pattern"),
                        "state the MoE layers' `experts` (and `top_k`), or write their layers "
                        "as - (MLP)"))
    return out


def model_defaults(spec: JobSpec, where) -> List[Diagnostic]:
    """W752 for a model field Seer has to guess (docs/seer.md, "Defaults"): the vocabulary, the
    sequence length when the batch does not state it either, a SwiGLU model's FFN width, a
    hybrid model's Mamba-2 dimensions."""
    m, model, out = spec.model, where.model, []
    span = model.span or where.job.span_of("model")
    name = f"model `{m.name}`"
    if model.field("vocab") is None:
        out.append(_warn("W752", f"{name} declares no `vocab`: Seer takes {DEFAULT_VOCAB:,} "
                                 f"tokens (Llama 2's), which sizes the embedding, the logits and "
                                 f"their memory", span,
                         "state the model's vocabulary, e.g. `vocab = 128256` (Llama 3)"))
    if model.field("seq") is None and not where.fields.get("seq"):
        out.append(_warn("W752", f"neither {name} nor job `{spec.name}`'s batch declares `seq`: "
                                 f"Seer takes {DEFAULT_SEQ:,} tokens (GPT-3's context)", span,
                         "state the training sequence length: `batch { seq = 8192 }`"))
    if model.field("ffn") is None and m.activation == "swiglu":
        out.append(_warn("W752", f"{name} declares no `ffn`: Seer takes 8h/3 = {m.ffn:,} (a "
                                 f"SwiGLU MLP with the parameters of a 4h one, Shazeer 2020); "
                                 f"Llama models round it up (Llama 3 8B: 14,336 = 3.5 h)", span,
                         "state the FFN width: `ffn = ...`"))
    if not m.experts:
        out.extend(_no_effect(name, where, MOE_FIELDS, "declares no `experts` (a dense model)",
                              "state the routed experts, `experts = ...`"))
    if not m.mtp_layers:
        out.extend(_no_effect(name, where, ("mtp_pattern", "mtp_shared"),
                              "trains no multi-token prediction depth (`mtp_layers`)",
                              "state the depths, e.g. `mtp_layers = 2`"))
    # a model's Mamba-2 layers come from `mamba_layers` or its `pattern`'s M; the inner width
    # from `mamba_heads` when stated (then `mamba_expand` is not used)
    used = [(k, v) for k, v in MAMBA_DEFAULTS
            if not (k == "mamba_expand" and model.field("mamba_heads") is not None)]
    unstated = [f"{k} = {v}" for k, v in used if model.field(k) is None]
    if m.hybrid and "M" in hybrid_pattern(m) and unstated:
        out.append(_warn("W752", f"{name} has Mamba-2 layers but does not state "
                                 f"{', '.join(k.split(' = ')[0] for k in unstated)}: Seer takes "
                                 f"{', '.join(unstated)} (Mamba-2's reference configuration, Dao "
                                 f"and Gu 2024; 8 groups as Nemotron-H), which size the scan's "
                                 f"work and memory", span,
                         "state the Mamba-2 layers' dimensions from the model's configuration"))
    return out


def _no_effect(name: str, where, fields, lacking: str, hint: str) -> List[Diagnostic]:
    """W751 at the first of `fields` the model states, which do nothing: it `lacking`."""
    stated = [k for k in fields if where.model.field(k) is not None]
    if not stated:
        return []
    verb = "have" if len(stated) > 1 else "has"
    return [_warn("W751", f"{name}: {' and '.join(stated)} {verb} no effect: it {lacking}",
                  where.model_field(stated[0]),
                  f"{hint}, or leave " + ", ".join(f"`{k}`" for k in stated) + " out")]


# ASSUMED (W752 names them): a hybrid model's Mamba-2 dimensions when it does not state them
# (seer/job.py `model_spec`): the reference Mamba-2 layer's defaults (Dao and Gu 2024;
# state-spaces/mamba, mamba_ssm/modules/mamba2.py Mamba2: d_state 128, headdim 64, expand 2,
# chunk_size 256) with Nemotron-H's 8 groups (NVIDIA, arXiv 2504.03624, 2025; Mamba2's own
# default is 1). Megatron-Core's MambaMixer, which NVIDIA's recipes run, scans in chunks of 128
# (stdlib.models' Nemotron3_Nano states it)
# the model fields that shape a mixture of experts' layers: without `experts` they do nothing
# (expert_groups and group_top_k: E763, validate_moe.expert_groups)
MOE_FIELDS = ("top_k", "shared_experts", "moe_ffn", "shared_ffn", "dense_layers", "router_score",
              "aux_loss")
MAMBA_DEFAULTS = (("mamba_state", 128), ("mamba_head_dim", 64), ("mamba_groups", 8),
                  ("mamba_expand", 2), ("mamba_chunk", 256))


_BUDGET_HINT = ("Seer's work budget bounds what one forecast may cost; a value that large is "
                "likely a typo of the model's or the batch's (docs/seer.md, \"Work budget\")")


def budget_model(spec: JobSpec, where) -> List[Diagnostic]:
    """E762 for a model or batch beyond Seer's work budget (budget.py)."""
    m, out = spec.model, []
    if m.layers > budget.MAX_LAYERS:
        out.append(_err("E762", f"`{m.name}` has {_n(m.layers)} layers: Seer lowers at most "
                                f"{budget.MAX_LAYERS:,} (its work budget, docs/seer.md)",
                        where.model_field("layers"), _BUDGET_HINT))
    elif m.layers + m.mtp_block > budget.MAX_LAYERS:
        field = "mtp_pattern" if m.mtp_pattern else "mtp_layers"
        out.append(_err("E762", f"`{m.name}` has {_n(m.layers)} layers and {_n(m.mtp_block)} "
                                f"MTP layers: Seer lowers at most {budget.MAX_LAYERS:,} (its work "
                                f"budget, docs/seer.md)", where.model_field(field), _BUDGET_HINT))
    for name in ("hidden", "ffn", "vocab", "heads", "kv_heads", "experts", "moe_ffn"):
        value = getattr(m, name)
        stated = where.model.field(name) is not None       # not a default derived from another
        if value > budget.MAX_WIDTH and stated:
            out.append(_err("E762", f"`{m.name}`: {name} = {_n(value)} is beyond Seer's budget "
                                    f"of {budget.MAX_WIDTH:,} (docs/seer.md)",
                            where.model_field(name), _BUDGET_HINT))
    tokens = spec.seq * (spec.micro or 1)
    if spec.seq > budget.MAX_TOKENS or tokens > budget.MAX_TOKENS:
        out.append(_err("E762", f"job `{spec.name}`: {_n(tokens)} tokens per micro-batch is "
                                f"beyond Seer's budget of {budget.MAX_TOKENS:,} (docs/seer.md)",
                        where("seq", "batch") if where.fields.get("seq") else
                        where.model_field("seq"), _BUDGET_HINT))
    return out
