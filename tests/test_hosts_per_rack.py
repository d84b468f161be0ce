"""A job's `hosts_per_rack = N`: the first N hosts of each rack of its placement, the same hosts
for every consumer (analyses/job_racks.py): the rank map (`astral forecast --ranks`, `astral
diagnose`, `astral synth`), Seer's NVLink domain, tier reach, failures and PXN, and `astral
check` (E755, E772). Hand-worked on two GB200 NVL72 racks (18 trays of 4 GPUs, one NVLink
domain a rack) and on four racks of four 8-GPU hosts."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.seer import comm
from astral_dsl.analyses import rankmap
from astral_dsl.analyses.job_racks import counter, take
from astral_dsl.seer.comm_groups import groups
from test_forecast_pairs_pxn import PP  # noqa: E402  (its site, with racks of 4 hosts)

REPO = Path(__file__).resolve().parents[1]


def _job(name: str, size: str, parallel: str, batch: str) -> str:
    return (f"job {name} {{\n  model = Llama3_8B, placement = S, {size}\n"
            f"  parallel {{ {parallel} }}\n  batch {{ {batch} }}\n}}\n")

NVL = """\
import stdlib.hardware { NVL72, QM9700_NDR }
import stdlib.models { Llama3_8B }
fabric F {
  rails = 4, planes = 1
  tier leaf { switch = QM9700_NDR, scope = rack, per = [rail], down = 18 x 400 Gb/s,
    up = 18 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = 2 x NVL72, fabric = F }
""" + "".join(_job(name, "gpus = 128" + extra, "tp = 1, pp = 2, dp = 64, zero = 1",
                 "global_batch = 128, micro = 1, seq = 4096")
           for name, extra in (("on16", ", hosts_per_rack = 16"), ("packed", ""))) + """\
scenario tray17 { fail S.racks[0].hosts[17].nics[0].port[a]
  fail S.racks[0].hosts[17].nics[1].port[a]
  fail S.racks[0].hosts[17].nics[2].port[a]
  fail S.racks[0].hosts[17].nics[3].port[a] }
"""



def _racks_of_4(text: str) -> str:
    """test_forecast_pairs_pxn's site (4 racks of 8-GPU hosts, a ToR per rack and rail, an agg
    per rail over the site) with 4 hosts a rack: its ToRs' and aggs' down ports 4 and 16."""
    head = text[:text.index("job pp8")]
    for old, new in (("hosts = 2 x Node", "hosts = 4 x Node"),
                     ("down = 2 x 400 Gb/s, up = 2 x", "down = 4 x 400 Gb/s, up = 4 x"),
                     ("down = 8 x 400 Gb/s", "down = 16 x 400 Gb/s")):
        assert old in head
        head = head.replace(old, new)
    return head


H8 = _racks_of_4(PP) + "".join(_job(name, "gpus = 32" + extra, "tp = 8, pp = 1, dp = 4",
                 "global_batch = 64, micro = 1, seq = 8192")
           for name, extra in (("two", ", hosts_per_rack = 2"), ("packed", ""))) + """\
scenario spare { fail S.racks[0].hosts[3].nics[0].port[a] }
scenario used { fail S.racks[0].hosts[1].nics[0].port[a] }
"""


@pytest.fixture(scope="module")
def nvl():
    return astral_dsl.compiles(NVL, name="nvl.astral", root=REPO)


@pytest.fixture(scope="module")
def h8():
    return astral_dsl.compiles(H8, name="h8.astral", root=REPO)


def _map(ws, job, sizes):
    design = ws.design
    inst = next(j for j in design.jobs if j.template == job)
    return rankmap.build(design, inst, sizes)


EP64 = {"tp": 1, "cp": 1, "ep": 64, "dp": 128, "pp": 1}


def test_the_rule_takes_the_first_n_hosts_of_each_rack():
    # racks (0, 18) and (18, 36) cut into pieces; 16 of each, 20 hosts wanted:
    # rack 0's 0-15, then rack 1's 18-21; hosts in no rack (None) are not taken
    pieces = [((0, 18), 0, 10), ((0, 18), 10, 18), (None, 36, 37), ((18, 36), 18, 36)]
    assert take(pieces, 16, 20) == [(0, 10), (10, 16), (18, 22)]
    assert take(pieces, 16, None) == [(0, 10), (10, 16), (18, 34)]
    count = counter([(0, 16), (18, 34)])
    assert (count(0, 18), count(10, 20), count(16, 18), count(0, 36)) == (16, 8, 0, 32)


def test_rank_map_puts_rank_64_on_rack_1_tray_0(nvl):
    """16 trays x 4 GPUs = 64 ranks a rack: ranks 0-63 on rack 0's trays 0-15, 64-127 on rack
    1's trays 0-15 (rank 64 = rack 1, tray 0, GPU 0; rank 127 = tray 15, GPU 3)."""
    rm = _map(nvl, "on16", EP64)
    assert [rm.ranks[r].gpu for r in (0, 63, 64, 127)] == [
        "S.racks[0].hosts[0].gpus[0]", "S.racks[0].hosts[15].gpus[3]",
        "S.racks[1].hosts[0].gpus[0]", "S.racks[1].hosts[15].gpus[3]"]
    assert rm.ranks[64].ports[0].switch == "S.fabric.rack[1].rail[0].leaf[0]"
    # each EP group of 64 is one rack's NVLink: no NIC, no switch on its path
    for g in rm.groups["ep"]:
        assert len({rm.ranks[r].domain for r in g.ranks}) == 1
        assert rm.path(g.ranks).switches == ()


