"""Seer's reach of a tier's groups over pods of different sizes: the hosts under one group are
those of the pods the job runs in, not of the owner's first pod (seer/cluster.py: every pod's
spine "reached" the big pod's 40 hosts).

The design (/tmp/audit45_sizing/d/uneven.astral with H100s): 8 rails, one single-port 400G NIC
per GPU (50 GB/s); a pod Big of 40 hosts and three pods Small of 8; leaf per pod and rail (32
down, 32 up: 1:1), spine per pod (32 down, 16 up: 2:1 into the core), core per site.

Hand (comm.py): ring all-reduce of S bytes over n hosts, one rank each,
    t = BASE + 2 (n - 1) / n x S / (NET_EFF x B) + 2 (n - 1) x (NET_STEP + hops x SWITCH)
BASE = 7 us, NET_EFF = 0.9, NET_STEP = 5 us, SWITCH = 0.15 us (InfiniBand)."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.seer import comm
from astral_dsl.seer.lower import groups

REPO = Path(__file__).resolve().parents[1]

DESIGN = """\
import stdlib.hardware { H100_SXM, CX7_400G, Switch51T, HGX8 }
import stdlib.models { Llama3_8B }
host H = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x H }
pod Big { racks = 10 x R }
pod Small { racks = 2 x R }
fabric F {
  rails = 8
  tier leaf { switch = Switch51T(power = 1 kW), scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Switch51T(power = 1 kW), scope = pod, down = 32 x 400 Gb/s, up = 16 x 400 Gb/s }
  tier core { switch = Switch51T(power = 1 kW), scope = site, down = 64 x 400 Gb/s }
}
site Site { pods = [1 x Big, 3 x Small], fabric = F }
""" + "".join(f"""job {name} {{
  model = Llama3_8B, placement = {where}, gpus = 128, parallel {{ tp = 8, pp = 1, dp = 16 }}
  batch {{ global_batch = 256, micro = 1, seq = 8192 }}
}}
""" for name, where in (("two_small", "Site.pods[1..2]"), ("in_big", "Site.pods[0]")))
S = 16e9


def ring(n: int, bw: float, hops: int) -> float:
    return 7e-6 + 2 * (n - 1) / n * S / (0.9 * bw) + 2 * (n - 1) * (5e-6 + hops * 0.15e-6)


@pytest.fixture(scope="module")
def ws():
    ws = astral_dsl.compiles(DESIGN, name="uneven.astral", root=REPO)
    assert ws.design.valid, [d.message for d in ws.design.diagnostics if d.is_error]
    return ws


@pytest.mark.parametrize("job, reach, hops, bw", [
    # two Small pods (hosts 40..55): a leaf reaches min(8 hosts of its pod, 32 ports / 1 port
    # per host of its rail) = 8, a spine its pod's 8: the DP group of 16 hosts climbs to the
    # core (5 switches) and its spines run 2:1: 50 GB/s / 2 = 25 GB/s. (It read the first
    # pod's: leaf min(40, 32) = 32 >= 16 hosts, one switch at 50 GB/s.)
    ("two_small", (8, 8, 64), 5, 25e9),
    # Big (hosts 0..39): a leaf reaches min(40, 32) = 32 >= 16: one switch, 50 GB/s
    ("in_big", (32, 40, 64), 1, 50e9),
])
def test_a_tier_reaches_the_hosts_of_the_pods_the_job_runs_in(ws, job, reach, hops, bw):
    fc = astral_dsl.forecast(ws, job=job).detail
    assert tuple(t.reach_hosts for t in fc.net.tiers) == reach
    dp = groups(fc.job, fc.net)["dp"]
    assert (dp.n, dp.hosts, dp.hops, dp.net_bw) == (16, 16, hops, bw)
    assert comm.all_reduce(fc.net, dp, S) == pytest.approx(ring(16, bw, hops), rel=1e-12)
