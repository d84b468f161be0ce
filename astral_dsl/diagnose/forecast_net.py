"""What the forecast says each collective and transfer of a stage takes (the diagnosis compares
an instance with too few peers with it: evidence.timing), and W797 when the data cannot be
compared with it: the DP collectives (a sharded optimizer's gradient buckets and parameter
all-gather, or ZeRO-3 / FSDP's per-layer parameter all-gathers and gradient reduce-scatters,
the routed experts' on their expert-data-parallel group), the EP all-to-alls, the steps of
context parallelism's ring and the pipeline transfers."""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from astral_dsl.diagnose.evidence import MIN_PEERS
from astral_dsl.diagnose.match import DP_FAMILY, KIND_CODES, KIND_NAMES, P2P
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe.records import OP_INDEX
from astral_dsl.seer.lower_comm import sharded_parts


def forecast_net(fc, apart: bool = False) -> Dict:
    """(kind, stage) -> the forecast's seconds of one collective of the kind (one transfer);
    (kind, stage, op) where the kind's collectives differ: a data-parallel group's gradient
    reductions (the median bucket; (kind, stage, op, k) the k-th bucket's, the embedding's and
    the head's larger) and its parameter all-gather (Seer's whole gather, as the drill runs it:
    one collective) each have their own (evidence.timing); under ZeRO-3 / FSDP each layer's
    parameter all-gathers and gradient reduce-scatters (`_sharded`), likewise; with context
    parallelism the median step of the CP ring (`_cp_steps`). `apart`: the data shows the
    routed experts' collectives on their own group (`edp`: a trace's
    EXPERT_DATA_PARALLEL_GROUP), so the dense weights' are forecast alone and the experts' on
    their group (`_split`; ZeRO-3's per layer, `_sharded`); else a bucket's, a gather's and a
    layer's whole time (a rank log's one row, as Megatron-LM's timers time both)."""
    from astral_dsl.seer.pipeline_pairs import used

    out = {}
    low = fc.lowering
    dp = KIND_CODES["dp"]
    for s, run in enumerate(fc.runs):
        gather = float(run.gather[1] - run.gather[0])
        dense, expert = _split(low, s, run, gather, apart)
        _keys(out, dp, s, *dense)
        if expert[0] or expert[1] > 0:          # the routed experts' own collectives
            _keys(out, KIND_CODES["edp"], s, *expert)
        parts = _sharded(low, s, run, apart) if not run.dp and gather <= 0 else ({}, {})
        for code, sharded in zip((dp, KIND_CODES["edp"]), parts):
            if "reduce_scatter" in sharded:      # a reduction the data names an all-reduce
                sharded["all_reduce"] = sharded["reduce_scatter"]
            if len(sharded) == 1:                # one collective: the data need not say which
                sharded["collective"] = next(iter(sharded.values()))
            for op, times in sharded.items():
                out[(code, s, OP_INDEX[op])] = float(np.median(times))
                for k, t in enumerate(times):    # each one's, in the iteration's order
                    out[(code, s, OP_INDEX[op], k)] = t
        ring = _cp_steps(low, s, run) if fc.job.parallel.cp > 1 else []
        if ring:                         # the CP ring's steps: few CP groups a stage (one
            #                              a TP rank) are judged by this
            out[(KIND_CODES["cp"], s)] = float(np.median(ring))
        a2a = _all_to_alls(low, s, run)
        if a2a:                          # few EP groups a stage (one on DeepSeek-V3's GB200
            #                              layout): their all-to-alls are judged by this
            out[(KIND_CODES["ep"], s)] = float(np.median(a2a))
        if fc.job.parallel.pp > 1:       # the slowest boundary the stage sends or receives over
            out[(P2P, s)] = float(max(low.p2p_hops()[b] for b in used(fc.job)
                                            if s in (b, (b + 1) % fc.job.parallel.pp)))
    dpcp = KIND_CODES["dpcp"]        # Seer prices the DP collectives over DP x CP: the same
    for key in [k for k in out if k[0] == dp]:
        out[(dpcp,) + key[1:]] = out[key]
    return out


def _split(low, stage: int, run, gather: float, apart: bool):
    """((each bucket's reduction, the parameter all-gather) of the dense weights, the same of
    the routed experts'), seconds. Seer prices a bucket (and the gather) of a MoE job as two
    collectives one after the other, the dense weights' over DP x CP and the experts' over the
    expert-data-parallel group (seer/params.dp_parts); `apart`, each on its own (on moe.astral's
    `moe` 2.72 and 7.15 ms of a 9.87 ms bucket), else the whole as the dense one's."""
    if not apart or low.stage_split(stage)[1] <= 0:       # no routed experts on the stage
        return ([e - a for a, e, _ in run.dp], gather), ([], 0.0)
    dense, expert = [], []
    for _, _, params in run.dp:
        d, x = low.at(stage).dp_parts(params)
        if params[0] > 0:
            dense.append(d)
        if params[1] > 0:
            expert.append(x)
    g_dense, g_expert = gather, 0.0
    if gather > 0:
        g_dense, g_expert = low.at(stage).dp_parts(low.stage_split(stage), gather=True,
                                         linear=low.stage_linear(stage))
    return (dense, g_dense), (expert, g_expert)


