"""A small project for the exploration tests: an entry that imports a project module (so the
workers' bundle must carry it), two parameters, a user check, feeders, a loop and a job."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

PARTS = """
import stdlib.hardware { H100_SXM, CX7_400G, HGX8 }
host Node = HGX8(gpu = H100_SXM, nic = CX7_400G, liquid_share = 75 %)   // stated: no W216
"""

MAIN = """
import lib.parts { Node }
import stdlib.models { Llama3_8B }

param hosts_per_rack = 4
param rack_limit = 45 kW

rack GpuRack {
  hosts = hosts_per_rack x Node
  check power <= rack_limit else error "rack exceeds its busway rating"
}

row GpuRow {
  racks = 4 x GpuRack
  feeder main { current = ac, voltage = 415 V, phases = 3, capacity = 200 kW, serves = racks }
}

site Lab {
  rows = 2 x GpuRow
}

job train {
  model = Llama3_8B
  placement = Lab
  gpus = 64
  parallel { tp = 8, pp = 1, dp = 8 }
  batch { global_batch = 64, micro = 1, seq = 4096 }
  recompute = selective
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "parts.astral").write_text(textwrap.dedent(PARTS), encoding="utf-8")
    entry = tmp_path / "main.astral"
    entry.write_text(textwrap.dedent(MAIN), encoding="utf-8")
    return entry
