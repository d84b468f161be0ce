"""Megatron-Core's expert grid (parallel_state.initialize_model_parallel: the expert rank
generator ETP x EP x EDP x PP over the world of TP x CP x DP x PP) as one rule,
analyses/rank_order.expert_grid, that validation (E753, E759) and `astral search` both apply:
the search enumerates exactly the expert layouts validation accepts. A small MoE (8 experts,
4 layers) on 16 GPUs; every verdict by hand from Megatron-Core 0.16.1's code."""
from __future__ import annotations

import pytest

from astral_dsl.analyses.rank_order import expert_grid
from astral_dsl.explore.search import space
from astral_dsl.seer import validate_layout
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import DEFAULT_ORDER, JobSpec, ParallelSpec
from astral_dsl.seer.stages import divisors

MOE = ModelSpec("M", 4, 1024, 16, 8, 2048, 32000, 2048, "swiglu", experts=8, top_k=2,
                moe_ffn=1024)
PP_BEFORE_DP = ("tp", "cp", "ep", "pp", "dp")


def test_the_rule_by_hand():
    # tp 2, dp 4, pp 2, ep 4, order tp-cp-ep-pp-dp: EDP = tp x dp x cp / (ep x etp) = 8 / 4 = 2,
    # not dp = 4, with pp not last: Megatron-Core's "data parallel size of the attention and
    # moe layers must be the same"
    rule, what = expert_grid(2, 1, 4, 2, 4, 1, PP_BEFORE_DP)
    assert rule == "pp" and "= 2 differs from dp = 4" in what
    # the same with pp last: allowed; ep 2 = tp x cp: EDP = 8 / 2 = 4 = dp, PP stride 2 in both
    assert expert_grid(2, 1, 4, 2, 4, 1, DEFAULT_ORDER) is None
    assert expert_grid(2, 1, 4, 2, 2, 1, PP_BEFORE_DP) is None
    # tp-pp-cp-ep-dp, tp 2, dp 4, ep 2: EDP 4 = dp, but the PP stride is tp = 2 in the dense
    # numbering and etp = 1 in the experts' (their pipeline groups differ)
    rule, what = expert_grid(2, 1, 4, 2, 2, 1, ("tp", "pp", "cp", "ep", "dp"))
    assert rule == "pp" and "2 ranks apart in the dense numbering and 1 in the experts'" in what
    # order "tp-ep-pp" with tp 8, ep 1, dp 1: EDP = 8 / 1 = 8 and the order has no `dp`
    # (RankGenerator: "you haven't specified the order")
    assert expert_grid(8, 1, 1, 2, 1, 1, ("tp", "ep", "pp"))[0] == "named"
    # tp 8, dp 2, ep 8: ep divides tp x dp x cp = 16 (not dp x cp = 2); ep 8 x etp 4 does not
    assert expert_grid(8, 1, 2, 1, 8, 1, DEFAULT_ORDER) is None
    assert expert_grid(8, 1, 2, 1, 8, 4, DEFAULT_ORDER)[0] == "etp"
    assert expert_grid(2, 1, 2, 1, 8, 1, DEFAULT_ORDER)[0] == "ep"


class _Where:
    fields = ()

    def __call__(self, *_):
        return None

    def model_field(self, _):
        return None


def _validation_refuses(tp, cp, pp, dp, ep, etp, order) -> bool:
    par = ParallelSpec(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, etp=etp, order=order, zero=1)
    spec = JobSpec("j", MOE, par, 16 * dp, 1, 2048, "none", "bf16")
    return any(d.code in ("E753", "E759") for d in validate_layout.layout(spec, _Where()))


@pytest.mark.parametrize("order,etp", [(DEFAULT_ORDER, 1), (PP_BEFORE_DP, 1), (PP_BEFORE_DP, 2)])
def test_the_search_enumerates_what_validation_accepts(order, etp):
    par = ParallelSpec(tp=1, dp=16, ep=1, etp=etp, order=order, zero=1)
    base = JobSpec("j", MOE, par, 256, 1, 2048, "none", "bf16")
    s = space.Space.of(base, (16,), {"order": True} if order != DEFAULT_ORDER else {})
    listed = set(space._layouts(16, MOE.experts))
    compared = admitted = 0
    for tp in divisors(16):
        for cp in divisors(16 // tp):
            for pp in divisors(16 // (tp * cp)):
                dp = 16 // (tp * cp * pp)
                for ep in divisors(16):
                    rule = space._layout_rule(s, tp, cp, pp, dp, ep) \
                        if (tp, cp, pp, dp, ep) in listed else "ep"
                    if rule not in (None, "ep", "order"):
                        continue            # refused first for another reason (heads, layers)
                    searched = rule is None
                    assert searched != _validation_refuses(tp, cp, pp, dp, ep, etp, order), \
                        (tp, cp, pp, dp, ep)
                    compared += 1
                    admitted += searched
    assert compared > 50 and admitted
    # tp 8, dp 2, ep 8 (EP over TP x DP = 16 ranks) is valid and now searched
    if etp == 1:
        assert (8, 1, 1, 2, 8) in listed and space._layout_rule(s, 8, 1, 1, 2, 8) is None
