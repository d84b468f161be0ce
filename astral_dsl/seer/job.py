"""A compiled design's `job` (and its `model`) as Seer's JobSpec."""
from __future__ import annotations

from dataclasses import replace

from astral_dsl.model.values import ListValue, Symbol
from astral_dsl.seer.spec import JobSpec, ModelSpec, ParallelSpec
from astral_dsl.units import Quantity


def _num(v, default=None):
    return v.si if isinstance(v, Quantity) else default


def _int(v, default=None):
    x = _num(v)
    return int(round(x)) if x is not None else default


def _sym(v, default=None):
    if isinstance(v, Symbol):
        return v.name
    if isinstance(v, str):
        return v
    return default


def model_spec(inst) -> ModelSpec:
    f = inst.field
    heads = _int(f("heads"), 1)
    hidden = _int(f("hidden"), 1)
    act = _sym(f("activation"), "gelu")
    ffn = _int(f("ffn")) or (4 * hidden if act == "gelu" else int(8 * hidden / 3))
    return ModelSpec(
        name=inst.template, layers=_int(f("layers"), 1), hidden=hidden, heads=heads,
        kv_heads=_int(f("kv_heads"), heads), ffn=ffn, vocab=_int(f("vocab"), 0) or 32000,
        seq=_int(f("seq"), 2048), activation=act, experts=_int(f("experts"), 0) or 0,
        top_k=_int(f("top_k"), 1) or 1, shared_experts=_int(f("shared_experts"), 0) or 0,
        moe_ffn=_int(f("moe_ffn"), 0) or ffn, dense_layers=_int(f("dense_layers"), 0) or 0,
        params=_num(f("params")))


def job_spec(job, model_inst, **options) -> JobSpec:
    """The JobSpec of a `job` instance (its `parallel` and `batch` records are members)."""
    model = model_spec(model_inst)
    par = job.member("parallel")
    bat = job.member("batch")
    pf = par.field if par is not None else (lambda *_: None)
    bf = bat.field if bat is not None else (lambda *_: None)
    tp, pp, cp = _int(pf("tp"), 1), _int(pf("pp"), 1), _int(pf("cp"), 1)
    gpus = _int(job.field("gpus"))
    dp = _int(pf("dp"))
    if dp is None:
        dp = max(1, (gpus or tp * pp * cp) // (tp * pp * cp))
    stages = pf("stages")
    stages = tuple(_int(x, 0) for x in stages.items) if isinstance(stages, ListValue) else None
    schedule = _sym(pf("schedule"), None)
    v = _int(pf("virtual_stages"))
    if schedule is None:
        schedule = "interleaved" if (v or 1) > 1 else "1f1b"
    zero = _int(pf("zero"), 0) or 0
    if pf("fsdp") is True:
        zero = 3
    parallel = ParallelSpec(tp=tp, pp=pp, dp=dp, cp=cp, ep=_int(pf("ep"), 1), sp=pf("sp") is True,
                            v=v if v else (None if schedule == "interleaved" else 1),
                            schedule=schedule, stages=stages, zero=zero)
    seq = _int(bf("seq")) or model.seq
    gb = _int(bf("global_batch")) or dp * (_int(bf("micro")) or 1)
    spec = JobSpec(name=job.template, model=model, parallel=parallel, global_batch=gb,
                   micro=_int(bf("micro")), seq=seq,
                   recompute=_sym(job.field("recompute"), "none"),
                   dtype=_sym(job.field("dtype"), "bf16"), gpus=gpus)
    known = {k: v for k, v in options.items() if k in JobSpec.__dataclass_fields__ and v is not None}
    spec = replace(spec, **known)
    nested = {k: v for k, v in options.items() if k in ParallelSpec.__dataclass_fields__
              and v is not None}
    return replace(spec, parallel=replace(spec.parallel, **nested)) if nested else spec