def test_without_it_the_second_ep_group_straddles_the_racks(nvl):
    """Packed: ranks 64-71 are rack 0's trays 16-17, 72-127 rack 1's trays 0-13."""
    rm = _map(nvl, "packed", EP64)
    assert rm.ranks[64].gpu == "S.racks[0].hosts[16].gpus[0]"
    assert rm.ranks[127].gpu == "S.racks[1].hosts[13].gpus[3]"
    second = rm.groups["ep"][1].ranks
    assert sorted({rm.ranks[r].domain for r in second}) == ["S.racks[0]", "S.racks[1]"]
    assert rm.path(second).switches      # over the network


def test_seer_prices_the_jobs_share_of_a_rack_as_its_nvlink_domain(nvl):
    """Seer's "host" is the job's 16 trays x 4 = 64 GPUs (not the rack's 72): stage 1's DP
    group (ranks 64-127) is then one domain, as rank 0's, and no straddle is said."""
    on16 = astral_dsl.forecast(nvl, job="on16").detail
    packed = astral_dsl.forecast(nvl, job="packed").detail
    assert (on16.net.gpus_per_host, packed.net.gpus_per_host) == (64, 72)
    assert not [n for n in on16.notes if "straddle" in n]
    assert [n for n in packed.notes if n.startswith(
        "dp groups sit unalike across the pipeline: on stage 0 the slowest sits inside one host "
        "(NVLink domain); on stage 1 the slowest straddles 2 hosts (NVLink domains) of 72 GPUs "
        "with 8 of 64 ranks on the fewest")]
    assert groups(on16.job, on16.net)["dp"].hosts == 1
    assert groups(packed.job, packed.net)["dp"].hosts == 2
    assert on16.placement == "S (the first 16 hosts of each rack)"


def test_a_256_gpu_ep64_job_prices_its_slowest_ep_group(nvl):
    """DeepSeek-V3's GB200 layout (TP 1, PP 4, DP 64, EP 64: 256 GPUs) on 72-GPU NVL72 domains.
    Packed, EP group 1 (ranks 64-127) is 8 GPUs of domain 0 and 56 of domain 1 (groups 2 and 3:
    16 + 48, 24 + 40), rank 0's inside domain 0: the all-to-all is priced by group 1, over the
    network (the spine: its GPUs cross rails) on the 8 NICs of its thinner side. With
    `hosts_per_rack = 16` the domain is the job's 64 GPUs of a rack: every group inside one, on
    NVLink. S = 1 GB per rank, at the fitted a2a_eff `eff` of NVLink's bandwidth and NET_EFF
    (0.9) of the NIC's (NCCL's sends between hosts, comm.all_to_all)."""
    on16 = astral_dsl.forecast(nvl, job="on16").detail
    packed = astral_dsl.forecast(nvl, job="packed").detail
    layout = attrs.evolve(packed.job.parallel, tp=1, pp=4, dp=64, ep=64)
    ep = groups(packed.job.with_(parallel=layout), packed.net)["ep"]
    assert (ep.n, ep.per_host, ep.hosts, ep.most, ep.hops) == (64, 8, 2, 56, 3)
    net = packed.net
    assert (net.nvlink_bw, net.nic_bw) == (900e9, 50e9)   # NVLink 5; a 400 Gb/s NIC a GPU
    eff, s = 0.5, 1e9
    # inside: the 55 others of its fullest domain on NVLink; outside: the 56 of 64 elsewhere on
    # the GPU's NIC at NET_EFF, whatever `eff`; alpha: 5 us + 3 switches x 0.15 us, log2(2
    # domains) steps
    inside = 55 / 64 * s / (900e9 * eff)
    outside = 56 / 64 * s / (50e9 * 0.9)
    want = 7e-6 + max(inside, outside) + 5.45e-6 * 1
    assert comm.all_to_all(net, ep, s, eff) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(19.4569e-3, rel=1e-5)
    assert comm.all_to_all(net, ep, s, 0.25) == pytest.approx(want, rel=1e-12)
    ep16 = groups(on16.job.with_(parallel=layout), on16.net)["ep"]
    assert (ep16.n, ep16.hosts, ep16.hops) == (64, 1, 0)
    # one domain: 63 of 64 on NVLink, 63 steps of 0.6 us / 4
    nv = 7e-6 + 63 / 64 * s / (900e9 * eff) + 63 * 0.6e-6 / 4
    assert comm.all_to_all(on16.net, ep16, s, eff) == pytest.approx(nv, rel=1e-12)
    assert nv == pytest.approx(2.20395e-3, rel=1e-5)     # 16x less than over the network


