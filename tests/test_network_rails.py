"""Rails and planes a fabric declares but no NIC port reaches (W610) hold no switch: the switch
names, the NetBox export, the pictures and the failures list none there, as the bill of
materials counts none."""
from __future__ import annotations

import re

import pytest

import astral_dsl
from test_network_groups import _parts

# 4 single-port NICs per host on a fabric of 8 rails: rails 4 to 7 hold no leaf. 32 hosts put
# 32 ports on each of rails 0 to 3: 1 leaf of 32 down each; 4 x 32 uplinks / 64 = 2 spines
UNUSED = _parts(nics=4).lstrip("\n") + """\
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = 8 x R, fabric = F }
scenario r6 { fail S.fabric.rail[6] }
scenario r6_leaf { fail S.fabric.rail[6].leaf[0] -- S.fabric.spine }
scenario r3 { fail S.fabric.rail[3] }
"""


@pytest.fixture(scope="module")
def unused():
    ws = astral_dsl.compiles(UNUSED, name="rails.astral")
    return ws, astral_dsl.check(ws, ["r6", "r6_leaf", "r3"])


def test_the_switches_listed_are_those_counted(unused):
    from astral_dsl.analyses import inventory
    from astral_dsl.outputs.render import render

    ws, checked = unused
    (fc,) = checked.engineering.fabrics
    assert [t.switches for t in fc.tiers] == [4, 2] and (fc.rails_used, fc.planes_used) == (4, 1)
    design = ws.design
    owners = inventory.owner_replicas(design, list(inventory.parts(design)))
    names = sorted(s.path for s in inventory.switches(design, owners))
    assert names == [f"S.fabric.rail[{r}].leaf[0]" for r in range(4)] + [
        "S.fabric.spine[0]", "S.fabric.spine[1]"]
    g = render(checked.design, "pod", None, checked=checked)
    assert sorted(set(re.findall(r">leaf · rail (\d)<", g.source))) == ["0", "1", "2", "3"]
    g = render(checked.design, "cluster", None, checked=checked)
    assert "8 rails x 1 plane" in g.source          # as declared, in the title


def test_a_failure_of_a_rail_no_nic_reaches_is_e219(unused):
    _, checked = unused
    errors = [d for d in checked.diagnostics if d.code == "E219"]
    assert [d.message for d in errors] == [
        "`S.fabric.rail[6]` names no switch: no NIC port reaches rail 6 (the hosts have 4 "
        "NICs: W610)",
        "`S.fabric.rail[6].leaf[0]` names no switch: no NIC port reaches rail 6 (the hosts have "
        "4 NICs: W610)"]
    assert all(d.hint == "name a rail from 0 to 3" and d.span is not None for d in errors)
    notes = {o.name: o.notes for o in checked.scenarios}
    assert not any(" off" in n for n in notes["r6"])            # it said 1 leaf off, 0.8 kW
    assert "1 `leaf` switch off: 0.8 kW less network power" in notes["r3"]


# ---- every output lists the switches of each rail's own count --------------------------------
# test_network_groups.UNEVEN: 6 NICs on 4 rails, 32 hosts in one rack, 50-port leaves: rails 0
# and 1 take 64 ports (2 leaves each), rails 2 and 3 32 (1 leaf each): 6 leaves; the spine
# 6 x 50 = 300 uplinks / 64 -> 5 (a mesh: 50 / 5 = 10 links from each leaf to each spine).
@pytest.fixture(scope="module")
def rails():
    from test_network_groups import UNEVEN

    text = UNEVEN + "scenario rail2_leaf1 { fail S.fabric.rack[0].rail[2].leaf[1] }\n"
    ws = astral_dsl.compiles(text, name="uneven.astral")
    return ws, astral_dsl.check(ws, ["rail2_leaf1"])


def test_each_rails_own_leaves_in_every_output(rails):
    from collections import Counter

    from astral_dsl.analyses import cabling, inventory
    from astral_dsl.analyses.fabric_names import TierKey
    from astral_dsl.diagnose import rank_map
    from astral_dsl.outputs.render import render

    ws, checked = rails
    (fc,) = checked.engineering.fabrics
    leaf, spine = fc.tiers
    assert (leaf.switches, spine.switches) == (6, 5)
    assert leaf.power_w == pytest.approx(6 * 750) and spine.power_w == pytest.approx(5 * 750)
    design = ws.design
    owners = inventory.owner_replicas(design, list(inventory.parts(design)))
    names = {s.path for s in inventory.switches(design, owners)}
    at = "S.fabric.rack[0].rail[{}].leaf[{}]".format
    assert names == {at(0, 0), at(0, 1), at(1, 0), at(1, 1), at(2, 0), at(3, 0)} | {
        f"S.fabric.rack[0].spine[{i}]" for i in range(5)}
    short: list = []
    links = list(cabling.tier_links(design, owners, None, short))
    assert short == [] and len(links) == 300
    assert Counter(x.lower for x in links) == {n: 50 for n in names if ".leaf[" in n}
    assert set(Counter(x.upper for x in links).values()) == {60}       # 6 leaves x 10
    rm = rank_map(design)
    key = TierKey("S.fabric", "leaf", ("rack", 0), 2)
    assert (rm.size_of(key), rm.size_of(TierKey("S.fabric", "leaf", ("rack", 0), 0))) == (1, 2)
    g = render(checked.design, "pod", None, checked=checked)
    assert sorted(re.findall(r">(\d) x Sw<", g.source)) == ["1", "1", "2", "2", "5"]
    g = render(checked.design, "rack", "S.racks[0].hosts[25]", checked=checked)
    assert "1 to 2 per rail in" in g.source and "#0 of 1" in g.source


def test_a_switch_only_a_busier_rail_has_is_e214(rails):
    _, checked = rails
    (err,) = [d for d in checked.diagnostics if d.code == "E214"]
    assert err.message == ("`S.fabric.rack[0].rail[2].leaf[1]`: switch 1 is out of range: the "
                           "`leaf` group has 1 switch (0 to 0); the largest has 2")


def test_e602_says_the_ratio_as_loaded_when_the_switches_have_spare_ports():
    """48 down and 16 up ports: 3:1 as built (E602 above 1:1); each rack's leaf takes 4 hosts x
    4 NICs = 16 ports: 16 / 48 x 3 = 1:1 as loaded, which the note says."""
    text = _parts(nics=4).lstrip("\n") + """\
fabric F {
  max_oversubscription = 1
  tier leaf { switch = Sw, scope = rack, down = 48 x 400 Gb/s, up = 16 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site S { racks = 4 x R, fabric = F }
"""
    (e602,) = [d for d in astral_dsl.check(astral_dsl.compiles(text, name="os.astral")).diagnostics
               if d.code == "E602"]
    assert e602.message == "tier `leaf` is oversubscribed 3:1, above the declared limit 1:1"
    assert e602.notes == ("the ratio of its ports, 48 down to 16 up: its switches use 16 down "
                          "ports on average, 1:1 as loaded",)
