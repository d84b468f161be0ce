"""A compiled design's `job` (and its `model`) as Seer's JobSpec.

Every option `seer.forecast(...)` accepts is a field a job can state (OPTIONS: the option name is
the field name, with the record it lives in). Options go through the same path as the fields:
they are checked against the field's type (the same diagnostics as in a .astral file) and take
the field's place before any default is applied.

Defaults (docs/seer.md, "Defaults"), each Megatron-LM's unless said otherwise:
- `dtype = bf16`: NOT Megatron-LM's default (fp32 without --bf16 / --fp16); every large run we
  forecast trains in bf16 mixed precision, so bf16 is the useful default.
- `grad_dtype`: fp32 with bf16 (and fp8, which runs on a bf16 base): Megatron-LM turns on
  `accumulate_allreduce_grads_in_fp32` for bf16; fp16 keeps 16-bit gradient buffers
  (megatron/training/arguments.py); fp32 training has fp32 gradients.
- `attention = flash`: Megatron-Core's default attention backend is fused (Transformer
  Engine / FlashAttention) when available.
- `tp_overlap = backward`: the input-gradient reduction of a column-parallel layer overlaps its
  weight-gradient GEMM (Megatron-LM's asynchronous TP all-reduce, on by default since 2022;
  `none` is the 2021 code, where it follows the layer's backward on the critical path).
- `offload_layers = 0` (Megatron-Core's --cpu-offloading is opt-in); with `recompute = auto` and
  no count, the rule's.
- `recompute_layers`: with `recompute = full`, every layer (Megatron-LM's uniform method over
  all layers); with `recompute = auto`, the rule's (it may recompute the first N layers of each
  chunk, the block method, where recomputing nothing does not fit).
- `pp_overlap = false`: NOT Megatron-LM's own choice but Megatron-Core's
  `ModelParallelConfig.overlap_p2p_comm` default (0.16.1); Megatron-Bridge turns it on for every
  interleaved pipeline (runs/stacks.py reads the NVIDIA runs with it).
- `recompute_modules`: with `recompute = modules`, layernorm, activation and moe_act (PyTorch's
  operator-level checkpointing: spec.DEFAULT_RECOMPUTE_MODULES); `optimizer_dtype = fp32`
  (Megatron-Core's optimizer without its precision-aware options).
- `router_fusion = false`: Megatron-Core's default (0.14-0.16 transformer_config.py
  `moe_router_fusion = False`; runs/router_recipe.py says which NVIDIA rows turned it on).
- `scale_swizzle = false`: Transformer Engine 2.12 and later write the activations' and
  gradients' MXFP8 / NVFP4 scales already swizzled (runs/releases.py MXFP8_SWIZZLE_BEFORE says
  which NVIDIA rows ran an earlier one).
- `cross_entropy`: not stated, Seer's generic count of the head's cross-entropy
  (lower_dense.CROSS_ENTROPY); runs/loss_recipe.py says which NVIDIA rows ran which kernels.
- `attention_precision = bf16`: Megatron-Core's `fp8_dot_product_attention = False`
  (runs/attention_recipe.py says which NVIDIA rows ran MXFP8 attention).
- `head_precision = bf16`: Megatron-Core's `fp8_output_proj = False`, the output layer a
  16-bit ColumnParallelLinear (runs/head_recipe.py says which NVIDIA rows ran it in MXFP8).
- `recompute = none`, `sp = false`, `zero = 0`, `overlap_grad_reduce = false`,
  `overlap_param_gather = false`: all opt-in flags of Megatron-LM.
- `order = "tp-cp-ep-dp-pp"`: Megatron-Core's default rank order (parallel_state).
- `virtual_stages` with a `layout` of pp x k chunks: k, as Megatron-Core derives it from
  `pipeline_model_parallel_layout` (0.16.0 transformer_config.py, `__post_init__`: the
  layout's virtual pipeline size, which a stated size must equal).
- `schedule`: `1f1b`; `interleaved` when `virtual_stages` > 1 is declared or derived.
- `reshard_after_forward = true`: PyTorch FSDP's default (FULL_SHARD; FSDP2 `fully_shard`).
- `dp` = gpus / (tp x pp x cp); `global_batch` = micro x dp; `seq` = the model's; `micro` and an
  interleaved job's `virtual_stages`: chosen by the rule (seer/rule.py)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, DiagnosticError
from astral_dsl.model.kinds import KINDS
from astral_dsl.model.values import ListValue, Symbol
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import DEFAULT_ORDER, DEFAULT_SEQ, DEFAULT_VOCAB, JobSpec, ParallelSpec
from astral_dsl.units import Quantity

# option / field name -> the record that holds it ("" = the job itself)
OPTIONS: Dict[str, str] = {
    "recompute": "", "dtype": "", "attention": "", "grad_dtype": "", "optimizer_dtype": "",
    "overlap_grad_reduce": "",
    "overlap_param_gather": "", "tp_overlap": "", "fp8_recipe": "", "framework": "",
    "cuda_graphs": "", "moe_dispatcher": "", "ep_overlap": "", "pp_overlap": "",
    "torch_compile": "", "fp8_params": "", "capacity_factor": "", "pad_to_capacity": "",
    "moe_routing": "", "grouped_gemm": "", "router_fusion": "", "cross_entropy": "",
    "attention_precision": "", "head_precision": "",
    "permute_fusion": "", "rope_fusion": "", "scale_swizzle": "",
    "offload_layers": "", "recompute_layers": "", "recompute_modules": "",
    "tp": "parallel", "pp": "parallel", "dp": "parallel", "cp": "parallel", "ep": "parallel",
    "etp": "parallel", "sp": "parallel", "order": "parallel", "schedule": "parallel",
    "virtual_stages": "parallel",
    "stages": "parallel", "layout": "parallel", "zero": "parallel", "fsdp": "parallel",
    "reshard_after_forward": "parallel",
    "global_batch": "batch", "micro": "batch", "seq": "batch", "pipeline_runs": "batch",
}


def _plain(v):
    """A model value as plain Python: numbers, names, tuples, booleans."""
    if isinstance(v, Quantity):
        return v.si
    if isinstance(v, Symbol):
        return v.name
    if isinstance(v, ListValue):
        return tuple(_plain(x) for x in v.items)
    return v


def _model_value(v):
    """A Python option as the model value a .astral file would give."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        try:
            return Quantity(float(v))
        except OverflowError:       # an int beyond a float: too large, as `1e400` is (E309)
            return Quantity(math.inf if v > 0 else -math.inf)
    if isinstance(v, (list, tuple)):
        return ListValue(tuple(_model_value(x) for x in v))
    return v