def test_a_failed_tray_the_job_leaves_does_not_slow_it(nvl):
    """Tray 17 of rack 0, every port down: not the job's with hosts_per_rack = 16 (same
    iteration as healthy, no PXN); a packed job's ranks 68-71 are on it (its GPUs send
    through neighbours' NICs and the 0 -> 1 boundary slows)."""
    healthy = astral_dsl.forecast(nvl, job="on16").detail
    failed = astral_dsl.forecast(nvl, job="on16", scenario="tray17").detail
    assert failed.iteration_time == healthy.iteration_time
    assert not [n for n in failed.notes if n.startswith(("pxn", "pp:"))]
    packed = astral_dsl.forecast(nvl, job="packed", scenario="tray17").detail
    assert [n for n in packed.notes if n.startswith("pxn: 4 GPUs")]
    assert packed.iteration_time > astral_dsl.forecast(nvl, job="packed").detail.iteration_time


def test_tier_reach_counts_the_jobs_hosts_under_a_switch(h8):
    """2 of each rack's 4 hosts: a ToR reaches 2 of the job's hosts, the site's agg 4 x 2 = 8;
    the DP group of 4 hosts (one per TP 8 block) spans racks 0 and 1: it climbs to the agg
    (3 switches), where packed it is rack 0's 4 hosts under one ToR (1 switch)."""
    two = astral_dsl.forecast(h8, job="two").detail
    packed = astral_dsl.forecast(h8, job="packed").detail
    assert [(t.name, t.reach_hosts) for t in two.net.tiers] == [("tor", 2), ("agg", 8)]
    assert [(t.name, t.reach_hosts) for t in packed.net.tiers] == [("tor", 4), ("agg", 16)]
    assert (groups(two.job, two.net)["dp"].hops, groups(packed.job, packed.net)["dp"].hops) \
        == (3, 1)
    rm = _map(h8, "two", {"tp": 8, "cp": 1, "ep": 1, "dp": 4, "pp": 1})
    # hosts 0-1 of rack 0 are ranks 0-15, rack 1's host 0 ranks 16-23: rank 19 is its GPU 3
    assert rm.ranks[19].gpu == "S.racks[1].hosts[0].gpus[3]"


def test_failures_count_on_the_jobs_hosts_only(h8):
    """Rack 0's host 3 is a spare of `two` (no effect) but `packed`'s (its rank 24 is cut off:
    E775); rack 0's host 1 is `two`'s: rank 8 (its GPU 0, NIC 0) is cut off."""
    assert astral_dsl.forecast(h8, job="two", scenario="spare").detail.iteration_time == \
        astral_dsl.forecast(h8, job="two").detail.iteration_time
    for job, scenario, note in (
            ("packed", "spare", "cut off: rank 24 (NIC 0 of 1 host from `S.racks[0].hosts[3]`)"),
            ("two", "used", "cut off: rank 8 (NIC 0 of 1 host from `S.racks[0].hosts[1]`)")):
        with pytest.raises(seer.ForecastError) as exc:
            astral_dsl.forecast(h8, job=job, scenario=scenario)
        (diag,) = [d for d in exc.value.diagnostics if d.is_error]
        assert diag.code == "E775" and diag.notes == (note,)


def _errors(text):
    ws = astral_dsl.compiles(text, name="bad.astral", root=REPO)
    # (the jobs' errors: the small fabric's own engineering errors, E603 and E611, aside)
    return [d for d in astral_dsl.check(ws).diagnostics if d.is_error and d.code[1] == "7"]


def test_too_many_hosts_for_a_rack_is_e772():
    (d,) = _errors(H8.replace("hosts_per_rack = 2", "hosts_per_rack = 5"))
    assert d.code == "E772" and d.message == (
        "job `two`: `hosts_per_rack = 5` but rack `R` of its placement `S` holds 4 hosts")
    assert d.span is not None and d.hint.startswith("take at most 4 hosts of each rack")


def test_hosts_in_no_rack_is_e772():
    text = H8.replace("rack R { hosts = 4 x Node }\n", "").replace(
        "site S { racks = 4 x R, fabric = F }", "site S { hosts = 16 x Node }")
    text = text[:text.index("scenario")]
    (d,) = _errors(text.replace("F {", "F0 {"))
    assert d.code == "E772" and "holds no rack with GPUs" in d.message and d.hint


