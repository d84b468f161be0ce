"""Seer under failures: a pipeline is priced by its slowest pair of neighbouring stages
(seer/pipeline_pairs.py), and in an NVLink domain of several trays a GPU whose NIC lost its path
sends through a neighbour's NIC (PXN, seer/pxn.py). Healthy forecasts keep the representative
pair (the runs tables do not move).

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
from astral_dsl.seer.pipeline_pairs import pair_top
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


def test_healthy_pipeline_keeps_its_representative_pair(pp_ws):
    """Ranks 0 and 8 (hosts 0 and 1) under ToR 0: one switch, 50 GB/s:
    7 + (5 + 0.15) + 8,388,608 / (0.9 x 50e9) s = 7 + 5.15 + 186.414 = 198.564 us."""
    _, lay = _pp(pp_ws)
    assert (lay.hosts, lay.hops, lay.net_bw) == (2, 1, B)
    assert comm.p2p(None, lay, S_PP) == pytest.approx(7e-6 + 5.15e-6 + S_PP / (0.9 * B))
    assert comm.p2p(None, lay, S_PP) == pytest.approx(198.564e-6, abs=1e-9)


def test_a_failure_on_the_pairs_that_cross_a_tor_sets_the_pipelines_pace(pp_ws):
    """50 % of the aggs: the ToRs run 2:1 into the agg, so the pairs (1,2), (3,4), (5,6) run at
    25 GB/s over 3 switches: 7 + (5 + 3 x 0.15) + 8,388,608 / (0.9 x 25e9) s
    = 7 + 5.45 + 372.828 = 385.278 us per transfer (the representative pair, under one ToR,
    saw nothing before the fix: the same 2.010 s as healthy)."""
    healthy, _ = _pp(pp_ws)
    fc, lay = _pp(pp_ws, "half_agg")
    assert (lay.hosts, lay.hops, lay.net_bw) == (2, 3, B / 2)
    assert comm.p2p(None, lay, S_PP) == pytest.approx(385.278e-6, abs=1e-9)
    assert fc.iteration_time > healthy.iteration_time
    assert fc.breakdown["pp_comm"] > healthy.breakdown["pp_comm"]
    assert ("pp: the slowest pair of neighbouring stages (a pipeline runs in lockstep) runs at "
            "25.00 GB/s per GPU instead of 50.00 GB/s (tier `tor` oversubscribed 2:1 instead "
            "of 1:1)") in fc.notes


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


@pytest.mark.parametrize("scenario, rerouted", [("tray10", 1), ("tray10_all", 4), ("leaf", 18)])
def test_a_gpu_whose_nic_failed_runs_through_a_neighbours(gb_ws, scenario, rerouted):
    """Each rerouted GPU shares a live NIC of its rack with that NIC's own GPU (72 NICs, at most
    18 rerouted): 400 Gb/s / 2 = 25 GB/s for the slowest; the pipeline's slowest pair crosses
    racks at that rate: 7 + (5 + 3 x 0.15) + 67,108,864 / (0.9 x 25e9) s = 2,995.06 us. The
    healthy forecast prices the pipeline by ranks 0 and 16, inside rack 0 (NVLink). The GPUs
    behind the failed part are counted on the design's trays (4 GPUs each: 1, 4, and the 18
    GPUs 0 of rack 2's trays for its rail-0 leaf), though Seer's "host" is the 72-GPU rack:
    the job's 256 GPUs are its first 64 trays, racks 0 to 3, not 4 trays."""
    healthy = astral_dsl.forecast(gb_ws, job="llama405b").detail
    assert groups(healthy.job, healthy.net)["pp"].hosts == 1
    fc = astral_dsl.forecast(gb_ws, job="llama405b", scenario=scenario).detail
    lay = groups(fc.job, fc.net)["pp"]
    assert (lay.hosts, lay.hops, lay.net_bw) == (2, 3, B / 2)
    assert comm.p2p(fc.net, lay, S_GB) == pytest.approx(2995.06e-6, abs=1e-8)
    assert fc.iteration_time > healthy.iteration_time
    gpus = "GPU" if rerouted == 1 else "GPUs"
    assert any(n.startswith(f"pxn: {rerouted} {gpus} of the job whose NIC lost its path")
               and "NCCL 2.12" in n for n in fc.notes)
    assert any(n.startswith("pp: the slowest pair") and
               f"{rerouted} of the job's GPUs behind it" in n and "over NVLink" in n
               for n in fc.notes)


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
    idle trays keep 8 NICs; the check, which knows no job, lends the whole rack's and says so."""
    ws, notes = mixed
    fc = astral_dsl.forecast(ws, job="part", scenario="r1tray").detail
    assert [(t, bw) for t, bw, _ in fc.net.worst] == [(0, 0.0), (1, 0.0)]
    assert fc.net.cut[0][1][0] == "cut off: rank 16 (NIC 0 of 1 host from `S.racks[1].hosts[0]`)"
    assert any("(NCCL's PXN, for a job that holds their rack)" in n for n in notes["r1tray"])
    assert communicator((4, 7), [(0, 5)]) == [4]
    assert communicator((4, 7)) == [4, 5, 6]