def _keys(out: Dict, kind: int, stage: int, buckets: List[float], gather: float) -> None:
    """The forecast's DP collectives of `kind` on `stage`: each bucket's reduction (`buckets`,
    in order; their median for one the data does not place) and the parameter all-gather."""
    if buckets:       # a collective whose data does not say: a reduction, unless gathers
        #               are forecast too (then neither: W797)
        reduce = float(np.median(buckets))
        for op in ("all_reduce", "reduce_scatter") + (() if gather > 0 else ("collective",)):
            out[(kind, stage, OP_INDEX[op])] = reduce
            for k, t in enumerate(buckets):       # each bucket's, in its order
                out[(kind, stage, OP_INDEX[op], k)] = t
    if gather > 0:
        out[(kind, stage, OP_INDEX["all_gather"]) if buckets else (kind, stage)] = gather


def _sharded(low, stage: int, run, apart: bool = False
             ) -> Tuple[Dict[str, List[float]], Dict[str, List[float]]]:
    """ZeRO-3 / FSDP: the seconds of each parameter all-gather and gradient reduce-scatter of
    the stage's iteration, by collective, in the order the blocks run them (Seer's operators on
    the DP stream: a layer's weights gathered before its forward and, resharded, again before
    its backward; its gradients reduce-scattered after it), and ({} unless `apart`) the routed
    experts' own. Seer prices a MoE layer's as two collectives one after the other
    (params.weights_coll): `apart` (the data shows the experts' on their own group), the dense
    weights' over DP x CP and the experts' over the expert-data-parallel group each on its
    own (dp_parts), else the whole as the dense one's (a rank log's one row)."""
    dense: Dict[str, List[float]] = {}
    expert: Dict[str, List[float]] = {}
    for b in run.blocks:
        for o, op, d, x in sharded_parts(low, stage, b.chunk, b.phase):
            if not apart:
                d, x = o.dur, 0.0
            dense.setdefault(op, []).append(float(d))
            if x > 0:
                expert.setdefault(op, []).append(float(x))
    return dense, expert


def _cp_steps(low, stage: int, run) -> List[float]:
    """The seconds of each context-parallel ring step of the stage's blocks (Seer's operators
    on the `cp` stream: seer/lower_ring._cp_attention), each block's template once (every
    one runs once a micro-batch: the median is the same)."""
    blocks = dict.fromkeys((b.chunk, b.phase) for b in run.blocks)
    return [float(o.dur) for chunk, phase in blocks
            for o in low.template(stage, chunk, phase).ops if o.stream == "cp"]


def unnamed_dp(tm, inst, fc_net, files, zero: int = 0) -> Diagnostic:
    """W797: DP collectives with too few peers whose data does not say which collective they
    are, while the forecast's gradient reductions and parameter all-gathers differ; the two
    forecasts of the stages they run on (a range where the stages' differ: the first stage's
    embedding makes its gather the larger; under ZeRO-3 (`zero` 3) the median layer's of
    each)."""
    dp = KIND_CODES["dp"]
    family = np.isin(inst.kind, [KIND_CODES[k] for k in DP_FAMILY])
    n = int(tm.unnamed.sum())
    stages = sorted(set(tm.stage[tm.unnamed].tolist()))
    reduce = [fc_net[(dp, s, OP_INDEX["all_reduce"])] for s in stages]
    gather = [fc_net[(dp, s, OP_INDEX["all_gather"])] for s in stages]
    return Diagnostic(
        "W797", Severity.WARNING,
        f"{n:,} of the {int((tm.usable & family).sum()):,} DP collectives are not "
        f"judged: the data does not say which collective each is, the forecast's gradient "
        f"reductions and parameter all-gathers differ ({_ms_span(reduce)} a "
        f"{'layer' if zero >= 3 else 'bucket'}, {_ms_span(gather)} "
        f"{'a layer' if zero >= 3 else 'the gather'} on {_stages(stages)}), and fewer than "
        f"{MIN_PEERS} DP groups of its stage run each to compare it with",
        None, "name each collective: a log's `op` column (all_reduce, reduce_scatter, "
              "all_gather) or Megatron-LM's timers (grads-reduce-scatter, params-all-gather); "
              "a trace's `Collective name` argument or NCCL kernel names",
        file=files[0] if files else None)


