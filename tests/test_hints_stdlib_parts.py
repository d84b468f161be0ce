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


def test_w606_says_the_article_of_the_family_as_it_is_said(monkeypatch):
    """W606's hint wrote "an {family}" whatever the family: right for InfiniBand and Ethernet,
    wrong for a family said with a consonant ("an Fibre Channel one")."""
    import astral_dsl.analyses.network_checks as nc

    monkeypatch.setattr(nc, "_FAMILY", {**nc._FAMILY, "fc": "Fibre Channel"})
    assert nc._stated_instead("FC32", "fc").endswith(
        "not of a Fibre Channel one like `FC32`")
    assert [nc._a(w) for w in ("Ethernet", "InfiniBand", "RoCE", "NVLink", "Fibre Channel")] == \
        ["an Ethernet", "an InfiniBand", "a RoCE", "an NVLink", "a Fibre Channel"]


# ---- W212: a stdlib part that a template takes as a parameter -----------------------------------
# W212's hint said "state `power` on switch `NVL72_Rest` (its data sheet value)": a stdlib part,
# which the user does not edit and no data sheet describes. The advice is to give the template's
# parameter a part of their own, named on the template the user asks for: a GB200_Tray's `nic`
# is NVL72's `nic` when NVL72's body hands it down.

def _w212(text: str):
    return {d.message: d.hint for d in astral_dsl.check(astral_dsl.compiles(text)).diagnostics
            if d.code == "W212"}


def test_w212_on_an_nvl72s_parts_names_nvl72s_parameters():
    hints = _w212("import stdlib.hardware { NVL72 }\nrack R = NVL72()\nsite S { racks = 1 x R }\n")
    assert hints == {
        "switch `NVL72_Rest` states no `power`: assumed 8.1 kW for rack `R`":
            "`NVL72_Rest` is the stdlib's, not yours to edit: give `NVL72`'s parameter `rest` a "
            "switch of your own that states it, `NVL72(rest = MyRest)` with `switch MyRest = "
            "NVL72_Rest { power = ... }`",
        "nic `CX7_400G_Mezz` states no `power`: assumed 25 W for host `GB200_Tray`":
            "`CX7_400G_Mezz` is the stdlib's, not yours to edit: give `NVL72`'s parameter `nic` "
            "a nic of your own that states it, `NVL72(nic = MyNic)` with `nic MyNic = "
            "CX7_400G_Mezz { power = ... }`",
        "nic `BlueField3` states no `power`: assumed 75 W for host `GB200_Tray`":
            "`BlueField3` is the stdlib's, not yours to edit: give `NVL72`'s parameter `dpu` a "
            "nic of your own that states it, `NVL72(dpu = MyDpu)` with `nic MyDpu = BlueField3 "
            "{ power = ... }`"}


def test_w212_on_a_tray_asked_for_directly_names_the_trays_parameter():
    hints = _w212("import stdlib.hardware { GB200_Tray }\nhost T = GB200_Tray()\n"
                  "rack R { hosts = 2 x T }\nsite S { racks = 1 x R }\n")
    assert hints["nic `CX7_400G_Mezz` states no `power`: assumed 25 W for host `T`"].endswith(
        "`GB200_Tray(nic = MyNic)` with `nic MyNic = CX7_400G_Mezz { power = ... }`")


def test_following_the_w212_hint_leaves_no_w212():
    assert _w212("import stdlib.hardware { NVL72, NVL72_Rest, BlueField3, CX7_400G_Mezz }\n"
                 "switch MyRest = NVL72_Rest { power = 8 kW }\n"
                 "nic MyDpu = BlueField3 { power = 75 W }\n"
                 "nic MyNic = CX7_400G_Mezz { power = 25 W }\n"
                 "rack R = NVL72(rest = MyRest, dpu = MyDpu, nic = MyNic)\n"
                 "site S { racks = 1 x R }\n") == {}


def test_w212_on_a_users_part_still_asks_for_its_data_sheet_value():
    hints = _w212("import stdlib.hardware { NVL72, NVL72_Rest }\n"
                  "switch MyRest = NVL72_Rest { }\nrack R = NVL72(rest = MyRest)\n"
                  "site S { racks = 1 x R }\n")
    assert hints["switch `MyRest` states no `power`: assumed 8.1 kW for rack `R`"] == \
        "state `power` on switch `MyRest` (its data sheet value)"
