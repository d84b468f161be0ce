"""The checks of a job's mixture-of-experts fields: token dropping as Megatron-Core accepts it
(E771), the model's expert groups (E763), and whether Seer can price their limit on the job's
NVLink domains (W755); MoE-only fields on a model without experts do nothing (W751)."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import routing
from astral_dsl.seer.diag import choices, err, warn
from astral_dsl.seer.spec import JobSpec

MOE_ONLY = ("capacity_factor", "pad_to_capacity", "moe_routing")


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
