"""Where an MoE layer's tokens go (seer/routing.py) and what a fused dispatcher then sends
(comm.dispatch): the router's top-k at random, DeepSeek-V3's node-limited routing (expert
groups), and NeMo AutoModel's round-robin benchmark gate. Hand computations in the comments."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer import routing
from astral_dsl.seer.comm import BASE_S, Layout, Network, Tier, dispatch
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec


def test_random_top_k_hits_ranks_and_domains_as_independent_draws():
    # DeepSeek-V3's 256 experts, top-8, over EP 64 on 8 hosts, no group limit: 64 (1 - (63/64)^8)
    # = 7.58 ranks and 8 (1 - (7/8)^8) = 5.25 hosts
    ranks, domains = routing.spread("topk", 256, 8, 0, 0, 64, 8)
    assert ranks == pytest.approx(64 * (1 - (63 / 64) ** 8))
    assert domains == pytest.approx(8 * (1 - (7 / 8) ** 8))


def test_node_limited_routing_reaches_at_most_its_groups_domains():
    # 8 groups of 32 experts, one per host; a token picks 4 groups: a host holds one of its
    # experts when its group is picked, 1 - C(7, 4) / C(8, 4) = 1 - 35/70 = 1/2, so 4 hosts
    ranks, domains = routing.spread("topk", 256, 8, 8, 4, 64, 8)
    assert domains == pytest.approx(4.0)
    assert ranks == pytest.approx(64 * (1 - (63 / 64) ** 8))      # ranks priced as before
    # 16 groups on 8 hosts (2 each), 4 picked: 1 - C(14, 4) / C(16, 4) = 1 - 1001/1820
    assert routing.spread("topk", 256, 8, 16, 4, 64, 8)[1] == pytest.approx(
        8 * (1 - 1001 / 1820))
    # 2 groups spanning 4 hosts each, 1 picked: 8 draws over its 4 hosts, 4 (1 - (3/4)^8)
    assert routing.spread("topk", 256, 8, 2, 1, 64, 8)[1] == pytest.approx(4 * (1 - 0.75 ** 8))
    # groups that straddle hosts (16 over 3): priced as without the limit
    assert routing.spread("topk", 48, 4, 16, 4, 24, 3) == routing.spread("topk", 48, 4, 0, 0,
                                                                          24, 3)
    assert not routing.aligned(16, 3) and routing.aligned(8, 8) and routing.aligned(2, 8)


def test_round_robin_sends_a_token_to_consecutive_experts():
    # DeepSeek-V3 on EP 64 (4 experts a rank, 32 a host): token t takes experts 8t .. 8t + 7,
    # always two ranks of one host
    assert routing.spread("round_robin", 256, 8, 8, 4, 64, 8) == (2.0, 1.0)
    # Kimi K2's 384 experts on EP 32 (12 a rank): starts 0, 8, 16, ... take ranks {0}, {0, 1},
    # {1}, ...: 4/3 ranks on average, one host of 8 ranks (96 experts) always
    assert routing.spread("round_robin", 384, 8, 0, 0, 32, 4) == (pytest.approx(4 / 3), 1.0)
    # the ring wraps: 12 experts, top-8, 6 ranks of 2 on 3 hosts of 4 experts; starts 0, 4, 8:
    # experts 8..15 are 8, 9, 10, 11, 0, 1, 2, 3 -> ranks 4, 5, 0, 1 and hosts 2, 0
    assert routing.spread("round_robin", 12, 8, 0, 0, 6, 3) == (4.0, 2.0)


def test_fused_dispatch_prices_the_expected_hosts():
    # 64 MB of tokens a rank, EP 64 on 8 hosts of 8 over 50 GB/s NICs at efficiency 1: 4 of the
    # 8 hosts hold a token's experts (node-limited), 4 x 7/8 of them remote: 3.5 copies cross
    # the network, 64e6 x 3.5 / 50e9 = 4.48 ms; without the limit 5.25 x 7/8 = 4.59 copies
    lay = Layout("ep", 64, 8, 8, 1, 50e9, 0.0)
    net = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 64, True, 1.0),))
    copy = 64e6
    hit = routing.spread("topk", 256, 8, 8, 4, 64, 8)
    nvlink = copy * hit[0] * (7 / 64 + 56 / 64 * 7 / 8) / 450e9
    assert dispatch(net, lay, copy, hit, 1.0) == pytest.approx(
        BASE_S + max(nvlink, copy * 3.5 / 50e9))
    free = routing.spread("topk", 256, 8, 0, 0, 64, 8)
    assert dispatch(net, lay, copy, free, 1.0) == pytest.approx(
        BASE_S + max(nvlink, copy * 8 * (1 - (7 / 8) ** 8) * 7 / 8 / 50e9))


H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, sms=132, arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 64, True, 1.0), Tier("core", 10**6, False,
                                                                         1.0)))
MOE = ModelSpec("moe", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu", experts=256, top_k=8,
                moe_ffn=2048)


def _dispatch(model, routing_="topk"):
    job = JobSpec("j", model, ParallelSpec(dp=64, ep=64), 64, 1, 4096, "none", "bf16",
                  moe_dispatcher="deepep", moe_routing=routing_)
    low = Lowering(job, Costs.of(job, H100), NET)
    return next(o for o in low.template(0, 0, "F").ops if o.name == "ep dispatch all-to-all")


def test_the_lowering_prices_the_model_groups_and_the_jobs_routing():
    # 4,096 tokens of 4,096 x 2 bytes a rank (33.6 MB), EP 64 over 8 hosts of 8: the network
    # part moves (NVLink's is smaller): 8 (1 - (7/8)^8) x 7/8 = 4.59 copies cross it at random,
    # 4 x 7/8 = 3.5 with 8 groups of which a token picks 4, 7/8 round robin (one host a token)
    free = _dispatch(MOE).dur
    grouped = _dispatch(attrs.evolve(MOE, expert_groups=8, group_top_k=4)).dur
    robin = _dispatch(MOE, "round_robin").dur
    assert robin < grouped < free
    eff = Costs.of(JobSpec("j", MOE, ParallelSpec(dp=64, ep=64), 64, 1, 4096, "none", "bf16"),
                   H100).cal.a2a_eff_fused
    net_s = 4096 * 4096 * 2 / (50e9 * eff)
    assert free - grouped == pytest.approx(net_s * (8 * (1 - (7 / 8) ** 8) - 4) * 7 / 8)
    assert grouped - robin == pytest.approx(net_s * (4 - 1) * 7 / 8)


def test_stdlib_deepseek_v3_states_its_node_limited_routing():
    from astral_dsl.runs.row_model import stdlib_models
    fields = stdlib_models()["DeepSeek_V3"]
    assert (fields["expert_groups"], fields["group_top_k"]) == (8, 4)


def test_the_language_states_every_routing_seer_prices():
    from astral_dsl.model.kinds import KINDS
    assert KINDS["job"].fields["moe_routing"].type.values == routing.ROUTINGS


@pytest.mark.parametrize("model,routing_,text,groups", [
    (MOE, "topk", "routing top-8  dispatcher deepep", None),
    (attrs.evolve(MOE, expert_groups=8, group_top_k=4), "topk",
     "routing top-8 within 4 of 8 expert groups", [8, 4]),
    (MOE, "round_robin", "routing round robin (8 consecutive experts a token)", None),
])
def test_the_forecast_says_how_tokens_are_routed(model, routing_, text, groups):
    from astral_dsl.outputs.forecast.report import parallelism, render
    from astral_dsl.seer.forecast import run
    job = JobSpec("j", model, ParallelSpec(dp=64, ep=64), 64, 1, 4096, "none", "bf16",
                  moe_dispatcher="deepep", moe_routing=routing_)
    fc = run(job, H100, NET)
    assert text in render(fc)
    settings = parallelism(fc)
    assert settings["moe_routing"] == routing_ and settings["expert_groups"] == groups


def test_a_token_uses_at_most_as_many_groups_as_experts():
    # 8 groups, 6 picked, but top-2: the experts lie in at most 2 groups (1 - C(7, 2) / C(8, 2)
    # = 1/4 of the 8 hosts each)
    assert routing.spread("topk", 256, 2, 8, 6, 64, 8) == routing.spread("topk", 256, 2, 8, 2,
                                                                         64, 8)
    assert routing.spread("topk", 256, 2, 8, 2, 64, 8)[1] == pytest.approx(8 * (1 - 21 / 28))
