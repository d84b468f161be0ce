"""What a scenario's fabric failures say (issue 44): an `agg -- core` link failure names the
failed links and the traffic it slows, with its arithmetic; the broken constraints' own notes
reach the scenario's E680/W680; a host whose ports straddle two first-tier switches is behind
only the one each port lands on."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_forecast_failures import DESIGN  # noqa: E402

# DESIGN: pods of 64 hosts (8 NICs of 2 ports), 8 rails x 2 planes; per pod, rail and plane 2
# ToRs (32 x 200G down, 16 x 400G up) under 4 aggs in a full mesh (8 x 400G down: each ToR puts
# 16 / 4 = 4 uplinks on each agg), 1:1 everywhere (max_oversubscription = 1)
LINKS = """
scenario agg_core { fail S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.core }
scenario agg1 { fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
scenario plane_and_rail { fail S.fabric.plane[A]
  fail S.fabric.rail[0] }
scenario group_and_switch { fail S.fabric.pod[1].rail[0].plane[A].agg
  fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
scenario twice { fail S.fabric.pod[1].rail[0].plane[A].agg[1]
  fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
scenario both_ways { fail S.fabric.pod[1].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg[1]
  fail S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.pod[1].rail[0].plane[A].tor[0] }
scenario link_in_agg { fail S.fabric.pod[1].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg[1]
  fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
scenario mixed { fail S.fabric.pod[1].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg[1]
  fail S.fabric.pod[1].rail[0].plane[A].agg[2] -- S.fabric.core }
scenario link_in_tor { fail S.fabric.pod[1].rail[0].plane[A].tor[0] -- S.fabric.pod[1].rail[0].plane[A].agg[1]
  fail S.fabric.pod[1].rail[0].plane[A].tor[0] }
scenario share_core { fail 25 % of S.fabric.core }
scenario share_agg { fail 25 % of S.fabric.agg }
scenario share_and_agg1 { fail 25 % of S.fabric.agg
  fail S.fabric.pod[1].rail[0].plane[A].agg[1] }
"""
SHARES = ["core5", "share_core", "share_agg", "share_and_agg1"]     # core5: DESIGN's
OVERLAPS = ["plane_and_rail", "group_and_switch", "twice", "both_ways", "link_in_agg",
            "link_in_tor"]


@pytest.fixture(scope="module")
def checked():
    ws = astral_dsl.compiles(DESIGN + LINKS, name="t.astral", root=REPO)
    result = astral_dsl.check(ws, ["agg_core", "agg1", "mixed"] + OVERLAPS + SHARES)
    return {d.message.split("`")[1]: d for d in result.diagnostics if d.code == "W680"}, \
        {o.name: o.notes for o in result.scenarios}


def test_an_agg_core_link_failure_names_the_links_and_the_traffic(checked):
    """agg[1] loses its links to the core: the 2 ToRs below it route their core-bound traffic
    over their other 12 uplinks (4 of their 16 went to agg[1]: 25 % lost for that traffic), so
    it runs 1:1 / (1 - 25 %) = 1.3333:1; their traffic that turns at `agg` keeps every link."""
    notes = checked[0]["agg_core"].notes
    assert notes[0].startswith(
        "breaks: [E602] `S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.core` failed: "
        "the traffic into `core` of the hosts behind the `tor` switches below it runs "
        "1.3333:1, above the declared limit 1:1")
    assert [(r.message, r.span.file) for r in checked[0]["agg_core"].related] == [
        ("[E602] breaks here", "t.astral")]
    assert "tier `tor` runs" not in notes[0]
    assert notes[1] == (
        "[E602] each of those `tor` switches routes its traffic into `core` around the failed "
        "links, over the uplinks to the other `agg` switches: it loses 25 % of its uplinks for "
        "that traffic, so its 1:1 / (1 - 25 %) = 1.3333:1; the traffic that turns at `agg` "
        "keeps every link")


def test_the_slowed_traffic_is_named_by_the_lowest_tier_it_climbs_into(checked):
    """A NIC's note names the lowest tier whose traffic a failure slows (it said the top tier,
    `core`, for a lost `tor -- agg` link, which slows the traffic into `agg` already). Each ToR
    puts 4 of its 16 uplinks on each agg:
    - agg_core: agg[1]'s core links: only the traffic into `core` of its 2 ToRs (64 NICs) is
      routed around agg[1]: 12 of 16 uplinks, 75 %; their traffic into `agg` keeps every link;
    - agg1: agg[1] off: the 64 NICs' traffic into `agg` runs on 12 of 16 uplinks, 75 %, and so
      does their traffic on into `core` ("and above");
    - mixed: `tor[0] -- agg[1]` and agg[2]'s core links: tor[0]'s 32 NICs run at 12/16 = 75 %
      into `agg` and, routed around agg[2] too, 8/16 = 50 % into `core`; tor[1]'s 32 NICs lose
      only agg[2]'s 4 links for core traffic: 75 % into `core`."""
    link, up = f"`{TOR0} -- {AGG1}`", "`S.fabric.pod[1].rail[0].plane[A].agg[2] -- S.fabric.core`"
    slowed = {name: [n for n in notes if "of their bandwidth" in n]
              for name, notes in checked[1].items()}
    assert slowed["agg_core"] == [
        "64 NICs run at 75 % of their bandwidth for traffic into tier `core` "
        "(`S.fabric.pod[1].rail[0].plane[A].agg[1] -- S.fabric.core` failed)"]
    assert slowed["agg1"] == [f"64 NICs run at 75 % of their bandwidth for traffic into tier "
                              f"`agg` and above (`{AGG1}` failed)"]
    assert sorted(slowed["mixed"]) == sorted([
        f"32 NICs run at 75 % of their bandwidth for traffic into tier `agg` ({link} failed)",
        f"32 NICs run at 50 % of their bandwidth for traffic into tier `core` ({link}, {up} "
        f"failed)",
        f"32 NICs run at 75 % of their bandwidth for traffic into tier `core` ({up} failed)"])


def test_a_failed_agg_switch_oversubscribes_the_tors_into_agg(checked):
    """agg[1] itself fails: every path through it is gone, the ToRs' traffic into `agg` runs
    on 12 of 16 uplinks: 1:1 / (1 - 25 %) = 1.3333:1, the arithmetic in the W680's notes."""
    notes = checked[0]["agg1"].notes
    assert notes[0].startswith(
        "breaks: [E602] tier `tor` runs 1.3333:1 into `agg` for the traffic of the hosts behind "
        "the switches that lost 25 % of their uplinks "
        "(`S.fabric.pod[1].rail[0].plane[A].agg[1]` failed), above the declared limit 1:1")
    assert notes[1] == ("[E602] each of those `tor` switches loses 25 % of its uplinks into "
                        "`agg`, so its 1:1 / (1 - 25 %) = 1.3333:1")


def test_a_failed_share_of_a_tier_slows_the_nics_as_named_switches_do(checked):
    """A share of a tier says what the switches that take the same share say. 2 pods x 64
    hosts x 8 NICs = 1,024 NICs:
    - core5: 1 of the 16 cores; agg l of every group reaches cores 4l..4l+3 (2 links each), so
      agg 1 of every group loses 2 of its 8 core uplinks, 25 %: every ToR reaches agg 1, so all
      1,024 NICs' traffic into `core` runs at 1 / (1:1 / (1 - 25 %)) = 75 %;
    - 25 % of the cores: every agg loses 25 % of its core uplinks: the same 1,024 NICs at 75 %
      into `core` (the note was missing: only E602 said it);
    - 25 % of the aggs: every ToR loses 25 % of its 16 uplinks: 1,024 NICs at 75 % into `agg`,
      and no faster on into `core` ("and above"), as agg1 says for its 64 NICs."""
    slowed = {name: [n for n in notes if "of their bandwidth" in n]
              for name, notes in checked[1].items()}
    assert slowed["core5"] == ["1,024 NICs run at 75 % of their bandwidth for traffic into tier "
                               "`core` (`S.fabric.core[5]` failed)"]
    assert slowed["share_core"] == ["1,024 NICs run at 75 % of their bandwidth for traffic into "
                                    "tier `core` (`25 % of S.fabric.core` failed)"]
    assert slowed["share_agg"] == ["1,024 NICs run at 75 % of their bandwidth for traffic into "
                                   "tier `agg` and above (`25 % of S.fabric.agg` failed)"]
    # the share's own E602 (the tier as declared, the failure in a note), once
    for name, below, into in (("share_core", "agg", "core"), ("share_agg", "tor", "agg")):
        notes = checked[0][name].notes
        assert [n for n in notes if n.startswith("breaks:")] == [
            f"breaks: [E602] tier `{below}` runs 1.3333:1 into `{into}` (`25 % of "
            f"S.fabric.{into}` failed), above the declared limit 1:1"]
        assert [(r.message, r.span.file, r.span.start.line)
                for r in checked[0][name].related] == [
            ("[E602] breaks here", "t.astral", 8 if below == "tor" else 10)]


def test_a_share_and_a_named_switch_add_up_on_the_switches_below_both(checked):
    """25 % of the aggs and agg[1] of (pod 1, rail 0, plane A): that group's 2 ToRs lose 25 %
    of their uplinks to the share and 4 of 16 more to agg[1]: 50 %, 1:1 / (1 - 50 %) = 2:1, so
    their 64 NICs run at 50 %; the other 960 NICs at the share's 75 %. (The share was taken as
    the declared oversubscription: agg[1] then took 25 % of what was left, 1.7778:1.)"""
    agg1 = "`S.fabric.pod[1].rail[0].plane[A].agg[1]`"
    notes = checked[1]["share_and_agg1"]
    assert sorted(n for n in notes if "of their bandwidth" in n) == sorted([
        "960 NICs run at 75 % of their bandwidth for traffic into tier `agg` and above "
        "(`25 % of S.fabric.agg` failed)",
        f"64 NICs run at 50 % of their bandwidth for traffic into tier `agg` and above "
        f"(`25 % of S.fabric.agg`, {agg1} failed)"])
    broken = [n for n in checked[0]["share_and_agg1"].notes if n.startswith("breaks:")]
    assert len(broken) == 2
    assert broken[0].startswith("breaks: [E602] tier `tor` runs 1.3333:1 into `agg` (`25 % of "
                                "S.fabric.agg` failed)")
    assert broken[1].startswith(
        f"breaks: [E602] tier `tor` runs 2:1 into `agg` for the traffic of the hosts behind the "
        f"switches that lost 50 % of their uplinks (`25 % of S.fabric.agg`, {agg1} failed)")


@pytest.mark.parametrize("scenario, expected", [
    # plane A: 2 pods x 8 rails = 16 groups of 2 ToRs and 4 aggs: 32 ToRs, 64 aggs; rail 0
    # adds its plane-B groups only, 2 pods: 4 ToRs and 8 aggs (it was counted with plane A's
    # again: 40 and 80)
    ("plane_and_rail", ["36 `tor` switches off: 36.0 kW less network power",
                        "72 `agg` switches off: 72.0 kW less network power"]),
    # agg[1] is one of the 4 aggs of the group already off: 4, not 5
    ("group_and_switch", ["4 `agg` switches off: 4.0 kW less network power"]),
    # a switch named twice fails once: 1 switch, 25 % of the ToRs' uplinks (not 2 and 50 %)
    ("twice", ["1 `agg` switch off: 1.0 kW less network power",
               "64 NICs run at 75 % of their bandwidth for traffic into tier `agg` and above "
               "(`S.fabric.pod[1].rail[0].plane[A].agg[1]` failed)"]),
])
def test_a_switch_named_by_two_targets_is_off_once(checked, scenario, expected):
    """Switches of 1 kW: the power off is the switches off x 1 kW."""
    notes = checked[1][scenario]
    for line in expected:
        assert line in notes, notes


TOR0 = "S.fabric.pod[1].rail[0].plane[A].tor[0]"
AGG1 = "S.fabric.pod[1].rail[0].plane[A].agg[1]"


@pytest.mark.parametrize("scenario, ratio, slowed", [
    # `tor[0] -- agg[1]` written both ways is one link: tor[0] puts 4 of its 16 uplinks on agg[1],
    # 25 % lost (1:1 / (1 - 25 %) = 1.3333:1, 75 % of the bandwidth of its 32 NICs), not 50 %
    ("both_ways", "1.3333", f"32 NICs run at 75 % of their bandwidth for traffic into tier "
                            f"`agg` and above (`{TOR0} -- {AGG1}` failed)"),
    # the link is one of agg[1]'s, which is off: its 2 ToRs lose 25 % (64 NICs at 75 %), tor[0]
    # not 25 % more (it was 2:1 and 32 NICs at 50 %); the link named first changes nothing
    ("link_in_agg", "1.3333", f"64 NICs run at 75 % of their bandwidth for traffic into tier "
                              f"`agg` and above (`{AGG1}` failed)"),
    # the link is one of tor[0]'s, which is off: its 32 hosts run NIC 0 on port b, no uplink of
    # it is oversubscribed (no E602)
    ("link_in_tor", None, f"32 NICs run on 1 of 2 ports (`{TOR0}` failed)"),
])
def test_a_link_counts_once(checked, scenario, ratio, slowed):
    notes = checked[1][scenario]
    assert slowed in notes, notes
    assert not [n for n in notes if "% of their bandwidth" in n and n != slowed], notes
    w680 = checked[0].get(scenario)
    broken = [n for n in (w680.notes if w680 else ()) if n.startswith("breaks: [E602]")]
    if ratio is None:
        assert not broken
    else:
        assert len(broken) == 1 and f"tier `tor` runs {ratio}:1 into `agg`" in broken[0], \
            broken


# ---- a host whose ports straddle two ToRs -----------------------------------------------------
# 1 rail, 1 plane; hosts of 2 GPUs and 2 one-port NICs (GPU i on NIC i), 6 per rack, 2 racks; a
# ToR per rack takes 3 ports, so rack r's hosts put ports 0-11 on ToRs 0-3: ToR 0 holds host 0's
# NICs 0 and 1 and host 1's NIC 0, host 1's NIC 1 is on ToR 1. 8 ToRs of 3 uplinks under 12 aggs
# of 3 downlinks in planes (formulas.even_upper_switches: P = 3, agg k reaches ToR k // 3 of each
# rack with 1 link).
STRADDLE = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 100 Gb/s }
switch Sw { ports = 8, port_speed = 100 Gb/s, power = 500 W }
host H { gpus = 2 x G, nics = 2 x N }
rack R { hosts = 6 x H }
fabric F {
  rails = 1, planes = 1, max_oversubscription = 1
  tier tor { switch = Sw, scope = rack, down = 3 x 100 Gb/s, up = 3 x 100 Gb/s }
  tier agg { switch = Sw, scope = pod, down = 3 x 100 Gb/s }
}
pod P { racks = 2 x R, fabric = F }
site S { pods = 1 x P }
scenario agg0 { fail S.pods[0].fabric.agg[0] }
scenario tor0_up { fail S.pods[0].fabric.rack[0].tor[0] -- S.pods[0].fabric.agg }
"""


@pytest.fixture(scope="module")
def straddle():
    ws = astral_dsl.compiles(STRADDLE, name="t.astral", root=REPO)
    result = astral_dsl.check(ws, ["agg0", "tor0_up"])
    return {o.name: o for o in result.scenarios}, \
        {d.message.split("`")[1]: d for d in result.diagnostics if d.code == "W680"}


def test_a_failed_agg_slows_only_the_ports_on_its_tors(straddle):
    """agg 0 reaches ToR 0 of each rack: 3 ports there per rack, 2 racks: 6 NICs lose 1 of 3
    uplinks (1:1 / (1 - 1/3) = 1.5:1, 66.67 % of their bandwidth); host 1's NIC 1, on ToR 1,
    keeps all of its uplinks (it was counted: 8 NICs)."""
    outcomes, w680 = straddle
    assert "6 NICs run at 66.67 % of their bandwidth for traffic into tier `agg` " \
           "(`S.pods[0].fabric.agg[0]` failed)" in outcomes["agg0"].notes
    assert "tier `tor` runs 1.5:1 into `agg`" in w680["agg0"].notes[0]


def test_a_tor_that_loses_its_uplinks_cuts_only_its_ports(straddle):
    """ToR 0 of rack 0 loses every uplink: the GPUs on its 3 ports (host 0's GPUs 0 and 1,
    host 1's GPU 0) reach only one another; host 1's GPU 1 is on ToR 1 (it was counted: 4)."""
    _, w680 = straddle
    notes = w680["tor0_up"].notes
    assert notes[0].startswith("breaks: [E617] 3 GPUs lose every path into tier `agg`")
    assert notes[1:] == ("[E617] NIC 0 of 2 hosts from `S.pods[0].racks[0].hosts[0]`",
                         "[E617] NIC 1 of 1 host from `S.pods[0].racks[0].hosts[0]`")


# ---- NVLink domains: the job's hosts are the design's trays -----------------------------------
# (a failure on any tray of an NVL72 job counts, the job's GPUs behind it counted tray by tray:
# tests/test_forecast_pairs_pxn.py, where those GPUs now send through a neighbour's NIC)


def test_e775_names_the_ranks_cut_off():
    """DESIGN's both_tor1: ToR 1 of rail 0 fails on both planes in pod 0: NIC 0 (GPU 0) of the
    32 hosts on it, pod 0's hosts 32 to 63, has no port left. site_dp's ranks run host by host
    from S.pods[0] (8 GPUs each): GPU 0 of host h is rank 8 h, ranks 256, 264, ..., 504."""
    ws = astral_dsl.compiles(DESIGN, name="t.astral", root=REPO)
    with pytest.raises(seer.ForecastError) as exc:
        astral_dsl.forecast(ws, job="site_dp", scenario="both_tor1")
    (d,) = [d for d in exc.value.diagnostics if d.is_error]
    assert d.code == "E775"
    assert d.notes == ("cut off: ranks 256, 264, 272, ..., 504 (NIC 0 of 32 hosts from "
                       "`S.pods[0].racks[8].hosts[0]`)",)


def test_a_template_path_names_the_template_not_the_shared_instance():
    """STRADDLE with 2 pods sharing P: `P.fabric.agg[0]` is agg 0 of both pods' fabrics (section
    14: a path from a template means the instance it shares), so 2 aggs of 500 W are off and 6
    NICs per pod slow down (test above): 12. The notes said `S.pods[0].fabric.agg[0]`, the
    shared instance's own path, as if pod 0 alone had lost it. A share: 12 aggs per pod (the
    test above), 25 % of each pod's, 3 x 2 = 6 off."""
    text = STRADDLE.replace("pods = 1 x P", "pods = 2 x P") + (
        "scenario tmpl { fail P.fabric.agg[0] }\n"
        "scenario tmpl_share { fail 25 % of P.fabric.agg }\n")
    ws = astral_dsl.compiles(text, name="t.astral", root=REPO)
    notes = {o.name: o.notes for o in astral_dsl.check(ws, ["tmpl", "tmpl_share"]).scenarios}
    assert notes["tmpl"][0] == "P.fabric.agg[0] failed"
    assert "12 NICs run at 66.67 % of their bandwidth for traffic into tier `agg` " \
           "(`P.fabric.agg[0]` failed)" in notes["tmpl"]
    assert "2 `agg` switches off: 1.0 kW less network power" in notes["tmpl"]
    assert notes["tmpl_share"][0] == "25 % of P.fabric.agg failed"      # as the language writes it
    assert "6 `agg` switches off: 3.0 kW less network power" in notes["tmpl_share"]
    assert not [n for n in notes["tmpl"] + notes["tmpl_share"] if "S.pods[0]" in n]
