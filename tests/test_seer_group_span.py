"""The hosts a communication group spans, for the job's rank order (seer/ranks.spread,
comm_groups.groups), and the NVLink domain Seer takes on sites of racks of different sizes
(cluster._domain_hosts).

Seer counted a group's hosts as n // (its members in the first host): 5 DP ranks on hosts of 4
GPUs (4 + 1) made 1 host, so their collectives ran on NVLink and a failure that cut rank 4 off
went unreported. It took the first rack's trays as every NVLink domain's."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.seer import comm
from astral_dsl.seer.comm_groups import groups
from astral_dsl.seer.ranks import spread
from test_forecast_pairs_pxn import MIXED

REPO = Path(__file__).resolve().parents[1]

# hosts of 4 H100 (NVLink 450 GB/s each way) with 4 dual-port 200G NICs (50 GB/s per GPU)
QUAD = """\
import stdlib.hardware { H100_SXM, CX7_2x200G, Switch51T }
import stdlib.models { GPT3_5B }
host Quad { gpus = 4 x H100_SXM, nics = 4 x CX7_2x200G, power = 5 kW, units = 4 U
  nvlink_bandwidth = 450 GB/s }
rack R { hosts = 4 x Quad }
fabric F {
  rails = 4, planes = 2, dual_homing = true, max_oversubscription = 1
  tier tor { switch = Switch51T(power = 1 kW), scope = site, per = [rail, plane]
    down = 16 x 200 Gb/s }
}
site S { racks = 4 x R, fabric = F }
job dp5 {
  model = GPT3_5B, placement = S, gpus = 5
  parallel { tp = 1, pp = 1, dp = 5, zero = 1 }
  batch { global_batch = 5, micro = 1, seq = 4096 }
}
job dp3pp4 {
  model = GPT3_5B, placement = S, gpus = 12
  parallel { tp = 1, pp = 4, dp = 3, zero = 1 }
  batch { global_batch = 12, micro = 1, seq = 4096 }
}
scenario host1_dark { fail S.racks[0].hosts[1].nics }
"""


@pytest.fixture(scope="module")
def quad():
    return astral_dsl.compiles(QUAD, name="quad.astral", root=REPO)


@pytest.mark.parametrize("radix, others, g, want", [
    # (fewest on a host, hosts, consecutive hosts, common GPU indices, most on a host)
    (((1, 5),), (), 4, (1, 2, 2, 1, 4)),            # 0-3 | 4: GPU index 0 in both hosts
    (((1, 3),), (), 4, (3, 1, 1, 3, 3)),            # 0-2: one host
    (((1, 3),), ((3, 4),), 4, (1, 2, 2, 0, 2)),     # groups 0-2 | 3-5 = 3 | 4,5 | ...: no rail
    (((3, 4),), (), 4, (1, 3, 3, 0, 2)),            # stride 3: 0,3 | 6 | 9 (indices 0,3 | 2 | 1)
    (((8, 128),), ((1, 8),), 8, (1, 128, 128, 1, 1)),   # DP over TP 8 on HGX: a host each
    (((1, 8),), ((8, 128),), 8, (8, 1, 1, 8, 8)),       # TP 8 on HGX: one host
    (((2, 64),), (), 72, (28, 2, 2, 28, 36)),       # DP 64 over TP 2 on NVL72: 36 + 28
])
def test_spread_counted_by_hand(radix, others, g, want):
    assert spread(radix, others, g) == want


def _hierarchical_1gb(inside: int) -> float:
    """Seer's hierarchical all-reduce of S = 1 GB (seer/comm.all_reduce) for a group with
    `inside` members on its fullest host and one member on the other of 2 hosts (comm's BASE_S
    7 us): reduce-scatter and all-gather among the `inside` on NVLink ((n - 1) / n S at 0.8 x
    450 GB/s, n - 1 NVLink steps of 0.6 us), then an all-reduce of S / 1 across the 2 hosts on
    the one NIC (2 x 1/2 S at 0.9 x 50 GB/s, 2 x log2(2) steps of alpha = 5 us + 1 switch x
    0.15 us)."""
    inner = (inside - 1) / inside * 1e9 / (0.8 * 450e9) + (inside - 1) * 0.6e-6
    return 7e-6 + 2 * inner + 2 * (1 / 2) * 1e9 / (0.9 * 50e9) + 2 * 1 * 5.15e-6


def test_a_group_of_5_on_hosts_of_4_crosses_hosts(quad):
    fc = astral_dsl.forecast(quad, job="dp5").detail
    dp = groups(fc.job, fc.net)["dp"]
    assert (dp.n, dp.per_host, dp.hosts, dp.most, dp.hops) == (5, 1, 2, 4, 1)
    # the hierarchical all-reduce of S = 1 GB (cheaper than the ring's 2 x 4/5 S / 45 GB/s):
    # reduce-scatter and all-gather among the 4 of host 0 on NVLink (0.8 x 450 GB/s),
    # all-reduce of S / 1 across 2 hosts on rank 4's one NIC (0.9 x 50 GB/s),
    # alpha = 5 us + 1 switch x 0.15 us
    hier = _hierarchical_1gb(4)
    assert comm.all_reduce(fc.net, dp, 1e9) == pytest.approx(hier, rel=1e-12)
    assert hier == pytest.approx(26.4098e-3, rel=1e-5)      # not NVLink's 4.456 ms


def test_a_cut_group_that_straddles_hosts_is_e775(quad):
    """Host 1's NICs failed: rank 4, the DP group's member on it, has no network."""
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(quad, job="dp5", scenario="host1_dark")
    (diag,) = [d for d in exc.value.diagnostics if d.is_error]
    assert diag.code == "E775" and "the dp groups" in diag.message
    # the cut-off ranks are the job's: host 1's GPUs 1 to 3 are no rank of it
    assert diag.notes == ("cut off: rank 4 (NIC 0 of 1 host from `S.racks[0].hosts[1]`)",)


def test_other_ranks_groups_are_priced_checked_and_said(quad):
    """DP 3 x PP 4 on hosts of 4: rank 0's group (0-2) is inside host 0, stage 1's (3 | 4, 5)
    straddles hosts 0 and 1: the job's slowest, stage 1's (each stage is priced on its own:
    test_seer_stage_groups); cut off under host1_dark."""
    fc = astral_dsl.forecast(quad, job="dp3pp4").detail
    dp = groups(fc.job, fc.net)["dp"]
    assert (dp.n, dp.per_host, dp.hosts, dp.most, dp.hops) == (3, 1, 2, 2, 1)
    # all-reduce of S = 1 GB on it: hierarchical, the cheapest (ring: 7 us + 2 x 2/3 S / 45 GB/s
    # + 4 alpha = 29.66 ms; tree: 7 us + 2 S / 45 GB/s + ... = 47.2 ms): reduce-scatter and
    # all-gather among the 2 of host 1 on NVLink (0.8 x 450 GB/s), all-reduce of S / 1 across
    # 2 hosts on one NIC (0.9 x 50 GB/s), alpha = 5 us + 1 switch x 0.15 us
    hier = _hierarchical_1gb(2)
    assert comm.all_reduce(fc.net, dp, 1e9) == pytest.approx(hier, rel=1e-12)
    assert hier == pytest.approx(25.0185e-3, rel=1e-5)   # rank 0's, on NVLink: 3.71 ms
    assert fc.lowering.at(1).groups["dp"] == dp
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(quad, job="dp3pp4", scenario="host1_dark")
    (diag,) = [d for d in exc.value.diagnostics if d.is_error]
    assert diag.code == "E775" and "the dp groups" in diag.message


def test_a_group_of_5_is_priced_by_the_stage_whose_group_has_the_fewest_on_a_host(quad):
    """DP 5 x PP 2 on hosts of 4: stage 0's group 0-3 | 4 (4 + 1), stage 1's 5-7 | 8, 9 (3 + 2):
    priced by the slowest, one rank on a host (one NIC a host: S / 50 GB/s across hosts) and 4
    on the fullest (its phases inside a host), not stage 1's 2 NICs."""
    fc = astral_dsl.forecast(quad, job="dp5").detail
    job = fc.job.with_(parallel=attrs.evolve(fc.job.parallel, pp=2))
    dp = groups(job, fc.net)["dp"]
    assert (dp.n, dp.per_host, dp.hosts, dp.most) == (5, 1, 2, 4)
    # the same all-reduce as the DP 5 job's alone (test_a_group_of_5_on_hosts_of_4_crosses_hosts)
    assert comm.all_reduce(fc.net, dp, 1e9) == pytest.approx(26.4098e-3, rel=1e-5)


