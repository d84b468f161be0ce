"""Expert tensor parallelism (`parallel { etp = N }`, Megatron-Core's
--expert-tensor-parallel-size): the groups of the expert numbering (parallel_state.py, the
expert RankGenerator with tp = ETP, cp = 1, dp = TP x DP x CP / (ETP x EP)), the experts' GEMMs
split over the expert-TP group with its all-gather and reduce-scatter (token_dispatcher.py,
MoEAlltoAllTokenDispatcher), the weights, gradients and optimizer states per GPU. A small MoE
on 16 GPUs (2 hosts of 8), TP 2, DP 8, EP 4, ETP 1 against 2; every number by hand."""
from __future__ import annotations

import pytest

from astral_dsl.analyses import rank_order, rankmap
from astral_dsl.seer import activations, comm, memory
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.params import layer_expert_params
from astral_dsl.seer.spec import JobSpec, ParallelSpec

H, F, E, K = 1024, 1024, 8, 2            # hidden, an expert's FFN, experts, top-k (SwiGLU)
MOE = ModelSpec("M", 4, H, 16, 8, 2048, 32000, 2048, "swiglu", experts=E, top_k=K, moe_ffn=F)
GPU = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3.35e12, 450e9, 700.0, 700.0, 132, "hopper")
NET = comm.Network(8, 450e9, (50e9,) * 8, (comm.Tier("leaf", 32, True, 1.0),
                                          comm.Tier("core", 10**6, False, 1.0)))
SEQ = 2048


def job(etp):
    par = ParallelSpec(tp=2, dp=8, ep=4, sp=True, zero=1, etp=etp)
    return JobSpec("j", MOE, par, 16, 1, SEQ, "none", "bf16")


@pytest.fixture(scope="module")
def lows():
    costs = Costs(GPU, "bf16", calibration=shipped())
    return {etp: Lowering(job(etp), costs, NET) for etp in (1, 2)}


def _ops(low, phase="F"):
    return {o.name: o for o in low.template(0, 0, phase).ops if o.layer == 0}


def test_groups_by_hand():
    """Default order tp-cp-ep-dp-pp. ETP 1: expert rank = ep_i + 4 edp_i (EDP = 2 x 8 / 4 = 4):
    EP {0..3}, EDP {0, 4, 8, 12}. ETP 2: rank = etp_i + 2 (ep_i + 4 edp_i) (EDP = 16 / 8 = 2):
    ETP {0, 1} (the dense TP group), EP {0, 2, 4, 6}, EDP {0, 8}; rank 5 (etp 1, ep 2, edp 0):
    ETP {4, 5}, EP {1, 3, 5, 7}, EDP {5, 13}."""
    one = rank_order.Numbering(2, 1, 4, 8, 1, rank_order.KNOWN, experts=True)
    assert (one.group("ep"), one.group("dp"), one.group("tp")) == \
        ([0, 1, 2, 3], [0, 4, 8, 12], [0])
    two = rank_order.Numbering(2, 1, 4, 8, 1, rank_order.KNOWN, experts=True, etp=2)
    assert (two.group("tp"), two.group("ep"), two.group("dp")) == ([0, 1], [0, 2, 4, 6], [0, 8])
    assert (two.group("tp", 5), two.group("ep", 5), two.group("dp", 5)) == \
        ([4, 5], [1, 3, 5, 7], [5, 13])
    assert ParallelSpec(tp=2, dp=8, ep=4, etp=2).expert_dp == 2


def test_rank_map_follows_the_numbering():
    """The rank map (`astral diagnose`, `astral synth`'s drills) reads the same numbering: its
    EP and expert-data-parallel groups with ETP 2 are those above."""
    sizes = {"tp": 2, "cp": 1, "ep": 4, "dp": 8, "pp": 1, "etp": 2}
    groups, _ = rankmap._groups(sizes, rankmap.parse_order(None), 16)
    assert [g.ranks for g in groups["ep"]][:2] == [(0, 2, 4, 6), (1, 3, 5, 7)]
    assert [g.ranks for g in groups["edp"]][:2] == [(0, 8), (1, 9)]
    assert len(groups["ep"]) == 4 and len(groups["edp"]) == 8