def test_a_job_that_does_not_fit_the_racks_share_is_e755():
    """1 host of each of the 4 racks: 4 x 8 = 32 GPUs, the job needs 64."""
    text = H8[:H8.index("job two")] + _job("two", "gpus = 64, hosts_per_rack = 1",
                                           "tp = 8, pp = 1, dp = 8",
                                           "global_batch = 64, micro = 1, seq = 8192")
    (d,) = _errors(text)
    assert d.code == "E755" and d.message == (
        "job `two` needs 64 GPUs but the first host of each rack of its placement `S` hold "
        "32 (`hosts_per_rack = 1`)")


SPARE = """\
import stdlib.hardware { H100_SXM, CX7_400G, QM9700_NDR, HGX8 }
import stdlib.models { Llama3_8B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
fabric F {
  rails = 8, planes = 1, max_oversubscription = 1
  tier leaf { switch = QM9700_NDR, scope = site, per = [rail], down = 8 x 400 Gb/s,
    up = 8 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 16 x 400 Gb/s }
}
site S { racks = 4 x R, fabric = F }
""" + "".join(_job(name, "gpus = 64" + extra, "tp = 8, pp = 1, dp = 8",
                   "global_batch = 64, micro = 1, seq = 8192")
              for name, extra in (("three", ", hosts_per_rack = 3"), ("packed", "")))


def test_a_leaf_over_racks_holds_the_spare_hosts_ports_in_seer_as_in_the_rank_map():
    """A leaf per rail over the site's 16 hosts, 8 down ports: hosts 0-7 (racks 0 and 1) on
    leaf 0, 8-15 on leaf 1, the job's or not. With 3 of each rack's 4 hosts the job has 6 on
    leaf 0 (0-2, 4-6) and its 7th and 8th (8, 9) on leaf 1: Seer's leaf reaches 6 of its hosts,
    as the rank map puts them, not 8 (down ports / ports per host, which counted the spare
    hosts' ports as the job's), so its DP group of 8 hosts climbs to the spine in both;
    packed, 8 hosts under leaf 0 in both."""
    from collections import Counter

    ws = astral_dsl.compiles(SPARE, name="spare.astral", root=REPO)
    sizes = {"tp": 8, "cp": 1, "ep": 1, "dp": 8, "pp": 1}
    for job, reach, on_leaves, hops, climbs in (
            ("three", 6, [6, 2], 3, ("S.fabric.spine",)), ("packed", 8, [8], 1, ())):
        fc = astral_dsl.forecast(ws, job=job).detail
        assert [(t.name, t.reach_hosts) for t in fc.net.tiers][0] == ("leaf", reach), job
        assert groups(fc.job, fc.net)["dp"].hops == hops, job
        rm = _map(ws, job, sizes)
        per_leaf = Counter(rm.ranks[r].ports[0].switch for r in range(0, 64, 8))
        assert sorted(per_leaf.values(), reverse=True) == on_leaves, job
        assert max(per_leaf.values()) == reach
        assert rm.path(rm.groups["dp"][0].ranks).tiers == climbs, job


def test_fill_counts_whole_hosts_on_a_switch_the_spare_ones_taking_ports():
    """fabric_names.fill: 4 ports a host on one group, 18 down ports: 4 hosts whole on a
    switch (host 4's ports 16-19 straddle switches 0 and 1); 4 racks of 18 trays under leaves
    of 32 down ports, 16 trays of each counted: 30 on leaf 0 (rack 0's 16, rack 1's 0-13), 28
    on leaf 1, 6 on leaf 2; hosts that differ (runs): each with its own ports."""
    from astral_dsl.analyses.fabric_names import PortPlace, Runs, fill

    four = PortPlace(0, 0, 0, 0, 0, 4)
    one = PortPlace(0, 0, 0, 0, 0, 1)
    assert fill(18, four, 18) == 4 and fill(3, four, 18) == 3
    sixteen = counter([(r * 18, r * 18 + 16) for r in range(4)])
    assert fill(72, one, 32) == 32 and fill(72, one, 32, counted=sixteen) == 30
    assert fill(72, one, 32, counted=lambda a, b: sixteen(a, b) if a >= 32 else 0) == 28
    # 2 hosts of 1 port, then 3 of 2 ports, 4 down ports: switch 0 holds ports 0-3 (hosts 0,
    # 1 and 2), switch 1 ports 4-7 (hosts 3 and 4 whole)
    wire = (1, 1, False, False)
    runs = Runs((0, 2), (2, 3), ({}, {(None, None): 2}), ({(None, None): 1},
                                                         {(None, None): 2}), ((), ()))
    assert fill(5, one, 4, runs, wire) == 3
    assert fill(5, one, 4, runs, wire, counted=lambda a, b: int(a >= 3)) == 2
