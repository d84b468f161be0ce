"""The job checks of its parallel layout and batch (validate.py runs them): degrees that divide
the model, declared stage splits and layouts (E750-E754, E756), the rank order (E759), the
pipeline blocks of one simulation (E762), and interleaved schedules that cannot run (E760) or
that Megatron-LM refuses (W757)."""
from __future__ import annotations

from typing import List, Optional

from astral_dsl.analyses import rank_order
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import budget
from astral_dsl.seer.diag import choices, err as _err, warn as _warn
from astral_dsl.seer.spec import DIMENSIONS, JobSpec
from astral_dsl.seer.validate_moe import expert_tensor
from astral_dsl.seer.stages import chunk_split, stage_layers, virtual_stage_options
from astral_dsl.units.readable import count as _n


def budget_blocks(spec: JobSpec, where) -> List[Diagnostic]:
    """The pipeline blocks one simulation runs (E762): with a declared micro-batch, that
    simulation's; else the rule must have a candidate within the budget."""
    par = spec.parallel
    v = par.v or 1
    if not spec.micro:
        # imported here, for start-up: a job that declares its micro-batch never asks the rule
        # (nor its schedule, which the rule imports)
        from astral_dsl.seer.rule import candidates

        if candidates(spec):
            return []
    micro = spec.micro or budget.largest_micro(spec)
    m = spec.global_batch // max(1, micro * par.dp)
    blocks = budget.blocks(par.pp, v, m)
    if blocks <= budget.MAX_BLOCKS:
        return []
    field = "micro" if spec.micro else "global_batch"
    return [_err("E762", f"job `{spec.name}`: {_n(blocks)} pipeline blocks to simulate (2 x pp "
                         f"x virtual stages x micro-batches = 2 x {par.pp} x {v} x {_n(m)}), "
                         f"over Seer's work budget of {budget.MAX_BLOCKS:,} (docs/seer.md)",
                 where(field, "batch"), "a larger micro-batch or a smaller global batch")]