def test_lowering_groups(lows):
    """ETP 2: an expert-TP group of 2 inside a host, EDP 2 over both hosts; ETP 1: no
    expert-TP group, EDP 4."""
    g1, g2 = lows[1].groups, lows[2].groups
    assert (g1["etp"].n, g1["edp"].n, g1["ep"].n) == (1, 4, 4)
    assert (g2["etp"].n, g2["etp"].hosts, g2["edp"].n, g2["edp"].hosts, g2["ep"].n) == \
        (2, 1, 2, 2, 4)


def test_expert_gemms_split_over_the_expert_tp_group(lows):
    """A rank routes 2,048 / TP 2 = 1,024 tokens x top-k 2 = 2,048 copies; 2 local experts.
    ETP 1: each expert's fc1 is [1,024, 1,024] x [1,024, 2 x 1,024]; ETP 2: each takes the
    gathered 2 x 2,048 / 2 = 2,048 rows at half the width, [2,048, 1,024] x [1,024, 1,024].
    The GEMM FLOPs per GPU are the same: 2 x 2,048 x 1,024 x 2,048 = 8,589,934,592 for fc1,
    half that for fc2 (a rank does 1/ETP of each of ETP x the copies), and those of one expert
    per routed copy are halved."""
    one, two = _ops(lows[1]), _ops(lows[2])
    assert one["expert fc1"].shape == "1024x2048x1024"
    assert two["expert fc1"].shape == "2048x1024x1024"
    assert two["expert fc2"].shape == "2048x1024x512"
    for name, flops in (("expert fc1", 8_589_934_592), ("expert fc2", 4_294_967_296)):
        assert one[name].flops == two[name].flops == flops


def test_expert_tp_collectives(lows):
    """ETP 2: after the dispatch all-to-all an all-gather, before the combine a reduce-scatter,
    each of the gathered buffer: 2 x 2,048 copies x 1,024 x 2 bytes = 8,388,608 bytes, over
    the expert-TP group (NVLink, one host), on the TP stream; backward, the same two. ETP 1
    has none; the all-to-alls move 2,048 x 1,024 x 2 = 4,194,304 bytes either way."""
    one, two = _ops(lows[1]), _ops(lows[2])
    assert not any("etp" in n for n in one)
    names = list(two)
    assert names.index("ep dispatch all-to-all") < names.index("etp all-gather") < \
        names.index("expert fc1") < names.index("expert fc2") < \
        names.index("etp reduce-scatter") < names.index("ep combine all-to-all")
    lay = lows[2].groups["etp"]
    for name, fn in (("etp all-gather", comm.all_gather), ("etp reduce-scatter",
                                                            comm.reduce_scatter)):
        op = two[name]
        assert (op.nbytes, op.stream, op.group) == (8_388_608, "tp", "etp")
        assert op.dur == pytest.approx(fn(NET, lay, 8_388_608))
    assert two["ep dispatch all-to-all"].nbytes == one["ep dispatch all-to-all"].nbytes \
        == 4_194_304
    back = _ops(lows[2], "B")
    assert back["etp all-gather bwd"].nbytes == back["etp reduce-scatter bwd"].nbytes \
        == 8_388_608


def test_expert_states_per_gpu():
    """Expert parameters per GPU per layer: 8 experts x 3 matrices x 1,024 x 1,024 / (EP 4 x
    ETP): 6,291,456 with ETP 1, 3,145,728 with ETP 2 (bf16 weights: 12,582,912 and 6,291,456
    bytes). Adam's 12 bytes sharded over EDP (zero 1): 12 / 4 per parameter with ETP 1,
    12 / 2 with ETP 2, so 18,874,368 bytes a layer either way."""
    p1, p2 = layer_expert_params(job(1), 0), layer_expert_params(job(2), 0)
    assert (p1, p2) == (6_291_456, 3_145_728)
    w1, g1, o1, _ = memory.state_bytes_per_param(job(1), experts=True)
    w2, g2, o2, _ = memory.state_bytes_per_param(job(2), experts=True)
    assert (w1 * p1, w2 * p2) == (12_582_912, 6_291_456)
    assert (o1, o2) == (3.0, 6.0) and o1 * p1 == o2 * p2 == 18_874_368


