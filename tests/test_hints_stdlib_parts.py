"""Hints that offer the stdlib's parts offer the right ones: W606 (a switch without `power`)
named none and said "or use a stdlib switch that has it" even for the stdlib's own Switch51T,
which has none; it names the stdlib's fabric switches that state their power, read from the
stdlib, and never the switch itself."""
from __future__ import annotations

import shutil
from pathlib import Path

import astral_dsl
from astral_dsl import resources
from astral_dsl.analyses.network_checks import stated_switches

REPO = Path(__file__).resolve().parents[1]

FABRIC = """\
import stdlib.hardware {{ CX7_400G }}
{imports}
host H {{ nics = 8 x CX7_400G, power = 10 kW }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 4 x R
  fabric f {{
    rails = 8
    tier leaf {{ switch = {switch}, per = rail, down = 64 x 400 Gb/s }}
  }}
}}
"""


def _w606(text: str):
    found = [d for d in astral_dsl.check(astral_dsl.compiles(text)).diagnostics
             if d.code == "W606"]
    assert len(found) == 1
    return found[0]


def test_the_stdlib_switches_that_state_their_power():
    # QM8700_HDR (253 W) and QM9700_NDR (747 W) state theirs; the Tomahawk classes Switch25T
    # and Switch51T do not, nor are NVLinkSwitchTray or NVL72_Rest fabric switches (no ports)
    assert stated_switches() == (("QM8700_HDR", "infiniband"), ("QM9700_NDR", "infiniband"))


def test_w606_on_the_stdlibs_ethernet_switch_does_not_offer_it_again():
    d = _w606(FABRIC.format(imports="import stdlib.hardware { Switch51T }", switch="Switch51T"))
    assert d.hint == ("declare `power` from the data sheet of `Switch51T`, e.g. `switch = "
                      "Switch51T(power = ...)`; the stdlib states the power of its InfiniBand "
                      "switches only (`QM8700_HDR`, `QM9700_NDR`), not of an Ethernet one like "
                      "`Switch51T`")


def test_w606_on_a_users_infiniband_switch_names_the_stdlibs():
    d = _w606(FABRIC.format(imports="switch IB { ports = 64, port_speed = 400 Gb/s, protocol = "
                                    "infiniband }", switch="IB"))
    assert d.hint.endswith(", or use a stdlib switch that states it: `QM8700_HDR`, "
                           "`QM9700_NDR`")


def test_the_list_is_read_from_the_stdlib(tmp_path, monkeypatch):
    """A stdlib Ethernet switch that states its power is offered for an Ethernet fabric, and
    not for itself."""
    lib = tmp_path / "stdlib"
    shutil.copytree(resources.stdlib_dir(), lib)
    with open(lib / "hardware.astral", "a", encoding="utf-8") as f:
        f.write("\nswitch Switch51T_Rated { ports = 128, port_speed = 400 Gb/s, power = 1.2 kW, "
                "protocol = ethernet }\n")
    monkeypatch.setattr(resources, "stdlib_dir", lambda: lib)
    found = stated_switches.__wrapped__()
    assert ("Switch51T_Rated", "ethernet") in found
    import astral_dsl.analyses.network_checks as nc

    monkeypatch.setattr(nc, "stated_switches", lambda: found)
    assert nc._stated_instead("Switch51T", "ethernet") == \
        ", or use a stdlib switch that states it: `Switch51T_Rated`"
    assert nc._stated_instead("Switch51T_Rated", "ethernet") == (
        "; the stdlib states the power of its InfiniBand switches only (`QM8700_HDR`, "
        "`QM9700_NDR`), not of an Ethernet one like `Switch51T_Rated`")
