"""Megatron-Core's process groups beyond one dimension each, as a real trace names them: the
experts' gradients reduced over EXPERT_DATA_PARALLEL_GROUP (the expert numbering's data-parallel
ranks, `edp`), the dense ones over DATA_PARALLEL_GROUP_WITH_CP under context parallelism
(`dpcp`, Seer's `dp` group), and groups of several dimensions (TENSOR_AND_DATA_PARALLEL_GROUP,
fp8's amax reduction). A trace of a MoE job whose expert gradients ran on their group had every
rank set aside as another job's (E790: its "EP group" of 3 ranks was not the job's of 8)."""
from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import checks, match
from astral_dsl.observe.kineto import group_kind
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, ProcessGroup, RankTrace
from astral_dsl.synth import generate, write
from jobtext import job

ROOT = Path(__file__).resolve().parent / "fixtures" / "diagnose"
# tp 2, cp 2, dp 4, ep 4 on moe.astral's racks (16 ranks): dense rank = tp + 2 cp + 4 dp,
# expert rank = ep + 4 edp (tests/test_rankmap.py)
TCP = job("tcp", "TinyMoE", 16, "tp = 2, cp = 2, pp = 1, dp = 4, ep = 4",
          "global_batch = 16, micro = 1, seq = 2048")


def moe_with(jobs: str):
    """moe.astral with the jobs `jobs` added."""
    return astral_dsl.loads((ROOT / "moe.astral").read_text() + jobs, name="moe.astral",
                            root=ROOT)


@pytest.fixture(scope="module")
def moe():
    return moe_with(TCP)


def _trace(rank, desc, ranks):
    """One gradient reduce-scatter of rank `rank` on a process group `desc` of `ranks`."""
    return RankTrace(rank, 16, "rank.json", "kineto", np.array([100]),
                     np.array([PHASE_INDEX["dp_comm"]]), np.array([0.0]), np.array([1e-3]),
                     np.array([-1]), np.array([OP_INDEX["reduce_scatter"]]), np.array([0]),
                     (ProcessGroup("g", desc, tuple(ranks)),))


def test_megatron_group_descriptions():
    assert group_kind("EXPERT_DATA_PARALLEL_GROUP") == "dp"
    assert group_kind("DATA_PARALLEL_GROUP_WITH_CP") == "dp"
    assert group_kind("EXPERT_MODEL_PARALLEL_GROUP") == "ep"
    assert group_kind("TENSOR_AND_DATA_PARALLEL_GROUP") == ""
    assert group_kind("TENSOR_AND_CONTEXT_PARALLEL_GROUP") == ""
    assert group_kind("TENSOR_MODEL_PARALLEL_GROUP") == "tp"


def test_gradient_groups_of_a_tp_cp_ep_job(moe):
    """Rank 6 (tp 0, cp 1, dp 1; ep 2, edp 1): its DP group 2, 6, 10, 14 (dp stride 4), its
    DP x CP group the even ranks (tp 0), its expert-data-parallel group 2, 6, 10, 14 too (edp
    stride 4 in the expert numbering, ep 2); rank 5 (tp 1, cp 0): DP 1, 5, 9, 13, DP x CP the
    odd ranks, EDP 1, 5, 9, 13. Each is the kind the trace's process group is matched on; one
    of several dimensions (TP x DP, those of cp 1 for rank 6) is none of the rank's groups (NO_GROUP: its
    records not matched on a group they are not), where its description had made it a TP
    group, and a rank with it another job's (E790)."""
    rm = diagnose.rank_map(moe, "tcp")
    assert rm.group("dp", 6).ranks == (2, 6, 10, 14)
    assert rm.group("dpcp", 6).ranks == tuple(range(0, 16, 2))
    assert rm.group("edp", 6).ranks == (2, 6, 10, 14)
    assert rm.group("dpcp", 5).ranks == tuple(range(1, 16, 2))
    kinds = {desc: match._kind_of_groups(_trace(r, desc, ranks), rm)[0]
             for r, desc, ranks in ((6, "DATA_PARALLEL_GROUP_WITH_CP", range(0, 16, 2)),
                                    (5, "EXPERT_DATA_PARALLEL_GROUP", (1, 5, 9, 13)),
                                    (6, "TENSOR_AND_DATA_PARALLEL_GROUP", (2, 3, 6, 7, 10, 11, 14, 15)))}
    assert kinds == {"DATA_PARALLEL_GROUP_WITH_CP": match.KIND_CODES["dpcp"],
                     # its ranks are rank 5's DP group's too: its description says whose
                     "EXPERT_DATA_PARALLEL_GROUP": match.KIND_CODES["edp"],
                     "TENSOR_AND_DATA_PARALLEL_GROUP": match.NO_GROUP}
    # none of them makes the rank look like another job's (E790); a DP group of 3 does
    for desc, ranks in (("DATA_PARALLEL_GROUP_WITH_CP", range(0, 16, 2)),
                        ("DATA_PARALLEL_GROUP", (2, 6, 10, 14)),
                        ("TENSOR_AND_DATA_PARALLEL_GROUP", (2, 3, 6, 7, 10, 11, 14, 15))):
        assert checks._foreign_groups(_trace(6, desc, ranks), rm) is None
    assert "4 or 8 ranks" in checks._foreign_groups(_trace(6, "DATA_PARALLEL_GROUP",
                                                           (2, 6, 10)), rm)