def test_gathered_expert_input_is_kept():
    """The fc1 input each rank keeps is the all-gathered one: ETP x the copies. The difference
    per layer and micro-batch: 2,048 tokens / TP 2 x top-k 2 x 1,024 x 2 bytes x (2 - 1) =
    4,194,304 bytes."""
    a1 = activations.layer_activation_bytes(job(1), 0)
    a2 = activations.layer_activation_bytes(job(2), 0)
    assert a2 - a1 == pytest.approx(4_194_304)


def test_default_is_one():
    """Not stated: 1 (Megatron-Bridge's MoE default and recipes; docs/seer.md)."""
    assert ParallelSpec().etp == 1
    assert rank_order.expert_dp(2, 8, 1, 4) == 4


SOURCE = """import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
import stdlib.models { Mixtral_8x7B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 2 x Node }
site S { racks = 1 x R }
job j {
  model = Mixtral_8x7B, placement = S, gpus = 16, recompute = full
  parallel { tp = 2, pp = 2, dp = 4, ep = 4, etp = 2, sp = true, zero = 1 }
  batch { global_batch = 32, micro = 1, seq = 4096 }
}
"""


def test_the_language_states_it_and_the_forecast_says_it(tmp_path):
    """`etp` in `parallel` reaches Seer; the text's parallel line and the JSON say it; the
    option `etp = 1` forecasts the job as if it did not state it (the text says nothing)."""
    import astral_dsl
    from astral_dsl import seer
    from astral_dsl.outputs.forecast import report

    path = tmp_path / "etp.astral"
    path.write_text(SOURCE, encoding="utf-8")
    design = astral_dsl.load(str(path))
    fc = seer.forecast(design)
    assert fc.job.parallel.etp == 2 and fc.job.parallel.expert_dp == 1     # 8 / (4 x 2)
    assert "  parallel   tp 2  pp 2  dp 4  ep 4  etp 2  sp" in report.render(fc)
    assert report.to_json(fc)["parallelism"]["etp"] == 2
    one = seer.forecast(design, etp=1)
    assert "etp" not in report.render(one).splitlines()[1]
    assert report.to_json(one)["parallelism"]["etp"] == 1


def test_the_search_keeps_etp_and_rejects_layouts_it_does_not_divide():
    """`astral search` keeps the job's `etp` in every configuration; one whose tp x dp x cp
    ep x etp does not divide is rejected by E753's rule, not forecast: tp 2, dp 4, ep 4 holds
    etp 1 or 2 (8 ranks), not etp 4 (16 needed)."""
    from astral_dsl.explore.search import space

    s2 = space.Space.of(job(2), (16,), {})
    assert space._layout_rule(space.Space.of(job(4), (16,), {}), 2, 1, 1, 4, 4) == "ep"
    assert space._layout_rule(s2, 2, 1, 1, 4, 4) is None
    assert space._layout_rule(space.Space.of(job(1), (16,), {}), 2, 1, 1, 4, 4) is None
    cfg = space.Config(16, 2, 1, 8, 1, 4, 1, 1, "none", 1)
    assert cfg.spec(s2).parallel.etp == 2


def test_an_unstated_etp_with_tp_is_said():
    """A Megatron MoE job with TP 2 that does not state `etp` is forecast with ETP 1 (Megatron-
    Bridge's setting), which Megatron-Core's own default (ETP = TP) contradicts: the forecast
    says so; stated (1 or 2), or without TP, it says nothing."""
    from astral_dsl.seer.forecast import _etp_note
    said = _etp_note(job(1))
    assert said and said[0].startswith("etp 1 assumed") and "etp = tp (2)" in said[0]
    for par in (ParallelSpec(tp=2, dp=8, ep=4, sp=True, zero=1, etp=1, etp_stated=True),
                ParallelSpec(tp=1, dp=16, ep=4, zero=1)):
        assert _etp_note(JobSpec("j", MOE, par, 16, 1, SEQ, "none", "bf16")) == ()
