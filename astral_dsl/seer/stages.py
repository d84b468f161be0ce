"""The layers of each pipeline stage and model chunk of a job (spec.py's JobSpec): the frameworks'
layout of a model that the stages do not divide, the declared ones, Megatron-LM's split of a
stage's layers over its virtual stages, and the layers recomputed whole."""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

from astral_dsl.seer.spec import JobSpec


def derived_layout(layers: int, pp: int, v: int = 1, framework: str = "megatron"
                   ) -> Optional[Tuple[int, ...]]:
    """Layers of each virtual stage (model order; per stage when v = 1) as the frameworks lay
    out a model that pp x v does not divide: the embedding and the loss counted as a layer each
    on the first and the last (Megatron-Core's --account-for-embedding/loss-in-pipeline-split,
    the layout an explicit --pipeline-model-parallel-layout gives, torchtitan's split), what is
    left over spread over the first virtual stages: Llama 3's 126 layers on 16 stages are 7, 8,
    ..., 8, 7. NeMo AutoModel counts neither (automodel_layout). None when pp x v divides the
    layers (an even split) or the layers are too few."""
    n = pp * max(1, v)
    if pp <= 1 or layers % n == 0:
        return None
    if framework == "automodel":
        return automodel_layout(layers, n)
    base, extra = divmod(layers + 2, n)
    if base == 0:                   # more virtual stages than layers + 2: the last one is empty
        return None                 # of layers and owes the loss (not built: pp x v may be 10^10)
    per = [base + (1 if i < extra else 0) for i in range(n)]
    per[0] -= 1
    per[-1] -= 1
    return tuple(per) if min(per) >= 0 and sum(per) == layers else None


def automodel_layout(layers: int, stages: int) -> Optional[Tuple[int, ...]]:
    """NeMo AutoModel's split of a model's layers over its `stages` (virtual) pipeline stages:
    layers // stages each, the remainder one more on each of the first stages, the embedding
    added to the first stage and the final norm and output head to the last without counting
    as layers (nemo_automodel 0.1.0-0.7.0 components/distributed/pipelining/functional.py,
    generate_hf_model_fqn_per_model_part: `if stage_idx < extra_layers: stage_layer_count += 1`;
    it rejects more stages than layers). DeepSeek-V3's 61 layers on 32 stages: 29 of 2 layers,
    then 3 of 1, the last with the head."""
    if stages < 1 or stages > layers:
        return None
    base, extra = divmod(layers, stages)
    return tuple(base + (1 if i < extra else 0) for i in range(stages))


def _layout_and_source(job: JobSpec) -> Tuple[Optional[Tuple[int, ...]], str]:
    """The per-virtual-stage layout (declared, or derived when nothing is declared, as the job's
    framework lays it out; None when stage_layers splits the stages) and where stage_layers'
    split comes from: "layout" or "stages" (declared), "derived" (derived_layout) or "even"."""
    par, layers = job.parallel, job.model.layers
    v = par.v or 1
    if par.layout and len(par.layout) == par.pp * v:
        return par.layout, "layout"
    if not par.stages:
        derived = derived_layout(layers, par.pp, v, job.framework)
        return derived, "derived" if derived else "even"
    return None, "stages" if len(par.stages) == par.pp else "even"


def _layout(job: JobSpec) -> Optional[Tuple[int, ...]]:
    return _layout_and_source(job)[0]


def split_source(job: JobSpec) -> str:
    """Where the layers of each stage and chunk come from: "layout" or "stages" (stated in the
    design), "derived" (the framework's split of a model pp x v does not divide: derived_layout)
    or "even" (pp x v divides the layers, or as even as possible)."""
    return _layout_and_source(job)[1]


def stage_layers(job: JobSpec) -> Tuple[int, ...]:
    """Layers on each pipeline stage: the declared layout's or split, else the frameworks'
    (derived_layout), else even."""
    par, layers = job.parallel, job.model.layers
    v = par.v or 1
    layout = _layout(job)
    if layout:
        return tuple(sum(layout[c * par.pp + i] for c in range(v)) for i in range(par.pp))
    if par.stages and len(par.stages) == par.pp:
        return tuple(par.stages)
    base, extra = divmod(layers, par.pp)
    return tuple(base + (1 if i < extra else 0) for i in range(par.pp))