def unforecast_dp(tm, zero: int, files) -> Diagnostic:
    """W797: DP collectives with too few peers that the data names as a collective the
    forecast has none of: a parameter all-gather of a job whose `zero` is 0 (the forecast
    all-reduces the gradients and gathers nothing)."""
    n = int(tm.unforecast.sum())
    stages = sorted(set(tm.stage[tm.unforecast].tolist()))
    return Diagnostic(
        "W797", Severity.WARNING,
        f"{n:,} DP parameter all-gather(s) on {_stages(stages)} are not judged: the forecast "
        f"of the job (`zero` {zero}) gathers no parameters, and fewer than "
        f"{MIN_PEERS} DP groups of its stage run each to compare it with",
        None, "the run shards what the job does not: set the job's `zero` (in `parallel`) to "
              "the run's ZeRO stage (1 or 2: a distributed optimizer), or check that the data's "
              "`all_gather` rows are this job's",
        file=files[0] if files else None)


def uncompared(tm, inst, files, tp_table=None) -> List[Diagnostic]:
    """W797, one per kind: collectives (or pipeline transfers) with too few peers (fewer than
    MIN_PEERS groups of their stage run them) and no forecast to compare them with: TP
    collectives (CP ones where Seer prices no ring: unfused attention), inside one host or
    leaving their NVLink domain, where one or two groups a stage run them and the data gives
    them at a grain Seer's price of them inside its blocks does not have (`tp_table`:
    in_blocks.forecast_tp; one a collective, one a block or their sum an iteration are judged
    against it), a MoE job's experts' gradient collectives on a stage without routed experts
    in Seer's split. They were compared with nothing and never slow: said, so that nothing
    suspect is no all-clear."""
    out = []
    for code in sorted(set(inst.kind[tm.uncompared].tolist())):
        sel = tm.uncompared & (inst.kind == code)
        name = "pipeline transfers" if code == P2P else \
            f"{KIND_NAMES[code].upper()} collectives"
        group = "pipeline pairs" if code == P2P else f"{KIND_NAMES[code].upper()} groups"
        stages = sorted(set(tm.stage[sel].tolist()))
        grains = sorted({n for (s, n) in (tp_table or {}) if s in stages}, reverse=True) \
            if code == KIND_CODES["tp"] else []
        why, hint = ("the forecast has no time of their own for them",
                     "compare their times across iterations in the breakdown "
                     "(`comm_by_kind_s`), or diagnose a layout with at least 3 such groups a "
                     "stage (a larger dp), whose collectives are compared with each other")
        if grains:
            seen = sorted(set(np.unique(np.stack([inst.group[sel], inst.iteration[sel]]),
                                        axis=1, return_counts=True)[1].tolist()))
            why = (f"the data gives {_either(seen)} a group and iteration, a "
                   f"grain the forecast does not price them at "
                   f"({_either(grains)})")
            hint = ("give the TP collectives one row (or kernel) each, one a block, or their "
                    "sum an iteration (Seer prices each, its blocks' exposed share, and their "
                    "sum), or diagnose a layout with at least 3 TP groups a stage")
        out.append(Diagnostic(
            "W797", Severity.WARNING,
            f"{int(sel.sum()):,} of the {int((tm.usable & (inst.kind == code)).sum()):,} "
            f"{name} on {_stages(stages)} are not judged: fewer than {MIN_PEERS} {group} of "
            f"their stage run each to compare it with, and {why}",
            None, hint, file=files[0] if files else None))
    return out


def _either(values) -> str:
    """'152, 16 or 1'."""
    v = [str(x) for x in values]
    return v[0] if len(v) == 1 else f"{', '.join(v[:-1])} or {v[-1]}"


def _ms_span(seconds) -> str:
    """'1.681 ms', or '3.694 to 4.469 ms' where they differ (at the shown precision)."""
    lo, hi = f"{min(seconds) * 1e3:.3f}", f"{max(seconds) * 1e3:.3f}"
    return f"{lo} ms" if lo == hi else f"{lo} to {hi} ms"


def _stages(stages) -> str:
    """'stage 0', 'stages 0 and 1', 'stages 0 to 15' (consecutive), 'stages 0, 2, 5'."""
    if len(stages) == 1:
        return f"stage {stages[0]}"
    if len(stages) == 2:
        return f"stages {stages[0]} and {stages[1]}"
    if stages[-1] - stages[0] == len(stages) - 1:
        return f"stages {stages[0]} to {stages[-1]}"
    return "stages " + ", ".join(map(str, stages))


def _all_to_alls(low, stage: int, run) -> list:
    """The whole time of each EP all-to-all (dispatch, combine) of the stage's blocks, as Seer
    prices it: its operator on the `ep` stream and the share `ep_overlap` hides (its
    `(overlapped)` side operator)."""
    whole: Dict[Tuple, float] = {}
    for k, b in enumerate(run.blocks):
        for o in low.template(stage, b.chunk, b.phase).ops:
            if o.stream == "ep":
                key = (k, o.name.replace(" (overlapped)", ""), o.layer)
                whole[key] = whole.get(key, 0.0) + o.dur
    return list(whole.values())


__all__ = ["forecast_net", "uncompared", "unforecast_dp", "unnamed_dp"]
