"""Seer's pipeline: each boundary between stages is priced by its own slowest pair, healthy and
under failures (seer/pipeline_pairs.py: a failure slows the boundaries whose pairs use its
hosts or paths), and in an NVLink domain of several trays a GPU whose NIC lost its path sends
through a neighbour's NIC (PXN, seer/pxn.py).

Hand formulas (docs/seer.md, comm.py): p2p = BASE + alpha + S / (NET_EFF x B), BASE = 7 us,
alpha = NET_STEP 5 us + hops x SWITCH 0.15 us (InfiniBand), NET_EFF = 0.9."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.analyses.nvlink_share import communicator, share
from astral_dsl.seer import comm, pxn
from astral_dsl.seer.comm_groups import groups
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.pipeline_pairs import boundaries, boundary_tops, pair_top
from astral_dsl.seer.spec import JobSpec, ParallelSpec

REPO = Path(__file__).resolve().parents[1]

# 4 racks x 2 hosts x 8 H100, one 400G port per GPU; a ToR per rack and rail (2 hosts), an agg
# per rail over the site. pp8: tp 8, pp 8, dp 1 on 64 GPUs: stage s is host s, so the pairs
# (0,1) (2,3) (4,5) (6,7) stay under a ToR and (1,2) (3,4) (5,6) climb to the agg.
PP = """\
import stdlib.hardware { H100_SXM, CX7_400G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 2 x Node }
fabric F {
  rails = 8, planes = 1, max_oversubscription = 1
  tier tor { switch = Switch51T(power = 1 kW), scope = rack, per = [rail]
    down = 2 x 400 Gb/s, up = 2 x 400 Gb/s }
  tier agg { switch = Switch51T(power = 1 kW), scope = site, per = [rail], down = 8 x 400 Gb/s }
}
site S { racks = 4 x R, fabric = F }
job pp8 {
  model = Llama3_8B, placement = S, gpus = 64
  parallel { tp = 8, pp = 8, dp = 1 }
  batch { global_batch = 64, micro = 1, seq = 8192 }
}
scenario half_agg { fail 50 % of S.fabric.agg }
scenario rack3_port { fail S.racks[3].hosts[1].nics[0].port[a] }
"""
# one transfer: micro 1 x seq 8,192 x hidden 4,096 x 2 B (bf16) / tp 8
S_PP = 8192 * 4096 * 2 / 8                    # 8,388,608 B
B = 400e9 / 8                                 # 50 GB/s: one 400G port per GPU


@pytest.fixture(scope="module")
def pp_ws():
    return astral_dsl.compiles(PP, name="pp.astral", root=REPO)


def _pp(ws, scenario=None):
    fc = astral_dsl.forecast(ws, job="pp8", scenario=scenario).detail
    return fc, groups(fc.job, fc.net)["pp"]


def _hops(fc):
    """Per boundary between stages: (hosts, switches, GB/s) of its slowest pair, and its time
    for one transfer of S_PP."""
    lays = fc.net.pp or [lay for lay, _ in boundaries(fc.job, fc.net, groups(fc.job, fc.net)["pp"])]
    return [(lay.hosts, lay.hops, lay.net_bw / 1e9) for lay in lays], \
        [comm.p2p(fc.net, lay, S_PP) for lay in lays]


def _pp_comm(fc, i):
    """Stage i's exposed transfer time (the breakdown's pp_comm, for stage i)."""
    run = fc.runs[i]
    return sum(run.waits_pp(run.waits())) + sum(run.blocked.values())


def test_healthy_pipeline_prices_each_boundary_by_its_own_pairs(pp_ws):
    """Stage s is host s, ToRs of 2 hosts: boundaries 0 -> 1, 2 -> 3, 4 -> 5, 6 -> 7 under a
    ToR, one switch at 50 GB/s: 7 + (5 + 0.15) + 8,388,608 / (0.9 x 50e9) s = 7 + 5.15 +
    186.414 = 198.564 us; 1 -> 2, 3 -> 4, 5 -> 6 cross racks to the agg, 3 switches:
    7 + 5.45 + 186.414 = 198.864 us (before: every boundary at ranks 0 and 8's 198.564 us).
    The wrap-around (7 -> 0, unused by 1F1B) crosses racks too."""
    fc, _ = _pp(pp_ws)
    shapes, times = _hops(fc)
    tor, agg = (2, 1, 50.0), (2, 3, 50.0)
    assert shapes == [tor, agg, tor, agg, tor, agg, tor, agg]
    assert times[0] == pytest.approx(198.564e-6, abs=1e-9)
    assert times[1] == pytest.approx(198.864e-6, abs=1e-9)
    # the schedule sends over each boundary at its own time (plus the receiver's all-gather
    # without SP, the same for every boundary); stage 1 sends forward over 1 -> 2
    hops = fc.lowering.p2p_hops()
    assert hops[1] - hops[0] == pytest.approx(0.3e-6, abs=1e-12)
    sent = {round(a - s, 12) for s, a, d in fc.runs[1].sends if d // (2 * fc.job.microbatches)
            == 2}
    assert sent == {round(hops[1], 12)}


def test_a_failure_on_the_pairs_that_cross_a_tor_slows_those_boundaries(pp_ws):
    """50 % of the aggs: the ToRs run 2:1 into the agg, so the boundaries 1 -> 2, 3 -> 4,
    5 -> 6 run at 25 GB/s over 3 switches: 7 + (5 + 3 x 0.15) + 8,388,608 / (0.9 x 25e9) s
    = 7 + 5.45 + 372.828 = 385.278 us per transfer; those under a ToR keep 198.564 us."""
    healthy, _ = _pp(pp_ws)
    fc, _ = _pp(pp_ws, "half_agg")
    shapes, times = _hops(fc)
    tor, agg = (2, 1, 50.0), (2, 3, 25.0)
    assert shapes == [tor, agg, tor, agg, tor, agg, tor, agg]
    assert times[1] == pytest.approx(385.278e-6, abs=1e-9)
    assert times[0] == pytest.approx(198.564e-6, abs=1e-9)
    assert fc.iteration_time > healthy.iteration_time
    # stage 1 sends over 1 -> 2; the breakdown's stage (7, the busiest) over 6 -> 7 only
    assert _pp_comm(fc, 1) > _pp_comm(healthy, 1)
    assert fc.stage == healthy.stage == 7
    assert fc.breakdown["pp_comm"] == pytest.approx(healthy.breakdown["pp_comm"], rel=1e-9)
    assert ("pp: the pairs of stages 1 -> 2, 3 -> 4, 5 -> 6 (a boundary's transfers wait for "
            "its slowest pair) run at 25.00 GB/s per GPU instead of 50.00 GB/s (tier `tor` "
            "oversubscribed 2:1 instead of 1:1)") in fc.notes


# 2 racks x 2 hosts x 8 H100, one dual-port 2 x 200G NIC per GPU (a port per plane): tp 8,
# pp 4, dp 1 on 32 GPUs, stage s on host s: 0 -> 1 and 2 -> 3 under a ToR, 1 -> 2 to the agg
PP4 = """\
import stdlib.hardware { H100_SXM, CX7_2x200G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack R { hosts = 2 x Node }
fabric F {
  rails = 8, planes = 2, max_oversubscription = 1
  tier tor { switch = Switch51T(power = 1 kW), scope = rack, per = [rail, plane]
    down = 2 x 200 Gb/s, up = 2 x 200 Gb/s }
  tier agg { switch = Switch51T(power = 1 kW), scope = site, per = [rail, plane]
    down = 4 x 200 Gb/s }
}
site S { racks = 2 x R, fabric = F }
job pp4 {
  model = Llama3_8B, placement = S, gpus = 32
  parallel { tp = 8, pp = 4, dp = 1 }
  batch { global_batch = 32, micro = 1, seq = 8192 }
}
scenario host2_port { fail S.racks[1].hosts[0].nics[0].port[a] }
"""


def test_a_failed_port_of_one_host_slows_exactly_the_boundaries_of_its_stage():
    """Host 2 (stage 2) loses one of its NIC 0's two ports: its GPU 0 runs at 1 x 200 Gb/s
    = 25 GB/s. The boundaries whose pairs use host 2, 1 -> 2 (to the agg, 3 switches) and
    2 -> 3 (under ToR 1, 1 switch), slow to 7 + 5.45 + 8,388,608 / (0.9 x 25e9) = 385.278 us
    and 7 + 5.15 + 372.828 = 384.978 us; 0 -> 1 (hosts 0 and 1) keeps 198.564 us."""
    ws = astral_dsl.compiles(PP4, name="pp4.astral", root=REPO)
    fc = astral_dsl.forecast(ws, job="pp4", scenario="host2_port").detail
    shapes, times = _hops(fc)
    assert shapes == [(2, 1, 50.0), (2, 3, 25.0), (2, 1, 25.0), (2, 3, 50.0)]
    assert times[:3] == pytest.approx([198.564e-6, 385.278e-6, 384.978e-6], abs=1e-9)
    assert ("pp: the pairs of stages 1 -> 2, 2 -> 3 (a boundary's transfers wait for its "
            "slowest pair) run at 25.00 GB/s per GPU instead of 50.00 GB/s "
            "(`S.racks[1].hosts[0].nics[0].port[a]` failed: 1 GPU of these pairs' hosts "
            "behind it)") in fc.notes


def test_a_dark_port_of_a_stage_slows_the_pair_that_crosses_racks(pp_ws):
    """Host 7 (rack 3, host 1) loses its NIC 0's only port: its GPU 0 is cut off (E775), the
    job-wide reduction naming rank 56 (host 7 x 8 + GPU 0)."""
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(pp_ws, job="pp8", scenario="rack3_port")
    (d,) = [d for d in exc.value.diagnostics if d.is_error]
    assert d.code == "E775" and d.hint and d.span is not None
    assert d.notes == ("cut off: rank 56 (NIC 0 of 1 host from `S.racks[3].hosts[1]`)",)


def _job(**par) -> JobSpec:
    model = ModelSpec("m", 8, 4096, 32, 8, 14336, 128256, 8192, "swiglu")
    return JobSpec("j", model, ParallelSpec(**par), 8, 1, 8192)


NET = comm.Network(8, 1.0, (1.0,) * 8, (comm.Tier("tor", 2, True, 1.0),
                                        comm.Tier("agg", 8, True, 1.0)))


@pytest.mark.parametrize("par, top", [
    # stage = host: (1, 2) crosses the 2-host ToRs
    (dict(tp=8, pp=8), 1),
    # 2 stages of one host each: (0, 1) under ToR 0
    (dict(tp=8, pp=2), 0),
    # tp 4: a stage is half a host, pairs (0, 1) (2, 3) inside hosts, (1, 2) from GPU 4 of host
    # 0 to GPU 0 of host 1: two rails, which no tier of this fabric joins (both are per rail):
    # the top tier, as comm._climb prices a cross-rail group
    (dict(tp=4, pp=4), 1),
    # tp 8, pp 2, dp 2: stride 16 GPUs, pairs host 0 -> 2 and 1 -> 3: across ToRs
    (dict(tp=8, pp=2, dp=2), 1),
    # tp 2, pp 4: 8 GPUs, one host: every pair on NVLink
    (dict(tp=2, pp=4), None),
    # pp fastest in the rank order: ranks r, r + 1 inside a host (8 stages of a host each)
    (dict(tp=8, pp=8, order=("pp", "tp", "cp", "ep", "dp")), None),
])
def test_pair_top_counts_every_pair(par, top):
    assert pair_top(_job(**par), NET) == top


def test_pxn_spreads_the_rerouted_gpus_over_the_live_nics():
    """3 live NICs of one GPU each at rate 1, 4 GPUs rerouted: loads 3, 2, 2 (one at a time
    onto the NIC leaving the most): the slowest GPU gets 1 / 3 of a NIC."""
    low, _ = share([(1.0, 1, ()), (1.0, 1, ()), (1.0, 1, ())], 4)
    assert low == pytest.approx(1 / 3)
    # a faster NIC takes the first: rates 2 and 1, one rerouted GPU -> 2 x 1/2 = 1 each
    assert share([(2.0, 1, ()), (1.0, 1, ())], 1)[0] == pytest.approx(1.0)
    # not an even spread: rates 2, 1, 1 with 2 rerouted GPUs both go onto the fast NIC (2 x
    # 1/2 = 1 > 1/2 for the first; 2 x 1/3 = 0.667 > 1/2 for the second): slowest 2/3; spread
    # evenly (one each onto the slow NICs, or one onto each of two) the slowest would get 1/2
    assert share([(2.0, 1, ()), (1.0, 1, ()), (1.0, 1, ())], 2)[0] == pytest.approx(2 / 3)


# ---- GB200 NVL72: PXN inside the rack's NVLink domain -----------------------------------------
GB = (REPO / "examples" / "gb200_nvl72.astral").read_text() + """
scenario tray10 { fail Hall.sus[1].racks[0].hosts[10].nics[0].port[a] }
scenario tray10_all { fail Hall.sus[1].racks[0].hosts[10].nics }
scenario leaf { fail Hall.fabric.rack[10].rail[0].leaf[0] }
scenario rack0_all { fail Hall.sus[1].racks[0].hosts.nics }
scenario rack0_and_tray { fail Hall.sus[1].racks[0].hosts.nics
  fail Hall.sus[1].racks[1].hosts[10].nics[0].port[a] }
"""
# llama405b: tp 4, pp 16, dp 4 on 256 GPUs: PP stride 16 GPUs, racks of 72 (Seer's "host"):
# the pairs of ranks 56..71 -> 72..87 cross racks, over the spine (3 switches); one transfer
# is seq 8,192 x hidden 16,384 x 2 B / tp 4 = 67,108,864 B
S_GB = 8192 * 16384 * 2 / 4


@pytest.fixture(scope="module")
def gb_ws():
    return astral_dsl.compiles(GB, name="gb200_nvl72.astral", root=REPO / "examples")


@pytest.mark.parametrize("scenario, rerouted, slowed", [
    ("tray10", 1, [3, 4, 15]), ("tray10_all", 4, [3, 4, 15]), ("leaf", 18, [8, 12, 13])])
def test_a_gpu_whose_nic_failed_runs_through_a_neighbours(gb_ws, scenario, rerouted, slowed):
    """Each rerouted GPU shares a live NIC of its rack with that NIC's own GPU (72 NICs, at most
    18 rerouted): 400 Gb/s / 2 = 25 GB/s for the slowest; the boundaries whose pairs cross
    racks from that rack run at that rate: 7 + (5 + 3 x 0.15) + 67,108,864 / (0.9 x 25e9) s
    = 2,995.06 us. Racks of 72 GPUs, 16 per stage: boundary b's pairs are ranks 16 b ..
    16 b + 31, crossing a rack at 72, 144 or 216 for b = 3, 4 (racks 0, 1), 8 (1, 2), 12, 13
    (2, 3), and the wrap-around 15 -> 0 (ranks 240..255 -> 0..15: racks 3, 0); the others stay
    on NVLink. Tray 10 of rack 0 slows 3 -> 4, 4 -> 5, 15 -> 0; rack 2's rail-0 leaf 8 -> 9,
    12 -> 13, 13 -> 14. The GPUs behind the failed part are counted on the design's trays (4
    GPUs each: 1, 4, and the 18 GPUs 0 of rack 2's trays for its rail-0 leaf)."""
    healthy = astral_dsl.forecast(gb_ws, job="llama405b").detail
    crossing = [3, 4, 8, 12, 13, 15]
    lays = [lay for lay, _ in boundaries(healthy.job, healthy.net,
                                         groups(healthy.job, healthy.net)["pp"])]
    assert [b for b, lay in enumerate(lays) if lay.hosts > 1] == crossing
    fc = astral_dsl.forecast(gb_ws, job="llama405b", scenario=scenario).detail
    assert [b for b, lay in enumerate(fc.net.pp) if lay.net_bw < B * (1 - 1e-9) and
            lay.hosts > 1] == slowed
    for b in slowed:
        lay = fc.net.pp[b]
        assert (lay.hosts, lay.hops, lay.net_bw) == (2, 3, B / 2)
        assert comm.p2p(fc.net, lay, S_GB) == pytest.approx(2995.06e-6, abs=1e-8)
    assert fc.iteration_time > healthy.iteration_time
    gpus = "GPU" if rerouted == 1 else "GPUs"
    (note,) = [n for n in fc.notes if n.startswith("pxn: ")]
    assert note.startswith(f"pxn: {rerouted} {gpus} of the job whose NIC lost its path")
    assert "NCCL 2.12" in note
    # the note says what nvlink_share.share does (one at a time, each onto the NIC leaving the
    # most: a max-min share, test_pxn_spreads_the_rerouted_gpus_over_the_live_nics), not an
    # even spread (it said "spread evenly over its live NICs")
    assert note.endswith("the rerouted GPUs go one at a time onto the live NIC of the domain "
                         "that leaves each the most bandwidth (a max-min share: a faster NIC "
                         "takes more of them; NCCL picks a NIC by topology, not by load)")
    assert "evenly" not in note
    assert any(n.startswith("pp: the pairs of stages " + ", ".join(
        f"{b} -> {(b + 1) % 16}" for b in slowed)) and
        f"{rerouted} {gpus} of these pairs' hosts behind it" in n for n in fc.notes)


def test_a_rack_with_no_nic_left_is_cut_off(gb_ws):
    """Every NIC of rack 0 gone: no NIC in its NVLink domain, its 72 GPUs (ranks 0 to 71, GPU
    g of tray t is rank 4 t + g) cannot reach the network: E775. With rack 1's tray 10 also
    losing one port, only rack 0's ranks are named (rack 1's GPU goes through a neighbour)."""
    for scenario in ("rack0_all", "rack0_and_tray"):
        with pytest.raises(seer.ForecastError) as exc:
            astral_dsl.forecast(gb_ws, job="llama405b", scenario=scenario)
        (d,) = [d for d in exc.value.diagnostics if d.is_error]
        assert d.code == "E775" and d.hint and d.span is not None
        assert d.notes == (
            "cut off: ranks 0, 4, 8, ..., 68 (NIC 0 of 18 hosts from "
            "`Hall.sus[1].racks[0].hosts[0]`)",
            "cut off: ranks 1, 5, 9, ..., 69 (NIC 1 of 18 hosts from "
            "`Hall.sus[1].racks[0].hosts[0]`)",
            "cut off: ranks 2, 6, 10, ..., 70 (NIC 2 of 18 hosts from "
            "`Hall.sus[1].racks[0].hosts[0]`)",
            "cut off: ... and 1 more runs of hosts"), d.notes


# ---- boundaries priced apart, without a design ----------------------------------------------
H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
HOSTS8 = comm.Network(8, 450e9, (50e9,) * 8, (comm.Tier("leaf", 4, False, 1.0),))


def test_a_boundary_across_hosts_is_priced_over_the_network_and_the_others_on_nvlink():
    """tp 4 (sp), pp 4 on 16 GPUs, 8 per host: stage s holds ranks 4 s .. 4 s + 3, so 0 -> 1
    (host 0) and 2 -> 3 (host 1) stay on NVLink and 1 -> 2 (ranks 4..7 -> 8..11) crosses
    hosts, as does the wrap-around 3 -> 0 (12..15 -> 0..3). One transfer is 8,192 x 4,096 x
    2 B / tp 4 = 16,777,216 B: on NVLink 7 us + S / (0.8 x 450e9) = 7 + 46.603 = 53.603 us;
    over the network, one leaf (cross-rail: the leaf is not per rail), 7 + (5 + 0.15) + S /
    (0.9 x 50e9) = 12.15 + 372.827 = 384.977 us (before: all four at the first pair's
    53.603 us). The schedule sends over each at its own time."""
    job = _job(tp=4, pp=4, sp=True).with_(global_batch=8)
    fc = seer.run(job, H100, HOSTS8)
    assert boundary_tops(fc.job, HOSTS8) == (None, 0, None, 0)
    nv, net = 53.603e-6, 384.977e-6
    assert fc.lowering.p2p_hops() == pytest.approx((nv, net, nv, net), abs=1e-9)
    keys = 2 * fc.job.parallel.v * fc.job.microbatches       # keys per stage
    for i, run in enumerate(fc.runs):
        for s, a, d in run.sends:
            j = d // keys                                    # the receiving stage
            crosses = {i, j} in ({1, 2}, {0, 3})
            assert a - s == pytest.approx(net if crosses else nv, abs=1e-9), (i, j)
    assert any(d // keys == 2 for _, _, d in fc.runs[1].sends)


# NVL racks of different sizes: 4 trays then 3 (4 GPUs and 4 400G NICs a tray, GPU g on NIC g),
# a leaf per rack and rail, a spine. `whole` holds every tray; `part` rack 0 and tray 0 of rack 1
MIXED = """\
import stdlib.hardware { B200, CX7_400G, QM9700_NDR }
import stdlib.models { Llama3_8B }
host Tray { gpus = 4 x B200, nics = 4 x CX7_400G, power = 6 kW, nvlink_domain = rack }
rack R4 { hosts = 4 x Tray }
rack R3 { hosts = 3 x Tray }
fabric F {
  rails = 4, max_oversubscription = 1
  tier leaf { switch = QM9700_NDR, scope = rack, per = [rail], down = 4 x 400 Gb/s,
              up = 4 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = [1 x R4, 1 x R3], fabric = F }
job whole {
  model = Llama3_8B, placement = S, gpus = 28
  parallel { tp = 4, pp = 1, dp = 7 }
  batch { global_batch = 28, micro = 1, seq = 4096 }
}
job part {
  model = Llama3_8B, placement = S, gpus = 20
  parallel { tp = 4, pp = 1, dp = 5 }
  batch { global_batch = 20, micro = 1, seq = 4096 }
}
scenario r1tray { fail S.racks[1].hosts[0].nics }
"""


@pytest.fixture(scope="module")
def mixed():
    ws = astral_dsl.compiles(MIXED, name="mixed.astral", root=REPO)
    return ws, {o.name: o.notes for o in astral_dsl.check(ws, ["r1tray"]).scenarios}


def test_pxn_finds_racks_of_any_size_as_the_check_does(mixed):
    """Rack 1 (hosts 4 to 6) loses tray 0's 4 NICs: 4 GPUs over its 8 live NICs, 4 of them
    carrying 2: 400 Gb/s / 2 = 25 GB/s, in the forecast as in the check's note (50 %). Seer
    took every domain to be 4 hosts from host 0: hosts [4, 8) were no rack, and the forecast
    cut the tray off."""
    ws, notes = mixed
    fc = astral_dsl.forecast(ws, job="whole", scenario="r1tray").detail
    assert [(t, bw) for t, bw, _ in fc.net.worst] == [(0, B / 2), (1, B / 2)]
    assert fc.net.cut == ()
    assert any("send through an NVLink neighbour's NIC (PXN)" in text
               for _, _, text in fc.net.worst)
    assert "gets 50 % of its healthy bandwidth" in " ".join(notes["r1tray"])


def test_pxn_lends_only_the_nics_of_the_jobs_trays(mixed):
    """NCCL's PXN goes through a GPU of the same communicator: `part` has 1 tray of rack 1 (host
    4), whose NICs all failed, so its 4 GPUs are cut off (ranks 16 to 19), though the rack's 2
    idle trays keep 8 NICs; the check, which knows no job, lends the whole rack's and says so.
    The job cannot run (E775): its DP groups (ranks t, t + 4, ..., t + 16) reach rank 16 to 19
    across the network. Seer counted 5 // 4 = 1 domain for them (Seer's host: a domain of 16
    GPUs, rank 16 on the second) and forecast the job on NVLink, the cut-off ranks included."""
    ws, notes = mixed
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(ws, job="part", scenario="r1tray")
    (diag,) = [d for d in exc.value.diagnostics if d.is_error]
    assert diag.code == "E775" and "the dp groups" in diag.message
    assert "cut off: rank 16 (NIC 0 of 1 host from `S.racks[1].hosts[0]`)" in diag.notes
    assert any("(NCCL's PXN, for a job that holds their rack)" in n for n in notes["r1tray"])
    assert communicator((4, 7), [(0, 5)]) == [4]
    assert communicator((4, 7)) == [4, 5, 6]


# `odd`: 26 GPUs, host by host: rack 0's 4 trays (16), then trays 4, 5 (8) and GPUs 0, 1 of tray 6
# (hosts 4 to 6 are rack 1; GPU g on NIC g): tray 6's GPUs 2, 3 and their NICs are not the job's
ODD = MIXED + """\
job odd {
  model = Llama3_8B, placement = S, gpus = 26
  parallel { tp = 2, pp = 1, dp = 13 }
  batch { global_batch = 26, micro = 1, seq = 4096 }
}
scenario last { fail S.racks[1].hosts[2].nics }
scenario two { fail S.racks[1].hosts[0].nics
  fail S.racks[1].hosts[1].nics }
"""


@pytest.mark.parametrize("scenario, behind, rate", [
    # tray 6 loses its 4 NICs: the job's 2 GPUs there reroute (not 4) over the 8 live NICs of
    # trays 4, 5: 2 of them carry 2 GPUs, 400 Gb/s / 2 = 25 GB/s
    ("last", 2, B / 2),
    # trays 4, 5 lose theirs: 8 GPUs over tray 6's NICs 0, 1 only (NICs 2, 3 have no GPU of the
    # job to relay through): 4 more each, 5 GPUs a NIC, 50 / 5 = 10 GB/s (not over 4 NICs: 3
    # a NIC, 16.7 GB/s)
    ("two", 8, B / 5)])
def test_pxn_counts_and_lends_only_the_jobs_gpus_of_its_last_tray(scenario, behind, rate):
    ws = astral_dsl.compiles(ODD, name="odd.astral", root=REPO)
    fc = astral_dsl.forecast(ws, job="odd", scenario=scenario).detail
    assert [(t, bw) for t, bw, _ in fc.net.worst] == [(0, rate), (1, rate)] and fc.net.cut == ()
    for _, _, text in fc.net.worst:
        assert f": {behind} of the job's GPUs behind it; {behind} of them send through" in text
