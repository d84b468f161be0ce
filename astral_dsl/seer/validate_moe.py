"""The checks of a job's mixture-of-experts fields: token dropping as Megatron-Core accepts it
(E771), expert tensor parallelism (E753), the model's expert groups (E763), and whether Seer
can price their limit on the job's NVLink domains (W755); MoE-only fields on a model without
experts do nothing (W751)."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import routing
from astral_dsl.seer.diag import choices, err, warn
from astral_dsl.seer.spec import JobSpec

MOE_ONLY = ("capacity_factor", "pad_to_capacity", "moe_routing", "grouped_gemm",
            "router_fusion", "permute_fusion")


def token_drop(spec: JobSpec, where) -> List[Diagnostic]:
    """Padding needs a capacity, and DeepEP's dispatcher does not pad (E771; Megatron-Core's
    transformer_config.py); on a model without experts the MoE fields do nothing (W751)."""
    name, stated = f"job `{spec.name}`", where.fields
    fields = [f for f in MOE_ONLY if f in stated]
    if fields and not spec.model.experts:
        verb = "have" if len(fields) > 1 else "has"
        return [warn("W751", f"{name}: {' and '.join(fields)} {verb} no effect: "
                             f"`{spec.model.name}` has no experts", where(fields[0], ""),
                     "leave " + ", ".join(f"`{f}`" for f in fields) + " out: they set how a "
                     "mixture of experts routes and drops tokens")]
    if spec.pad_to_capacity and spec.capacity_factor is None:
        return [err("E771", f"{name}: pad_to_capacity = true without a capacity_factor: there "
                            f"is no capacity to pad to", where("pad_to_capacity", ""),
                    "state the capacity, e.g. `capacity_factor = 1.0` (Megatron-Bridge's "
                    "token-drop setting), or leave `pad_to_capacity` out (dropless)")]
    if spec.pad_to_capacity and spec.moe_dispatcher == "deepep":
        return [err("E771", f"{name}: pad_to_capacity = true with moe_dispatcher = deepep: "
                            f"DeepEP's dispatcher does not pad the experts' inputs",
                    where("pad_to_capacity", ""),
                    "`moe_dispatcher = alltoall` (Megatron-Core's padded token dropping), or "
                    "leave `pad_to_capacity` out")]
    return []


def expert_tensor(spec: JobSpec, where, beyond_ranks: bool = False) -> List[Diagnostic]:
    """E753 for an expert tensor parallelism (`etp`) Megatron-Core refuses or Seer does not
    model: a model without experts; ETP x EP x PP not dividing the world (parallel_state.py:
    "world_size is not divisible by expert_tensor_model_pipeline_parallel size"), i.e. ETP x EP
    not dividing TP x DP x CP; an FFN width of an expert that ETP does not divide (experts.py:
    `divide(moe_ffn_hidden_size x local experts, tp_size)` over the expert-TP group); experts
    with biases (transformer_config.py: "Bias in Moe is only supported when ETP==1"); and, as
    Seer prices ETP only as Megatron-Core's all-to-all dispatcher runs it (an all-gather and a
    reduce-scatter over the expert-TP group: lower_moe.py), another dispatcher or framework.
    `beyond_ranks`: ETP x EP does not divide TP x DP x CP (analyses/rank_order.expert_grid's
    "etp", the rule `astral search` applies too)."""
    par, m = spec.parallel, spec.model
    etp, name = par.etp, f"job `{spec.name}`"
    if etp <= 1:
        return []
    if not m.experts:
        return [err("E753", f"{name}: etp = {etp} but `{m.name}` has no experts",
                    where("etp"), "leave `etp` out (1): expert tensor parallelism splits "
                                  "the routed experts' weights")]
    ranks = par.tp * par.dp * par.cp
    if beyond_ranks:
        return [err("E753", f"{name}: ep x etp = {par.ep} x {etp} does not divide tp x dp x "
                            f"cp = {ranks:,}: the expert-tensor- and expert-parallel groups "
                            f"are carved out of a pipeline stage's ranks",
                    where("etp"), _etp_hint(spec))]
    if m.moe_ffn % etp:
        return [err("E753", f"{name}: etp = {etp} does not divide the {m.moe_ffn:,} FFN "
                            f"width of an expert of `{m.name}`", where("etp"), _etp_hint(spec))]
    if m.expert_bias:
        return [err("E753", f"{name}: etp = {etp} with the experts' biases of `{m.name}`: "
                            f"Megatron-Core supports biases in MoE only with expert tensor "
                            f"parallelism 1", where("etp"), "leave `etp` out (1)")]
    if spec.framework != "megatron" or spec.moe_dispatcher != "alltoall":
        what = f"framework = {spec.framework}" if spec.framework != "megatron" else \
            f"moe_dispatcher = {spec.moe_dispatcher}"
        return [err("E753", f"{name}: etp = {etp} with {what}: Seer models expert tensor "
                            f"parallelism as Megatron-Core's all-to-all dispatcher runs it",
                    where("etp"), "framework = megatron with moe_dispatcher = alltoall, or "
                                  "leave `etp` out (1)")]
    return []


def _etp_hint(spec: JobSpec) -> str:
    """E753's hint for `etp`: the degrees that divide both tp x dp x cp / ep (the ranks of a
    stage each EP rank's experts can be split over) and an expert's FFN width."""
    par, m = spec.parallel, spec.model
    room = max(1, par.tp * par.dp * par.cp // max(1, par.ep))
    return (f"etp divides both tp x dp x cp / ep = {room:,} and the experts' FFN width "
            f"{m.moe_ffn:,}: " + choices(room, lambda e: not m.moe_ffn % e, "etp"))


def expert_groups(spec: JobSpec, where) -> List[Diagnostic]:
    """Group-limited routing holds together (E763): whole groups of experts, a token's groups
    among them, and room in them for its top-k experts (Megatron-Core's group_limited_topk
    takes top_k / group_top_k experts per picked group)."""
    m = spec.model
    name = f"`{m.name}`"
    G, g = m.expert_groups, m.group_top_k
    if not (G or g):
        return []
    if not m.experts:
        return [err("E763", f"{name}: expert_groups and group_top_k without `experts`",
                    where.model_field("expert_groups" if G else "group_top_k"),
                    "group-limited routing groups a mixture's experts: state `experts`, or "
                    "leave the groups out")]
    if not G or not g:
        missing = "expert_groups" if not G else "group_top_k"
        return [err("E763", f"{name}: group-limited routing needs both expert_groups and "
                            f"group_top_k; `{missing}` is not stated",
                    where.model_field("expert_groups" if G else "group_top_k"),
                    "DeepSeek-V3: `expert_groups = 8, group_top_k = 4` (its config.json's "
                    "n_group and topk_group)")]
    if m.experts % G:
        return [err("E763", f"{name}: {m.experts} experts do not split into {G} equal groups",
                    where.model_field("expert_groups"),
                    "the groups divide the experts: "
                    + choices(m.experts, lambda d: d > 1, "expert_groups"))]
    if g > G:
        return [err("E763", f"{name}: group_top_k = {g} picks more groups than its {G}",
                    where.model_field("group_top_k"), f"at most `group_top_k = {G}`")]
    if g > m.top_k:
        return [err("E763", f"{name}: group_top_k = {g} picks more groups than a token has "
                            f"experts (top_k = {m.top_k})", where.model_field("group_top_k"),
                    "Megatron-Core ranks a group by the sum of its top top_k / group_top_k "
                    "scores, none when group_top_k > top_k: at most `group_top_k = top_k`")]
    if m.top_k > g * (m.experts // G):
        return [err("E763", f"{name}: top_k = {m.top_k} experts do not fit in the {g} "
                            f"group(s) of {m.experts // G} a token picks",
                    where.model_field("group_top_k"),
                    "Megatron-Core takes top_k / group_top_k experts from each group it picks: "
                    "raise `group_top_k` or lower `expert_groups`")]
    return []


def routing_priced(spec: JobSpec, net, where) -> List[Diagnostic]:
    """W755 when the model's expert groups neither nest in the NVLink domains the job's
    expert-parallel group spans nor hold whole ones: Seer then prices the tokens' cross-domain
    traffic as without the group limit (more than the limit allows)."""
    m = spec.model
    if spec.moe_routing != "topk" or m.expert_groups <= 1 or not m.group_top_k:
        return []
    from astral_dsl.seer.comm_groups import groups    # start-up: a check of a job without expert
    #                                             groups does not import the lowering
    ep_domains = groups(spec, net)["ep"].hosts
    if routing.aligned(m.expert_groups, ep_domains):
        return []
    return [warn("W755", f"job `{spec.name}`: the {m.expert_groups} expert groups of "
                         f"`{m.name}` straddle the {ep_domains} NVLink domains its "
                         f"expert-parallel group spans: the tokens' traffic between domains "
                         f"is forecast as if any {m.top_k} experts could be picked (an upper "
                         f"bound)", where("ep"),
                 "an EP group over a number of domains that divides the groups, or that they "
                 "divide, is priced with the limit")]
