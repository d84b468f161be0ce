"""A tier's oversubscription as Seer prices it is the one its switches run at as loaded: a
switch whose down ports are not all wired carries the traffic of the ports that are
(seer/job_tiers.loaded). It priced the ratio of the ports: a leaf of 48 down and 16 up ports
under 32 hosts' ports (2:1 as `astral check` says it beside E602) slowed cross-leaf traffic
3x, so Qwen3-235B's EP all-to-alls on a 2,048-GPU B200 design took 4.838 s instead of the
3.225 s of 2:1 (1.613 s at 1:1)."""
from __future__ import annotations

import pytest

import astral_dsl
from astral_dsl import seer

# 16 hosts of 8 H100 with a 400G NIC each, 4 to a rack; a leaf per rack and rail, one spine.
# `down`/`up` of the leaves are set per test; the DP group of GPT-3 5B (the same GPU index on
# every host) climbs from each rack's leaf to the spine.
DESIGN = """\
import stdlib.hardware { H100_SXM, CX7_400G, QM9700_NDR, HGX8 }
import stdlib.models { GPT3_5B }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G)
rack R { hosts = 4 x Node }
fabric F {
  rails = 8
  tier leaf { switch = QM9700_NDR, scope = rack, per = [rail], down = DOWN x 400 Gb/s,
              up = 2 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = 4 x R, fabric = F }
job j {
  model = GPT3_5B, placement = S, gpus = 128
  parallel { tp = 8, pp = 1, dp = 16, zero = 1 }
  batch { global_batch = 64, micro = 1, seq = 2048 }
}
"""


def _design(tmp_path, down: int):
    path = tmp_path / f"leaf{down}.astral"
    path.write_text(DESIGN.replace("DOWN", str(down)), encoding="utf-8")
    return path


def test_unwired_down_ports_do_not_oversubscribe_the_traffic(tmp_path):
    # 6 down ports, 4 wired (4 hosts), 2 up: 3:1 of the ports, 2:1 as loaded
    spare = _design(tmp_path, 6)
    full = _design(tmp_path, 4)             # 4 down, all wired, 2 up: 2:1 either way
    checked = astral_dsl.check(astral_dsl.compile(str(spare)))
    (fabric,) = checked.engineering.fabrics
    leaf = fabric.tiers[0]
    assert (leaf.down_ports, leaf.down_used, leaf.oversubscription) == (6, 4, 3)   # reported
    design = checked.design
    _, _, cluster = seer.validate_job(design, design.jobs[0])
    assert cluster.net.tiers[0].oversub == pytest.approx(2.0)
    a = astral_dsl.forecast(str(spare)).detail
    b = astral_dsl.forecast(str(full)).detail
    assert a.breakdown["dp_comm"] > 0
    assert a.iteration_time == pytest.approx(b.iteration_time, rel=1e-12)
