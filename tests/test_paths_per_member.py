"""A path names the same parts in a `check`, a placement and a `fail`: `g.b[i]` is the i-th `b`
of every member of `g` (docs/language.md, sections 10.6 and 14).

Before, an expression flattened `g.b` into one group and indexed that (`pods[0..1].sus[0..1]`
was the first pod's blocks 0 and 1, 2 blocks; `count(pods[*].sus[0])` E303), while a scenario
failed each member's (4 feeders), a placement took the shared instance's path (1 host of
`racks[2..5].hosts[0..1]`), and a scenario index valid only in the flat group
(`pods[*].sus[5]` with 4 blocks a pod) was accepted and reported as "16 feeders" while it
failed `pods[0].sus[0]`'s feeder alone. Every count below is worked by hand from the sizes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.diagnose import rank_map

sys.path.insert(0, str(Path(__file__).parent))
from jobtext import job  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"

# 4 pods x 4 blocks x 2 racks x 4 hosts x 8 GPUs: a block holds 64 GPUs, a pod 256.
CLUSTER = """\
gpu G { power = 1 kW, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 4 x H }
block B {
  racks = 2 x R
  feeder hvdc { current = dc, voltage = 240 V, side = A, capacity = 100 kW, efficiency = 96 %,
                serves = racks }
  feeder utility { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = B,
                   capacity = 100 kW, efficiency = 97 %, serves = racks }
}
pod P { sus = 4 x B }
site S {
  pods = 4 x P
  utilization = 50 %
  air room { supply = 25 degC, rise = 12 K }
  let s = pods.sus                               // one group of the 16 blocks
  check count(pods[0..1]) == 2
  check count(pods[0..1].sus) == 8               // 2 pods x 4 blocks
  check count(pods[0..1].sus[0..1]) == 4         // blocks 0 and 1 of each of 2 pods
  check pods[0..1].sus[0..1].gpus == 256         // 4 blocks x 64
  check count(pods[*].sus[0]) == 4               // block 0 of each of 4 pods
  check count(pods.sus[3].racks[1].hosts[0..1]) == 8   // 4 pods x 1 block x 1 rack x 2 hosts
  check count(pods[0..1][1].sus) == 4            // an index of a selection: pod 1 alone
  check s[5].gpus == 64                          // the flat group named first: one block
  check count(s[4..7]) == 4
}
scenario four { fail S.pods[0..1].sus[0..1].hvdc }
scenario each_first { fail S.pods[*].sus[0].hvdc }
scenario set_four { set S.pods[0..1].sus[0..1].utility.capacity = 90 kW }
"""


def _errors(text):
    design = astral_dsl.compiles(text, name="cluster.astral").design
    return [(d.code, d.message) for d in design.diagnostics if d.code.startswith("E")]


@pytest.fixture(scope="module")
def cluster():
    ws = astral_dsl.compiles(CLUSTER, name="cluster.astral")
    assert ws.design.valid, ws.design.diagnostics
    return {o.name: o for o in astral_dsl.check(ws, all_scenarios=True).scenarios}


def test_checks_count_each_members_parts():
    """The checks of CLUSTER hold as written (each was false or E303 before)."""
    assert _errors(CLUSTER) == []


def test_a_fail_names_the_parts_the_check_counts(cluster):
    """4 feeders: the same 4 blocks `count(pods[0..1].sus[0..1])` counts."""
    assert cluster["four"].notes[0] == "feeder S.pods[0..1].sus[0..1].hvdc failed (4 feeders)"
    assert cluster["four"].applied.named[0][:4] == \
        ("fail", "S.pods[0..1].sus[0..1].hvdc", "feeder", 4)
    assert cluster["each_first"].notes[0] == "feeder S.pods[*].sus[0].hvdc failed (4 feeders)"
    assert cluster["set_four"].notes[0] == \
        "S.pods[0..1].sus[0..1].utility.capacity = 90 kW (4 feeders)"


def test_an_index_past_each_members_group_is_e214():
    """`pods[*].sus[5]` with 4 blocks a pod names no block: E214 in a check and in a `fail`
    (it was accepted by a `fail`, which said 16 feeders and failed pods[0].sus[0]'s)."""
    for line in ("check count(pods[*].sus[5]) == 4",):
        errors = _errors(CLUSTER.replace("check count(pods[0..1]) == 2", line))
        assert errors == [("E214", "index 5 is out of range: `sus` of pod `P` has 4 "
                                   "(indices 0 to 3)")]
    errors = _errors(CLUSTER + "scenario past { fail S.pods[*].sus[5].hvdc }\n")
    assert errors == [("E214", "index 5 is out of range: `sus` of pod `P` has 4 "
                               "(indices 0 to 3)")]


def test_a_scenario_cannot_index_a_pool_named_by_a_let():
    """`let pool = S.pods.sus` is the 16 blocks as one group: `pool[5]` is pod 1's second block
    in a check (CLUSTER's `s[5].gpus == 64`), but a route indexes each member (`S.pods.sus[5]`):
    `fail pool[1].hvdc` failed every pod's block 1 (4 feeders) and `pool[5]` said 16. E217."""
    text = CLUSTER + "let pool = S.pods.sus\nscenario one { fail pool[1].hvdc }\n"
    assert _errors(text) == [(
        "E217", "`pool` puts the parts of several replicas together in one group: a scenario "
                "cannot say which replica an index of it picks")]


def test_members_of_different_sizes():
    """2 pods of 4 blocks and 2 of 2: blocks 0..1 of each are 8; block 3 of a 2-block pod is
    E214, which names that pod."""
    text = CLUSTER.replace("site S {\n  pods = 4 x P", "pod Q { sus = 2 x B }\nsite S {\n"
                           "  pods = [2 x P, 2 x Q]\n  check count(pods[*].sus[0..1]) == 8\n"
                           "  check pods.sus[1].gpus == 256")
    text = text.replace("check count(pods.sus[3].racks[1].hosts[0..1]) == 8",
                        "check count(pods[0..1].sus[3].racks[1].hosts[0..1]) == 4")
    assert _errors(text) == []
    bad = text.replace("check count(pods[0..1]) == 2", "check count(pods.sus[3]) == 4")
    assert _errors(bad) == [("E214", "index 3 is out of range: `sus` of pod `Q` has 2 "
                                     "(indices 0 to 1)")]


def _placed(placement: str, gpus: int):
    text = SMALL.read_text().replace("placement = Small\n", f"placement = {placement}\n") \
        .replace("gpus = 128", f"gpus = {gpus}").replace("dp = 8", f"dp = {gpus // 16}")
    return rank_map(astral_dsl.loads(text, name=str(SMALL)))


def test_a_placement_takes_each_members_parts():
    """Small: 8 racks x 4 hosts x 8 GPUs. Hosts 0..1 of racks 2..5 are 8 hosts, 64 GPUs, in
    the design's order (it took 1 host before: the shared instance's path); host 3 of every
    rack is 8 hosts; `racks[*]` is every rack, as `racks` is (it took the first rack)."""
    rm = _placed("Small.racks[2..5].hosts[0..1]", 64)
    assert len(rm.ranks) == 64
    assert [rm.ranks[r].gpu for r in (0, 8, 16, 63)] == [
        "Small.racks[2].hosts[0].gpus[0]", "Small.racks[2].hosts[1].gpus[0]",
        "Small.racks[3].hosts[0].gpus[0]", "Small.racks[5].hosts[1].gpus[7]"]
    rm = _placed("Small.racks[*].hosts[3]", 64)
    assert [rm.ranks[r].gpu for r in (0, 8, 63)] == [
        "Small.racks[0].hosts[3].gpus[0]", "Small.racks[1].hosts[3].gpus[0]",
        "Small.racks[7].hosts[3].gpus[7]"]
    rm = _placed("Small.racks[*]", 256)
    assert rm.ranks[255].gpu == "Small.racks[7].hosts[3].gpus[7]"


def test_a_port_after_a_group_is_each_replicas_port():
    """Section 14's design (2 pods of 64 racks): port b of NIC 5 of host 2 of rack 3 of every
    pod is 2 NIC ports, as before (`nics[5]` is now a group of 2 replicas of one NIC)."""
    doc = (REPO / "docs" / "language.md").read_text()
    end = doc.index("scenario plane_b_down")
    text = doc[doc.rindex("```astral\n", 0, end) + len("```astral\n"):end]
    text += "scenario ports { fail S.pods[*].racks[3].hosts[2].nics[5].port[b] }\n"
    ws = astral_dsl.compiles(text, name="ports.astral")
    outcome = astral_dsl.check(ws, ["ports"]).scenarios[0]
    assert outcome.notes[:2] == (
        "S.pods[*].racks[3].hosts[2].nics[5].port[b] failed (2 NIC ports)",
        "2 NICs run on 1 of 2 ports (`S.pods[*].racks[3].hosts[2].nics[5].port[b]` failed)")
