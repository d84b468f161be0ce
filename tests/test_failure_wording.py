"""What a scenario's fabric failures say (issue 44): an `agg -- core` link failure names the
failed links and the traffic it slows, with its arithmetic; the broken constraints' own notes
reach the scenario's E680/W680; a host whose ports straddle two first-tier switches is behind
only the one each port lands on."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import astral_dsl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_forecast_failures import DESIGN  # noqa: E402

# DESIGN: pods of 64 hosts (8 NICs of 2 ports), 8 rails x 2 planes; per pod, rail and plane 2
# ToRs (32 x 200G down, 16 x 400G up) under 4 aggs in a full mesh (8 x 400G down: each ToR puts
# 16 / 4 = 4 uplinks on each agg), 1:1 everywhere (max_oversubscription = 1)
LINKS = """
scenario agg_core { fail S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.core }
scenario agg1 { fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
"""


@pytest.fixture(scope="module")
def checked():
    ws = astral_dsl.compiles(DESIGN + LINKS, name="t.astral", root=REPO)
    result = astral_dsl.check(ws, ["agg_core", "agg1"])
    return {d.message.split("`")[1]: d for d in result.diagnostics if d.code == "W680"}


def test_an_agg_core_link_failure_names_the_links_and_the_traffic(checked):
    """agg[1] loses its links to the core: the 2 ToRs below it route their core-bound traffic
    over their other 12 uplinks (4 of their 16 went to agg[1]: 25 % lost for that traffic), so
    it runs 1:1 / (1 - 25 %) = 1.3333:1; their traffic that turns at `agg` keeps every link."""
    notes = checked["agg_core"].notes
    assert notes[0].startswith(
        "breaks: [E602] `S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.core` failed: "
        "the traffic into `core` of the hosts behind the `tor` switches below it runs "
        "1.3333:1, above the declared limit 1:1 (t.astral:")
    assert "tier `tor` runs" not in notes[0]
    assert notes[1] == (
        "[E602] each of those `tor` switches routes its traffic into `core` around the failed "
        "links, over the uplinks to the other `agg` switches: it loses 25 % of its uplinks for "
        "that traffic, so its 1:1 / (1 - 25 %) = 1.3333:1; the traffic that turns at `agg` "
        "keeps every link")


def test_a_failed_agg_switch_oversubscribes_the_tors_into_agg(checked):
    """agg[1] itself fails: every path through it is gone, the ToRs' traffic into `agg` runs
    on 12 of 16 uplinks: 1:1 / (1 - 25 %) = 1.3333:1, the arithmetic in the W680's notes."""
    notes = checked["agg1"].notes
    assert notes[0].startswith(
        "breaks: [E602] tier `tor` runs 1.3333:1 into `agg` for the traffic of the hosts behind "
        "the switches that lost 25 % of their uplinks "
        "(`S.fabric.pod[1].rail[0].plane[A].agg[1]` failed), above the declared limit 1:1")
    assert notes[1] == ("[E602] each of those `tor` switches loses 25 % of its uplinks into "
                        "`agg`, so its 1:1 / (1 - 25 %) = 1.3333:1")