def chunk_split(per_stage: Tuple[int, ...], v: int) -> Optional[Tuple[Tuple[int, ...], ...]]:
    """[stage][chunk] -> layers, for `v` virtual stages, as Megatron-LM's layer options lay them
    out, or None when none of them gives `v` chunks. Megatron-LM splits each pipeline rank's
    layers evenly over its model chunks (megatron/core/transformer/transformer_block.py,
    get_num_layers_to_build: `num_layers_per_pipeline_rank % vp_size == 0`, also for the ranks of
    --num-layers-in-first/last-pipeline-stage); with --account-for-embedding-in-pipeline-split
    (--account-for-loss-in-pipeline-split) the embedding (the loss) counts as a layer, every rank
    holding the same number of them, and the first chunk of stage 0 (the last chunk of the last
    stage) builds one layer fewer, down to none. Uneven chunks such as 8 layers in 7 chunks need
    an explicit --pipeline-model-parallel-layout, which a job does not state."""
    p = len(per_stage)
    if v == 1:
        return tuple((n,) for n in per_stage)
    if v < 1 or p < 2:
        return None
    if all(n % v == 0 and n >= v for n in per_stage):
        return tuple((n // v,) * v for n in per_stage)
    for embed, loss in ((1, 1), (1, 0), (0, 1)):
        units = {n + (embed if i == 0 else 0) + (loss if i == p - 1 else 0)
                 for i, n in enumerate(per_stage)}
        if len(units) == 1 and next(iter(units)) % v == 0:
            k = next(iter(units)) // v
            rows = [[k] * v for _ in range(p)]
            rows[0][0] -= embed
            rows[-1][-1] -= loss
            return tuple(tuple(r) for r in rows)
    return None


def virtual_stage_options(per_stage: Tuple[int, ...]) -> List[int]:
    """The numbers of virtual stages chunk_split can lay out on these stages."""
    opts = set(divisors(math.gcd(*per_stage))) if per_stage else {1}
    p = len(per_stage)
    for embed, loss in ((1, 1), (1, 0), (0, 1)):
        units = {n + (embed if i == 0 else 0) + (loss if i == p - 1 else 0)
                 for i, n in enumerate(per_stage)}
        if len(units) == 1:
            opts |= set(divisors(next(iter(units))))
    return sorted(v for v in opts if chunk_split(per_stage, v) is not None)


def chunk_layers(job: JobSpec) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """[stage][chunk] -> (first layer, layer count). With v virtual stages, stage i's chunk c
    holds the model's (c * pp + i)-th slice, laid out by chunk_split (seer/validate_layout.py
    rejects a number of virtual stages it cannot lay out; here such a split falls back to chunks
    as even as possible, for JobSpecs built by hand)."""
    par = job.parallel
    layout = _layout(job)
    if layout:                              # declared (Megatron-Core's explicit layout) or derived
        split = tuple(tuple(layout[c * par.pp + i] for c in range(par.v))
                      for i in range(par.pp))
    else:
        split = chunk_split(stage_layers(job), par.v)
    if split is None:
        per_stage = stage_layers(job)
        split = tuple(tuple(n // par.v + (1 if c < n % par.v else 0) for c in range(par.v))
                      for n in per_stage)
    first, out = 0, [[None] * par.v for _ in range(par.pp)]
    for c in range(par.v):            # model order: chunk-major
        for i in range(par.pp):
            out[i][c] = (first, split[i][c])
            first += split[i][c]
    # multi-token prediction's layers (model_spec.ModelSpec.mtp_block: each depth's) follow the
    # model's last layer in the last chunk (Megatron-Core 0.16 builds them on the last pipeline
    # stage with the loss: models/gpt/gpt_model.py, and Megatron-Bridge's layouts end ["mtp",
    # "loss"])
    last = out[par.pp - 1][par.v - 1]
    out[par.pp - 1][par.v - 1] = (last[0], last[1] + job.model.mtp_block)
    return tuple(tuple(row) for row in out)


def full_recompute(job: JobSpec) -> Tuple[int, ...]:
    """The layers a job recomputes whole in its backward: none unless `recompute = full`; then
    every layer, or with `recompute_layers = N` the first N of each model chunk (Megatron-LM's
    `--recompute-granularity full --recompute-method block --recompute-num-layers N`: the
    first N layers of each pipeline stage's chunk checkpointed, the others keeping all their
    activations; megatron/core/transformer/transformer_block.py `_checkpointed_forward`)."""
    if job.recompute != "full":
        return ()
    n = job.recompute_layers
    if n is None:
        return tuple(range(job.model.layers + job.model.mtp_block))
    return tuple(sorted(L for row in chunk_layers(job) for first, count in row
                        for L in range(first, first + min(n, count))))


def divisors(n: int):
    return [d for d in range(1, n + 1) if n % d == 0]


def ceil_div(a, b):
    return -(-a // b) if b else 0


__all__ = ["stage_layers", "chunk_layers", "chunk_split", "virtual_stage_options", "divisors",
           "ceil_div"]