# test_forecast_pairs_pxn's site of NVL racks of 4 trays then 3 (4 GPUs a tray), with a job on
# rack 0 only
ONE_RACK = MIXED + """\
job first {
  model = Llama3_8B, placement = S, gpus = 16
  parallel { tp = 4, pp = 1, dp = 4 }
  batch { global_batch = 16, micro = 1, seq = 4096 }
}
"""


def test_the_nvlink_domain_is_the_smallest_rack_the_job_fills():
    ws = astral_dsl.compiles(ONE_RACK, name="mixed.astral", root=REPO)
    both = astral_dsl.forecast(ws, job="whole").detail
    # 7 trays over racks of 4 and 3: domains of 3 trays, 12 GPUs (it took rack 0's 16)
    assert both.net.gpus_per_host == 12
    assert "approximation: the job's NVLink domains are racks of 4 hosts (16 GPUs) and 3 hosts " \
           "(12 GPUs); Seer prices each as 3 hosts (12 GPUs), the smallest, its ranks filling " \
           "them in order as if every rack were that size" in both.notes
    # the 4 trays of rack 0 only: its 16 GPUs, no approximation
    first = astral_dsl.forecast(ws, job="first").detail
    assert first.net.gpus_per_host == 16
    assert not any("NVLink domains are racks" in n for n in first.notes)