def interleaving(spec: JobSpec, where) -> List[Diagnostic]:
    """E760: declared virtual stages with no micro-batch the interleaved schedule's order can
    run (schedule.runnable): the declared one, or none of those the rule may choose. The rule
    never picks such a configuration (rule.candidates), so `check` refuses what `forecast`
    could not run."""
    par = spec.parallel
    if par.schedule != "interleaved" or not par.v or par.v < 2 or par.pp < 2:
        return []
    # imported here, for start-up: only declared virtual stages ask the rule
    from astral_dsl.seer.rule import candidates

    runnable = candidates(spec)
    if runnable:
        return _megatron_groups(spec, runnable, where)
    micros = [spec.micro] if spec.micro else budget.micro_candidates(
        max(1, spec.global_batch // par.dp))
    counts = sorted({spec.global_batch // (b * par.dp) for b in micros})
    which = (f"micro-batch {spec.micro}" if spec.micro else
             "any micro-batch the rule may choose (" + ", ".join(map(str, sorted(micros))) + ")")
    return [_err("E760", f"job `{spec.name}`: with {which} an iteration has "
                         f"{' or '.join(map(_n, counts))} micro-batches, which the interleaved "
                         f"schedule of pp = {par.pp} stages and {par.v} virtual stages cannot "
                         f"order (its sends would wait on each other)", where("virtual_stages"),
                 f"Megatron-LM's interleaved schedule wants the micro-batches per iteration to "
                 f"be a multiple of pp = {par.pp}: a global batch of "
                 f"{_n(par.pp * par.dp * (spec.micro or 1))} x k, or leave `virtual_stages` "
                 "to the rule")]


def _megatron_groups(spec: JobSpec, runnable, where) -> List[Diagnostic]:
    """W757: declared virtual stages whose micro-batches per run of the schedule are not a
    multiple of pp, with every micro-batch the job may take. Megatron-Core runs an interleaved
    schedule's micro-batches in groups of `microbatch_group_size_per_vp_stage` (pp by default,
    never less) and refuses fewer than one group, or a last group of fewer than pp
    (megatron/core/pipeline_parallel/schedules.py, 0.16.1): the rule and `astral search`
    never interleave such a job; Seer forecasts the declared one's order all the same."""
    pp = spec.parallel.pp
    counts = sorted({c.run_microbatches for c in runnable})
    if any(m % pp == 0 for m in counts):
        return []
    return [_warn("W757", f"job `{spec.name}`: {' or '.join(map(_n, counts))} micro-batches per "
                          f"pipeline, not a multiple of pp = {pp}: Megatron-LM's interleaved "
                          f"schedule refuses them (micro-batches in groups of pp, "
                          f"megatron/core/pipeline_parallel/schedules.py); Seer forecasts the "
                          f"order anyway, which its rule and `astral search` never choose",
                  where("virtual_stages"),
                  f"a global batch of {_n(pp * spec.parallel.dp * (spec.micro or 1))} x k "
                  f"(micro-batches a multiple of pp), or leave `virtual_stages` out (1F1B)")]


def layout(spec: JobSpec, where) -> List[Diagnostic]:
    m, par, out = spec.model, spec.parallel, []
    name = f"job `{spec.name}`"
    if m.heads % par.tp:
        out.append(_err("E750", f"{name}: tp = {par.tp} does not divide the {m.heads} attention "
                                f"heads of `{m.name}`", where("tp"),
                        "choose a tensor-parallel degree that divides the heads"))
    elif m.kv_heads % par.tp and par.tp % m.kv_heads:
        out.append(_err("E750", f"{name}: tp = {par.tp} and the {m.kv_heads} key/value heads of "
                                f"`{m.name}` do not divide one another", where("tp"),
                        "a tensor-parallel degree that divides the key/value heads or is a "
                        f"multiple of them: "
                        + choices(m.heads, lambda t: not m.kv_heads % t or not t % m.kv_heads,
                                  "tp")))
    if par.layout:
        v = par.v or 1
        k, rest = divmod(len(par.layout), par.pp)
        if par.v is None and k > 1 and not rest and sum(par.layout) == m.layers:
            # (the Python API only: a .astral layout states its virtual stages, seer/job.py) an
            # interleaved schedule whose virtual stages are left to the rule: a layout of
            # pp x k entries says k, which the rule is not asked to guess
            out.append(_err("E752", f"{name}: the declared layout {_show(par.layout)} has "
                                    f"{len(par.layout)} chunks, {k} per stage of pp = "
                                    f"{par.pp}, and `virtual_stages` is not stated (the rule "
                                    f"would choose it)",
                            where("layout"),
                            f"state `virtual_stages = {k}` with the layout"))
        elif len(par.layout) != par.pp * v or sum(par.layout) != m.layers:
            out.append(_err("E752", f"{name}: the declared layout {_show(par.layout)} has "
                                    f"{len(par.layout)} virtual stages and {sum(par.layout)} "
                                    f"layers; pp x virtual_stages = {par.pp} x {v} and "
                                    f"`{m.name}` has {m.layers} layers", where("layout"),
                            f"list {par.pp * v} layer counts, in model order, adding up to "
                            f"{m.layers}"))
    elif par.stages:
        if len(par.stages) != par.pp or sum(par.stages) != m.layers or min(par.stages) < 1:
            out.append(_err("E752", f"{name}: the declared split {_show(par.stages)} has "
                                    f"{len(par.stages)} stages and {sum(par.stages)} layers; "
                                    f"pp = {par.pp} and `{m.name}` has {m.layers} layers",
                            where("stages"),
                            f"list {par.pp} positive layer counts adding up to {m.layers}"))
    elif par.pp > m.layers:
        out.append(_err("E751", f"{name}: pp = {par.pp} stages for the {m.layers} layers of "
                                f"`{m.name}`", where("pp"), "at most one stage per layer"))
    elif par.v and par.pp * par.v > m.layers + 2:
        # the frameworks' layout gives the first and the last model chunk the embedding and
        # the loss in a layer's place (stages.derived_layout), no other chunk may be empty:
        # pp 4 x 21 virtual stages of 80 layers were forecast as chunks [80 x 1, 4 x 0]
        out.append(_err("E751", f"{name}: pp x virtual_stages = {par.pp} x {par.v} = "
                                f"{_n(par.pp * par.v)} model chunks for the {m.layers} layers "
                                f"of `{m.name}`", where("virtual_stages"),
                        f"a model chunk holds a layer (the first and the last may hold the "
                        f"embedding or the loss alone): virtual_stages of at most "
                        f"{(m.layers + 2) // par.pp}, or leave it to the rule"))
    if not out and par.v and par.v > 1 and par.stages and not par.layout and \
            chunk_split(stage_layers(spec), par.v) is None:
        per_stage = stage_layers(spec)
        options = [v for v in virtual_stage_options(per_stage) if v > 1]
        out.append(_err("E751", f"{name}: the layers per stage {_show(per_stage)} do not split "
                                f"into {_n(par.v)} virtual stages of equal size",
                        where("virtual_stages"),
                        "Megatron-LM splits each stage's layers evenly over its model chunks "
                        "(counting the embedding and the loss as a layer with "
                        "--account-for-embedding/loss-in-pipeline-split): "
                        + (f"virtual_stages = {' or '.join(map(str, options))}, or leave it to "
                           f"the rule" if options else "these stages cannot be interleaved")))
    if m.experts:
        if m.experts % par.ep:
            out.append(_err("E753", f"{name}: ep = {par.ep} does not divide the {m.experts} "
                                    f"experts of `{m.name}`", where("ep"), _ep_hint(m, par)))
        elif _grid(spec)[0] == "ep":
            out.append(_err("E753", f"{name}: ep = {par.ep} does not divide tp x dp x cp = "
                                    f"{par.tp * par.dp * par.cp}: expert groups are carved out "
                                    f"of the tensor- and data-parallel ranks (expert tensor "
                                    f"parallelism {par.etp})", where("ep"), _ep_hint(m, par)))
        else:
            out.extend(expert_tensor(spec, where, _grid(spec)[0] == "etp"))
    elif par.ep > 1:
        out.append(_err("E753", f"{name}: ep = {par.ep} but `{m.name}` has no experts",
                        where("ep"), "leave `ep` out (1): a dense model has no experts to "
                                     "spread"))
    else:
        out.extend(expert_tensor(spec, where))
    if spec.gpus is not None and spec.gpus != par.gpus:
        out.append(_err("E754", f"{name}: declares {spec.gpus} GPUs but tp x pp x dp x cp = "
                                f"{par.tp} x {par.pp} x {par.dp} x {par.cp} = {par.gpus}",
                        where("gpus", ""), "make `gpus` the product of the parallel degrees"))
    micro = spec.micro or 1
    if spec.global_batch % (micro * par.dp):
        out.append(_err("E756", f"{name}: global batch {spec.global_batch} is not divisible by "
                                f"micro-batch x dp = {micro} x {par.dp}",
                        where("global_batch", "batch"), f"use a multiple of {micro * par.dp}"))
    runs, m = spec.pipeline_runs, spec.global_batch // (micro * par.dp)
    if runs > 1 and not spec.global_batch % (micro * par.dp) and m % runs:
        what = f"{m} micro-batches a pipeline" if spec.micro else \
            f"{m} sequences a data-parallel rank"
        out.append(_err("E756", f"{name}: {what} do not split into pipeline_runs = {runs} "
                                f"equal runs of the schedule",
                        where("pipeline_runs", "batch"),
                        f"make the global batch a multiple of {runs * micro * par.dp} (or "
                        f"pipeline_runs a divisor of {m})"))
    out.extend(_context_split(spec, name, where))
    out.extend(_order(spec, where))
    return out


# Context parallelism's split of the sequence. Transformer Engine 2.9 balances the causal mask's
# work by cutting each sequence into 2 x cp chunks, rank r holding chunks r and 2 cp - 1 - r:
# "it requires sequence lengths to be, or are padded to be, divisible by (cp_size * 2)"
# (attention/dot_product_attention/context_parallel.py, attn_forward_func_with_cp; utils.py:
# "context parallelism requires seq_len % (cp_size * 2) == 0"), and Megatron-Core 0.16.1 cuts
# the batch so (utils.get_batch_on_this_cp_rank: `view(..., 2 * cp_size, seq // (2 * cp_size))`).
# Seer's ring (lower_ring._cp_attention) prices that split for every framework.
# A ring step multiplies one chunk's queries or keys (the off-diagonal steps: half the rank's
# queries against its block, or all against half; s / 2cp rows): FlashAttention tiles the
# queries and keys in blocks of up to 128 rows (FlashAttention-2, Dao 2023, section 3.3: blocks
# of {64, 128} x {64, 128} by head dimension and shared memory; FlashAttention-3, Shah et al.
# 2024: 128-row query tiles on Hopper), so a chunk under 128 tokens runs padded tiles: past that
# cp, more ranks add ring steps and no speed. `astral search` never takes such a cp; a job that
# states one is forecast, with W760.
CP_TILE = 128


def cp_split(seq: int, cp: int) -> Optional[str]:
    """The first of context parallelism's rules (CP_TILE's comment) that a sequence of `seq`
    tokens on `cp` ranks breaks: "seq" (not 2 x cp equal chunks: E756), "tile" (chunks under a
    FlashAttention tile: W760), or None. Validation and `astral search` (explore/search/
    space.py) both ask this one function."""
    if cp <= 1:
        return None
    if seq % (2 * cp):
        return "seq"
    if seq // (2 * cp) < CP_TILE:
        return "tile"
    return None


def _context_split(spec: JobSpec, name: str, where) -> List[Diagnostic]:
    """E756 / W760: the declared cp against the sequence (cp_split)."""
    s, cp = spec.seq, spec.parallel.cp
    rule = cp_split(s, cp)
    if rule is None:
        return []
    fewer = choices(s, lambda c: c < cp and cp_split(s, c) is None, "cp")   # for the hint
    if rule == "seq":
        return [_err("E756", f"{name}: sequence {_n(s)} is not divisible by 2 x cp = 2 x {cp}",
                     where("cp"), "each context-parallel rank holds two equal chunks of the "
                                  "sequence (Transformer Engine's load-balanced causal split): "
                     + fewer + f", or a sequence that is a multiple of {2 * cp}")]
    if rule == "tile":
        return [_warn("W760", f"{name}: cp = {cp} cuts the sequence of {_n(s)} tokens into "
                              f"2 x {cp} chunks of {_n(s // (2 * cp))}, fewer than a "
                              f"FlashAttention tile of {CP_TILE} rows: each ring step runs "
                              f"padded tiles, which Seer does not price",
                      where("cp"), f"chunks of at least {CP_TILE} tokens: " + fewer
                      + f", or a sequence of at least {_n(2 * cp * CP_TILE)}")]
    return []


def _ep_hint(m, par) -> str:
    """E753's hint: the expert-parallel degrees that divide both the experts and TP x DP x CP."""
    ranks = par.tp * par.dp * par.cp
    return ("ep divides both the experts and tp x dp x cp = "
            f"{ranks:,}: " + choices(m.experts, lambda e: not ranks % e, "ep"))


def _show(stages) -> str:
    if len(stages) <= 8:
        return "[" + ", ".join(map(str, stages)) + "]"
    return f"[{stages[0]}, {stages[1]}, {stages[2]}, ..., {stages[-2]}, {stages[-1]}]"


def _order(spec: JobSpec, where) -> List[Diagnostic]:
    """E759: `order` names parallel dimensions, each once, and every dimension of size > 1
    (Megatron-Core's RankGenerator; a dimension of size 1 may be left out)."""
    par = spec.parallel
    order = par.order
    text = "-".join(order)
    sizes = {"tp": par.tp, "cp": par.cp, "ep": par.ep, "dp": par.dp, "pp": par.pp}
    unknown = [d for d in order if d not in DIMENSIONS]
    twice = sorted({d for d in order if order.count(d) > 1})
    missing = [d for d in DIMENSIONS if d not in order and sizes[d] > 1]
    problem = None
    if not order:
        problem = "names no dimension"
    elif unknown:
        problem = "does not know " + ", ".join(f"`{d}`" for d in unknown)
    elif twice:
        problem = "names " + ", ".join(f"`{d}`" for d in twice) + " more than once"
    elif missing:
        problem = "leaves out " + ", ".join(f"`{d}` ({d} = {sizes[d]})" for d in missing)
    hint = ('name the parallel dimensions tp, cp, ep, dp and pp once each, fastest first, '
            'e.g. "tp-cp-ep-dp-pp" (Megatron-Core\'s default) or "tp-cp-ep-pp-dp"')
    rule, what = _grid(spec)
    if problem is None and rule in ("named", "pp"):
        problem = what
        if rule == "pp":
            hint = ('put `pp` last, as in "tp-cp-ep-dp-pp" (Megatron-Core\'s default); with '
                    '`pp` just before `dp`, ep x etp = tp x cp = '
                    f'{par.tp * par.cp:,} keeps the experts\' data-parallel and pipeline groups '
                    'those of the dense layers')
    if problem is None:
        return []
    return [_err("E759", f"job `{spec.name}`: the rank order \"{text}\" {problem}",
                 where("order"), hint)]


def _grid(spec: JobSpec):
    """The expert-grid rule a model with experts breaks (analyses/rank_order.expert_grid, the
    rule `astral search` applies too), as (rule, what); (None, "") if none or no experts."""
    par = spec.parallel
    if not spec.model.experts:
        return None, ""
    return rank_order.expert_grid(par.tp, par.cp, par.dp, par.pp, par.ep, par.etp,
                                  par.order) or (None, "")