def test_expert_gradients_on_their_group_are_matched():
    """moe.astral's `moe` (tp 1, pp 2, dp 24, ep 8): EDP groups of 3 ranks (r, r + 8, r + 16
    of a stage: 8 a stage, 16 in all). A drill's gradient reduction relabelled as a trace
    names it on EXPERT_DATA_PARALLEL_GROUP: 144 records (48 ranks x 3 iterations) matched into
    48 EDP instances of 3, none slow, the job healthy. They had been E790 on every rank (an
    `EP` group of 3 where the job's have 8) and nothing could be diagnosed."""
    design = astral_dsl.load(str(ROOT / "moe.astral"))
    fc, rm = seer.forecast(design, job="moe"), diagnose.rank_map(design, "moe")
    observed = write.to_observed(generate(fc, rm, [], seed=1))

    def on_edp(t):
        base = 24 * (t.rank // 24) + t.rank % 8
        grp = np.where(t.phase == PHASE_INDEX["dp_comm"], 0, -1)
        pg = ProcessGroup("expert-dp", "EXPERT_DATA_PARALLEL_GROUP", (base, base + 8, base + 16))
        return attrs.evolve(t, groups=(pg,), group=grp)

    observed = attrs.evolve(observed, traces=tuple(on_edp(t) for t in observed.traces))
    found = diagnose.diagnose(design, observed, job="moe")
    assert "E790" not in {d.code for d in found.diagnostics}
    assert found.instances["edp"] == (48, 0) and found.verdict == "healthy"


def _apart(t, dense_s, expert_s, slow=None):
    """Rank `t`'s drill rows with each gradient bucket (the drill's one DP ring of 9.87 ms) as a
    trace shows it: the dense weights' all-reduce on DATA_PARALLEL_GROUP (its stage's 24
    ranks), then the experts' on EXPERT_DATA_PARALLEL_GROUP, ending with the ring; `slow`: the
    iteration whose dense all-reduce takes twice its time (the experts' after it, later)."""
    base = 24 * (t.rank // 24)
    edp = base + t.rank % 8
    dp = np.flatnonzero(t.phase == PHASE_INDEX["dp_comm"])
    end = t.start[dp] + t.duration[dp]
    extra = np.where(t.iteration[dp] == slow, dense_s, 0.0)
    cut = end - expert_s + extra
    cols = {"start": np.r_[t.start, cut], "duration": np.r_[t.duration, end + extra - cut]}
    cols["duration"][dp] = cut - t.start[dp]
    group = np.r_[np.where(t.phase == PHASE_INDEX["dp_comm"], 0, -1), np.ones(dp.size, int)]
    pgs = (ProcessGroup("dp", "DATA_PARALLEL_GROUP", tuple(range(base, base + 24))),
           ProcessGroup("edp", "EXPERT_DATA_PARALLEL_GROUP", (edp, edp + 8, edp + 16)))
    return attrs.evolve(t, iteration=np.r_[t.iteration, t.iteration[dp]],
                        phase=np.r_[t.phase, t.phase[dp]], peer=np.r_[t.peer, t.peer[dp]],
                        op=np.r_[t.op, t.op[dp]], group=group, groups=pgs, **cols)


def test_dense_gradients_apart_from_the_experts_have_their_own_forecast():
    """moe.astral's `moe`: Seer prices a gradient bucket (173.1M dense and 75.5M expert
    parameters a stage, fp32 gradients) as the dense weights' all-reduce over the 24-rank DP
    group, 2.716 ms, then the experts' over the 3-rank EDP group, 7.149 ms: 9.865 ms in all, a
    rank log's one row. A trace that shows them apart has its dense all-reduce (one DP group a
    stage: compared with the forecast) compared with the 2.716 ms: made twice as long in
    iteration 101 on stage 0 (5.4 ms) it is slow; against the bucket's 9.865 ms it had passed
    (below 1.25 x). The EDP ones: 8 groups a stage, compared with each other."""
    design = astral_dsl.load(str(ROOT / "moe.astral"))
    fc, rm = seer.forecast(design, job="moe"), diagnose.rank_map(design, "moe")
    a, e, params = fc.runs[0].dp[0]
    dense_s, expert_s = fc.lowering.dp_parts(params)
    assert params == (173129728.0, 75497472.0)
    assert (round(dense_s * 1e3, 3), round(expert_s * 1e3, 3), round((e - a) * 1e3, 3)) == \
        (2.716, 7.149, 9.865)
    net = diagnose._forecast_net(fc, apart=True)
    assert net[(match.KIND_CODES["dp"], 0, OP_INDEX["all_reduce"])] == dense_s
    assert net[(match.KIND_CODES["edp"], 0, OP_INDEX["all_reduce"])] == expert_s
    assert diagnose._forecast_net(fc)[(match.KIND_CODES["dp"], 0, OP_INDEX["all_reduce"])] == \
        e - a
    observed = write.to_observed(generate(fc, rm, [], seed=1))
    healthy = attrs.evolve(observed, traces=tuple(_apart(t, dense_s, expert_s)
                                                  for t in observed.traces))
    found = diagnose.diagnose(design, healthy, job="moe")
    assert found.instances["dp"] == (6, 0) and found.instances["edp"] == (48, 0)
    slow = attrs.evolve(observed, traces=tuple(
        _apart(t, dense_s, expert_s, 101 if t.rank < 24 else None) for t in observed.traces))
    found = diagnose.diagnose(design, slow, job="moe")
    assert found.instances["dp"] == (6, 1)


def test_an_ep_that_does_not_divide_is_said_once_with_its_own_hint():
    """ep 8 with tp x dp x cp = 12: Seer's E753 says so, with the `ep` values that divide; the
    rank map cannot be built either, and that is not said again as E759 with the hint about the
    order of the dimensions (which had followed E753)."""
    bad = job("bad", "TinyMoE", 12, "tp = 1, pp = 1, dp = 12, ep = 8",
              "global_batch = 12, micro = 1, seq = 2048")
    design = astral_dsl.loads((ROOT / "moe.astral").read_text() + bad, name="moe.astral",
                              root=ROOT)
    with pytest.raises(diagnose.DiagnoseError) as exc:
        diagnose.diagnose(design, None, job="bad")
    codes = [d.code for d in exc.value.diagnostics if d.is_error]
    assert codes == ["E753"]


TPEP = job("tpep", "TinyMoE", 48, "tp = 2, pp = 2, dp = 12, ep = 2",
           "global_batch = 48, micro = 1, seq = 2048")


def test_expert_group_with_the_dp_groups_ranks_is_the_experts():
    """tp 2 = ep 2: EDP = tp x dp / ep = 12 = dp, and an expert rank (ep + 2 edp) and a dense
    one (tp + 2 dp) number alike, so rank r's EXPERT_DATA_PARALLEL_GROUP holds its
    DATA_PARALLEL_GROUP's ranks (the even ranks of its stage for r even). Matched as `edp` (its
    description says whose), the dense all-reduce is judged against Seer's dense part
    (2 DP groups a stage: the forecast) and the experts' against theirs. Matched as DP, both
    had been compared with the bucket's whole time (dense + expert): the dense all-reduce of
    stage 0's even ranks at twice its time (2 x 2.109 = 4.2 ms against the 9.403 ms bucket)
    had passed, a healthy verdict."""
    design = moe_with(TPEP)
    fc, rm = seer.forecast(design, job="tpep"), diagnose.rank_map(design, "tpep")
    assert rm.group("edp", 4).ranks == rm.group("dp", 4).ranks == tuple(range(0, 24, 2))
    _, _, params = fc.runs[0].dp[0]
    dense_s, expert_s = fc.lowering.dp_parts(params)
    observed = write.to_observed(generate(fc, rm, [], seed=1))

    def apart(t, slow):
        """The drill's bucket as a trace shows it: the dense all-reduce on DP, then the
        experts' on EDP; `slow`: the dense one takes twice its time (the experts' after)."""
        dp = np.flatnonzero(t.phase == PHASE_INDEX["dp_comm"])
        extra = dense_s if slow else 0.0
        end = t.start[dp] + t.duration[dp]
        cut = end - expert_s + extra
        duration = np.r_[t.duration, np.full(dp.size, expert_s)]
        duration[dp] = cut - t.start[dp]
        pgs = (ProcessGroup("dp", "DATA_PARALLEL_GROUP", rm.group("dp", t.rank).ranks),
               ProcessGroup("edp", "EXPERT_DATA_PARALLEL_GROUP", rm.group("edp", t.rank).ranks))
        return attrs.evolve(t, iteration=np.r_[t.iteration, t.iteration[dp]],
                            phase=np.r_[t.phase, t.phase[dp]], peer=np.r_[t.peer, t.peer[dp]],
                            op=np.r_[t.op, t.op[dp]], start=np.r_[t.start, cut],
                            duration=duration, groups=pgs,
                            group=np.r_[np.where(t.phase == PHASE_INDEX["dp_comm"], 0, -1),
                                        np.ones(dp.size, int)])

    healthy = diagnose.diagnose(design, attrs.evolve(observed, traces=tuple(
        apart(t, False) for t in observed.traces)), job="tpep")
    # 2 DP groups (tp 0, tp 1) x 2 stages x 3 iterations of one bucket each; as many EDP
    assert healthy.instances["dp"] == (12, 0) and healthy.instances["edp"] == (12, 0)
    assert healthy.verdict == "healthy"
    slow = diagnose.diagnose(design, attrs.evolve(observed, traces=tuple(
        apart(t, t.rank < 24 and t.rank % 2 == 0) for t in observed.traces)), job="tpep")
    assert slow.instances["dp"] == (12, 3) and slow.verdict == "suspects"


ETP4 = job("etp4", "TinyMoE", 16, "tp = 2, pp = 1, dp = 8, ep = 2, etp = 4",
           "global_batch = 16, micro = 1, seq = 2048")
ETP2 = job("etp2", "TinyMoE", 16, "tp = 2, pp = 1, dp = 8, ep = 4, etp = 2",
           "global_batch = 16, micro = 1, seq = 2048")


def test_expert_tensor_parallel_group():
    """Expert tensor parallelism: expert rank = etp + ETP (ep + EP edp), dense rank = tp + 2 dp.
    tp 2, dp 8, ep 2, etp 4: EDP = 16 / (2 x 4) = 2; rank 5 (etp 1, ep 1, edp 0) has the ETP
    group 4-7 (4 consecutive ranks), the TP group 4, 5, the EP group 1, 5 (stride 4). A trace's
    EXPERT_TENSOR_PARALLEL_GROUP of 4-7 is the rank's `etp` group; it had been read as a TP
    group of 4 ranks where the job's have 2: not matched (NO_GROUP) and the rank set aside as
    another job's (E790). tp 2, ep 4, etp 2: the ETP group of rank 5 is 4, 5, its TP group's
    ranks: matched as `etp` (its description says whose), the TP group's as `tp`."""
    design = moe_with(ETP4 + ETP2 + TCP)
    rm = diagnose.rank_map(design, "etp4")
    assert rm.group("etp", 5).ranks == (4, 5, 6, 7)
    assert rm.group("tp", 5).ranks == (4, 5) and rm.group("ep", 5).ranks == (1, 5)
    assert len(rm.groups["etp"]) == 4
    etp = _trace(5, "EXPERT_TENSOR_PARALLEL_GROUP", (4, 5, 6, 7))
    assert match._kind_of_groups(etp, rm)[0] == match.KIND_CODES["etp"]
    assert checks._foreign_groups(etp, rm) is None
    assert "2 or 4 ranks" in checks._foreign_groups(
        _trace(5, "EXPERT_TENSOR_PARALLEL_GROUP", (4, 5, 6)), rm)
    same = diagnose.rank_map(design, "etp2")
    assert same.group("etp", 5).ranks == same.group("tp", 5).ranks == (4, 5)
    kinds = {desc: match._kind_of_groups(_trace(5, desc, (4, 5)), same)[0]
             for desc in ("EXPERT_TENSOR_PARALLEL_GROUP", "TENSOR_MODEL_PARALLEL_GROUP")}
    assert kinds == {"EXPERT_TENSOR_PARALLEL_GROUP": match.KIND_CODES["etp"],
                     "TENSOR_MODEL_PARALLEL_GROUP": match.KIND_CODES["tp"]}
    # without expert tensor parallelism (tcp: etp 1) the rank map has no `etp` groups
    assert "etp" not in diagnose.rank_map(design, "tcp").groups


def test_expert_tensor_model_pipeline_group_is_several_dimensions():
    """EXPERT_TENSOR_MODEL_PIPELINE_PARALLEL_GROUP (ETP x EP x PP) is no one dimension: its
    word `tensor` had made it a TP group, and on etp4 (ETP 4 x EP 2 x PP 1: ranks 0-7 for
    rank 5, expert rank = etp + 4 ep + 8 edp) a "TP group" of 8 ranks where the job's have 2
    or 4 set the rank aside as another job's (E790). Now not matched (NO_GROUP), the rank
    kept."""
    assert group_kind("EXPERT_TENSOR_MODEL_PIPELINE_PARALLEL_GROUP") == ""
    assert group_kind("EXPERT_TENSOR_PARALLEL_GROUP") == "tp"
    rm = diagnose.rank_map(moe_with(ETP4), "etp4")
    etmp = _trace(5, "EXPERT_TENSOR_MODEL_PIPELINE_PARALLEL_GROUP", range(8))
    assert checks._foreign_groups(etmp, rm) is None
    assert match._kind_of_groups(etmp, rm)[0] == match.NO_GROUP