def _int(x, default=None):
    return int(round(x)) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def _float(x, default=None):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def model_spec(inst) -> ModelSpec:
    """The model's fields; what it leaves out (docs/seer.md, "Defaults"): `kv_heads` = heads
    (multi-head attention), `activation` = gelu (GPT), `ffn` = 4h with GeLU (Vaswani et al.
    2017, GPT-3) or 8h/3 with SwiGLU (Shazeer 2020: the parameters of a 4h MLP), `vocab` =
    DEFAULT_VOCAB and `seq` = DEFAULT_SEQ (guesses: W752), no experts, `top_k` = 1."""
    def f(name):
        return _plain(inst.field(name))

    heads = _int(f("heads"), 1)
    hidden = _int(f("hidden"), 1)
    act = f("activation") or "gelu"
    ffn = _int(f("ffn")) or (8 * hidden // 3 if act == "swiglu" else 4 * hidden)
    kv_lora = _int(f("kv_lora_rank"), 0) or 0
    share = f("window_share")
    return ModelSpec(
        name=inst.template, layers=_int(f("layers"), 1), hidden=hidden, heads=heads,
        kv_heads=heads if kv_lora else _int(f("kv_heads"), heads), ffn=ffn,
        vocab=_int(f("vocab"), 0) or DEFAULT_VOCAB,
        seq=_int(f("seq"), DEFAULT_SEQ), activation=act, experts=_int(f("experts"), 0) or 0,
        top_k=_int(f("top_k"), 1) or 1, shared_experts=_int(f("shared_experts"), 0) or 0,
        moe_ffn=_int(f("moe_ffn"), 0) or ffn, dense_layers=_int(f("dense_layers"), 0) or 0,
        params=f("params"), head_size=_int(f("head_dim"), 0) or 0, kv_lora=kv_lora,
        q_lora=_int(f("q_lora_rank"), 0) or 0, rope_dim=_int(f("rope_head_dim"), 0) or 0,
        v_head=_int(f("v_head_dim"), 0) or 0, window=_int(f("window"), 0) or 0,
        window_share=float(share) if isinstance(share, (int, float)) and f("window") else 0.0,
        shared_ffn=_int(f("shared_ffn"), 0) or 0,
        activation_clamp=_float(f("activation_clamp"), 0.0) or 0.0,
        expert_bias=f("expert_bias") is True,
        yarn_factor=_float(f("yarn_factor"), 0.0) or 0.0,
        qk_norm=str(f("qk_norm") or "none"), nope_every=_int(f("nope_every"), 0) or 0,
        expert_groups=_int(f("expert_groups"), 0) or 0,
        group_top_k=_int(f("group_top_k"), 0) or 0,
        router_score=str(f("router_score") or "softmax"), aux_loss=str(f("aux_loss") or "none"),
        mtp_layers=_int(f("mtp_layers"), 0) or 0,
        mtp_pattern=str(f("mtp_pattern") or ""), mtp_shared=f("mtp_shared") is True,
        mamba_layers=_int(f("mamba_layers"), 0) or 0,
        attention_layers=_int(f("attention_layers"), 0) or 0,
        pattern=str(f("pattern") or ""),
        mamba_state=_int(f("mamba_state"), 128) or 128,
        mamba_head=_int(f("mamba_head_dim"), 64) or 64,
        mamba_groups=_int(f("mamba_groups"), 8) or 8,
        mamba_expand=float(f("mamba_expand") or 2.0),
        mamba_heads_stated=_int(f("mamba_heads"), 0) or 0,
        mamba_chunk=_int(f("mamba_chunk"), 256) or 256)


def unknown_options(options) -> List[Diagnostic]:
    """E203 for each option that is not a job field (`seer.forecast(design, bogus=1)`), as a
    .astral job that sets it: an API call has no source, so no span; the hint names the
    closest field, else every option. A job field that is no option (`gpus`, `model`,
    `placement`) says so: it had been called "not a job field"."""
    from astral_dsl.diagnostics import Severity, did_you_mean

    out = []
    fields = KINDS["job"].fields
    for name in sorted(set(options) - set(OPTIONS)):
        listed = "forecast options: " + ", ".join(sorted(OPTIONS))
        if name in fields:        # `gpus`, `model`, `placement`: the job's, not a what-if's
            out.append(Diagnostic("E203", Severity.ERROR, f"`{name}` is a job field but not a "
                                  f"forecast option: state it in the design (a job of its "
                                  f"own for the what-if)", None, listed))
            continue
        hint = did_you_mean(name, OPTIONS) or listed
        out.append(Diagnostic("E203", Severity.ERROR, f"`{name}` is not a job field, so not a "
                              f"forecast option", None, hint))
    return out


def check_options(options) -> List[Diagnostic]:
    """Diagnostics for forecast options with a bad value: the same type checks as the fields
    in a .astral file (options that are not job fields: unknown_options)."""
    from astral_dsl.semantics.coerce import coerce

    out = []
    for name, value in options.items():
        if name not in OPTIONS or value is None:
            continue
        record = OPTIONS[name]
        spec = KINDS[record or "job"].fields[name]
        where = f"{record}." if record else ""
        try:
            coerce(_model_value(value), spec.type, None, f"`{where}{name}`")
        except DiagnosticError as exc:
            out.append(exc.diagnostic)
    return out


def declared(job, **options) -> Dict[str, object]:
    """The job's fields (and its `parallel` and `batch` records) as plain values, with the
    options in their place; an option None clears the field (the job forecast as if it did not
    state it: the default, or the rule's choice; docs/api.md)."""
    out: Dict[str, object] = {}
    for name, record in OPTIONS.items():
        inst = job.member(record) if record else job
        value = inst.field(name) if inst is not None else None
        if value is not None:
            out[name] = _plain(value)
    for name, value in options.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = _plain(_model_value(value))
    return out


def parse_order(text: Optional[str]) -> Tuple[str, ...]:
    """`"tp-cp-ep-dp-pp"` -> ("tp", "cp", "ep", "dp", "pp"); not stated: the default; checked by
    seer/validate_layout.py (an empty string is an empty order, E759)."""
    if text is None:
        return DEFAULT_ORDER
    if not str(text).strip():
        return ()
    return tuple(w.strip().lower() for w in str(text).split("-"))


def job_spec(job, model_inst, **options) -> JobSpec:
    """The JobSpec of a `job` instance with `options` in place of its fields."""
    model = model_spec(model_inst)
    f = declared(job, **options)
    gpus = _int(_plain(job.field("gpus")))
    tp, pp, cp = _int(f.get("tp"), 1), _int(f.get("pp"), 1), _int(f.get("cp"), 1)
    dp = _int(f.get("dp"))
    if dp is None:
        dp = max(1, (gpus or tp * pp * cp) // max(1, tp * pp * cp))
    stages = f.get("stages")
    stages = tuple(_int(x, 0) for x in stages) if isinstance(stages, tuple) else None
    layout = f.get("layout")
    layout = tuple(_int(x, 0) for x in layout) if isinstance(layout, tuple) else None
    v = _int(f.get("virtual_stages"))
    if v is None and layout and pp and len(layout) % pp == 0:
        v = len(layout) // pp     # the layout's chunks a stage (module docstring)
    schedule = f.get("schedule") or ("interleaved" if (v or 1) > 1 else "1f1b")
    zero = _int(f.get("zero"), 0) or 0
    if f.get("fsdp") is True:
        zero = 3
    parallel = ParallelSpec(
        tp=tp, pp=pp, dp=dp, cp=cp, ep=_int(f.get("ep"), 1), sp=f.get("sp") is True,
        v=v if v else (None if schedule == "interleaved" else 1), schedule=schedule,
        stages=stages, layout=layout, zero=zero,
        reshard_after_forward=f.get("reshard_after_forward") is not False,
        order=parse_order(f.get("order")), etp=_int(f.get("etp"), 1),
        etp_stated=f.get("etp") is not None)
    micro = _int(f.get("micro"))
    recompute = f.get("recompute") or "none"
    offload = _int(f.get("offload_layers"))
    if offload is None:       # not stated: none, or the rule's with `recompute = auto`
        offload = None if recompute == "auto" else 0
    return JobSpec(
        name=job.template, model=model, parallel=parallel,
        global_batch=_int(f.get("global_batch")) or dp * (micro or 1), micro=micro,
        batch_stated=_int(f.get("global_batch")) is not None,
        dp_stated=_int(f.get("dp")) is not None,
        seq=_int(f.get("seq")) or model.seq, recompute=recompute, offload_layers=offload,
        pipeline_runs=_int(f.get("pipeline_runs"), 1),
        recompute_layers=_int(f.get("recompute_layers")),
        recompute_modules=(tuple(f["recompute_modules"])
                           if isinstance(f.get("recompute_modules"), tuple) else None),
        dtype=f.get("dtype") or "bf16", gpus=gpus, attention=f.get("attention") or "flash",
        grad_dtype=f.get("grad_dtype"), optimizer_dtype=f.get("optimizer_dtype") or "fp32",
        overlap_grad_reduce=f.get("overlap_grad_reduce") is True,
        overlap_param_gather=f.get("overlap_param_gather") is True,
        tp_overlap=f.get("tp_overlap") or "backward",
        fp8_recipe=f.get("fp8_recipe") or "delayed", framework=f.get("framework") or "megatron",
        cuda_graphs=f.get("cuda_graphs") is True,
        moe_dispatcher=f.get("moe_dispatcher") or "alltoall",
        moe_routing=f.get("moe_routing") or "topk",
        ep_overlap=f.get("ep_overlap") is True, pp_overlap=f.get("pp_overlap") is True,
        torch_compile=f.get("torch_compile") is True,
        fp8_params=f.get("fp8_params") is True,
        capacity_factor=_float(f.get("capacity_factor")),
        pad_to_capacity=f.get("pad_to_capacity") is True,
        grouped_gemm=f.get("grouped_gemm") is not False,
        router_fusion=f.get("router_fusion") is True,
        permute_fusion=f.get("permute_fusion") is not False,
        rope_fusion=f.get("rope_fusion") is not False,
        yarn_rope_fusion=f.get("rope_fusion") is True,
        scale_swizzle=f.get("scale_swizzle") is True,
        cross_entropy=f.get("cross_entropy"),
        attention_precision=f.get("attention_precision") or "bf16",
        head_precision=f.get("head_precision") or "bf16")
