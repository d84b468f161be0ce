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
