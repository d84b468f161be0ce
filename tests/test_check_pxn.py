"""`astral check` under failures on hosts whose NVLink domain is their rack (`nvlink_domain =
rack`, the GB200 NVL72 example): a GPU whose own NIC lost every path sends through a neighbour's
NIC (PXN, analyses/nvlink_share.py), as the forecast prices it (tests/test_forecast_pairs_pxn.py):
a note that says what it shares, not E616/E617, unless its rack has no NIC with a path left.
8-GPU hosts (domain = host) keep E616.

The example's racks: 18 trays of 4 GPUs and 4 single-port 400G NICs (GPU g on NIC g), one leaf
per rail per rack, a spine; `Hall.fabric.rack[8]` is `Hall.sus[1].racks[0]`. A NIC carrying k
GPUs gives each 1 / k of its bandwidth (its own GPU's share: 1 / k of a healthy NIC)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import astral_dsl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_forecast_pairs_pxn import PP  # noqa: E402

GB = (REPO / "examples" / "gb200_nvl72.astral").read_text() + """
scenario port { fail Hall.sus[1].racks[0].hosts[10].nics[0].port[a] }
scenario tray { fail Hall.sus[1].racks[0].hosts[10].nics }
scenario trays17 { fail Hall.sus[1].racks[0].hosts[0..16].nics }
scenario whole_rack { fail Hall.sus[1].racks[0].hosts.nics }
scenario rack_and_port { fail Hall.sus[1].racks[0].hosts.nics
  fail Hall.sus[1].racks[1].hosts[3].nics[2].port[a] }
scenario leaf_up { fail Hall.fabric.rack[8].rail[0].leaf[0] -- Hall.fabric.spine }
scenario nic0_and_up { fail Hall.sus[1].racks[0].hosts.nics[0]
  fail Hall.fabric.rack[8].rail[1].leaf[0] -- Hall.fabric.spine
  fail Hall.fabric.rack[8].rail[2].leaf[0] -- Hall.fabric.spine
  fail Hall.fabric.rack[8].rail[3].leaf[0] -- Hall.fabric.spine }
"""
NAMES = ["port", "tray", "trays17", "whole_rack", "rack_and_port", "leaf_up", "nic0_and_up"]
VIA1 = ("it sends through the NIC of another GPU of its NVLink domain (NCCL's PXN, for a job "
        "that holds its rack), sharing it: the slowest GPU on a shared NIC gets")
VIAN = ("they send through the NICs of other GPUs of their NVLink domain (NCCL's PXN, for a job "
        "that holds their rack), sharing them: the slowest GPU on a shared NIC gets")


@pytest.fixture(scope="module")
def gb():
    ws = astral_dsl.compiles(GB, name="gb200_nvl72.astral", root=REPO / "examples")
    result = astral_dsl.check(ws, NAMES)
    broken = {d.message.split("`")[1]: d.notes for d in result.diagnostics if d.code == "W680"}
    return {o.name: o.notes for o in result.scenarios}, broken


def _pxn(notes):
    return [n for n in notes if "NCCL's PXN" in n]


@pytest.mark.parametrize("scenario, note", [
    # 1 GPU over 71 live NICs: one of them carries 2 GPUs, 1 / 2 = 50 %
    ("port", f"1 GPU loses every NIC port (`Hall.sus[1].racks[0].hosts[10].nics[0].port[a]` "
             f"failed): {VIA1} 50 % of its healthy bandwidth"),
    # 4 GPUs over 68 live NICs: 4 of them carry 2 GPUs, 50 %
    ("tray", f"4 GPUs lose every NIC port (`Hall.sus[1].racks[0].hosts[10].nics` failed): "
             f"{VIAN} 50 % of its healthy bandwidth"),
    # 68 GPUs over the 4 NICs of tray 17: 72 GPUs on 4 NICs, 18 each, 1 / 18 = 5.56 %
    ("trays17", f"68 GPUs lose every NIC port (`Hall.sus[1].racks[0].hosts[0..16].nics` "
                f"failed): {VIAN} 5.56 % of its healthy bandwidth"),
    # rail 0's leaf of rack 8 loses its spine links: the 18 GPUs 0 reach only the leaf on their
    # own NIC; into the spine they go over 54 NICs of rails 1 to 3: 18 of them carry 2, 50 %
    ("leaf_up", "18 GPUs lose every path into tier `spine` through their own NIC "
                "(`Hall.fabric.rack[8].rail[0].leaf[0] -- Hall.fabric.spine` failed): "
                f"{VIAN} 50 % of its healthy bandwidth"),
])
def test_a_gpu_with_a_live_nic_in_its_rack_shares_it(gb, scenario, note):
    """The scenario holds: no E616 (it said "cut off from the network" while the forecast
    routed the GPU through a neighbour's NIC)."""
    notes, broken = gb
    assert scenario not in broken, broken.get(scenario)
    assert _pxn(notes[scenario]) == [note]


def test_a_rack_with_no_nic_left_is_cut_off(gb):
    """Every NIC of rack 0 gone: E616 for its 72 GPUs (as the forecast's E775); a GPU of rack 1
    whose NIC failed too still shares a neighbour's (1 over 71 live NICs: 50 %)."""
    notes, broken = gb
    for scenario in ("whole_rack", "rack_and_port"):
        assert broken[scenario][0].startswith(
            "breaks: [E616] 72 GPUs lose every NIC port: cut off from the network "
            "(`Hall.sus[1].racks[0].hosts.nics` failed)")
        assert len([n for n in broken[scenario] if n.startswith("breaks:")]) == 1
    assert _pxn(notes["whole_rack"]) == []
    assert _pxn(notes["rack_and_port"]) == [
        f"1 GPU loses every NIC port (`Hall.sus[1].racks[1].hosts[3].nics[2].port[a]` failed): "
        f"{VIA1} 50 % of its healthy bandwidth"]


def test_a_rack_that_reaches_only_its_leaves_loses_the_spine(gb):
    """NIC 0 of rack 8's 18 trays fails and rails 1 to 3's leaves lose their spine links: GPUs 0
    reach the leaves through NICs 1 to 3 (18 GPUs over 54 NICs: 50 %), but no NIC of the rack
    reaches the spine: all 72 GPUs lose every path into it, E617 (18 per failed part)."""
    notes, broken = gb
    assert _pxn(notes["nic0_and_up"]) == [
        f"18 GPUs lose every NIC port (`Hall.sus[1].racks[0].hosts.nics[0]` failed): {VIAN} "
        f"50 % of its healthy bandwidth"]
    e617 = [n for n in broken["nic0_and_up"] if n.startswith("breaks: [E617] 18 GPUs lose "
                                                                "every path into tier `spine`")]
    assert len(e617) == 4
    assert not [n for n in broken["nic0_and_up"] if "[E616]" in n]


def test_the_rerouted_gpus_are_cut_off_by_the_uplinks_of_the_nics_they_use(gb):
    """nic0_and_up: GPUs 0 of rack 8 reach the leaves through NICs 1 to 3 (PXN); what cuts
    them off the spine is those NICs' leaves losing their spine links, not their own NIC 0
    (whose failure PXN got around: the note above). Their E617 named `...hosts.nics[0]`."""
    _, broken = gb
    up = [f"`Hall.fabric.rack[8].rail[{r}].leaf[0] -- Hall.fabric.spine`" for r in (1, 2, 3)]
    e617 = {n: broken["nic0_and_up"][i + 1] for i, n in enumerate(broken["nic0_and_up"])
            if n.startswith("breaks: [E617]")}
    rerouted = [n for n in e617 if ", ".join(up) in n]
    assert len(rerouted) == 1
    assert rerouted[0].startswith(f"breaks: [E617] 18 GPUs lose every path into tier `spine` "
                                  f"({', '.join(up)} failed)")
    assert e617[rerouted[0]] == (
        "[E617] NIC 0 of 18 hosts from `Hall.sus[1].racks[0].hosts[0]` (its own path lost: its "
        "GPUs send through the NICs of their NVLink domain, PXN)")
    assert not [n for n in e617 if "nics[0]` failed" in n]
    # NICs 1 to 3: each cut off by its own leaf's links
    for r, u in enumerate(up, 1):
        (own,) = [n for n in e617 if f"spine` ({u} failed)" in n]
        assert e617[own] == f"[E617] NIC {r} of 18 hosts from `Hall.sus[1].racks[0].hosts[0]`"


def test_an_8_gpu_host_keeps_e616():
    """HGX hosts (NVLink domain = host): a GPU whose NIC has no port is cut off, no PXN note."""
    ws = astral_dsl.compiles(PP, name="pp.astral", root=REPO)
    result = astral_dsl.check(ws, ["rack3_port"])
    (w680,) = [d for d in result.diagnostics if d.code == "W680"]
    assert w680.notes[0].startswith("breaks: [E616] 1 GPU loses every NIC port: cut off from "
                                    "the network (`S.racks[3].hosts[1].nics[0].port[a]` failed)")
    assert not _pxn(next(o.notes for o in result.scenarios if o.name == "rack3_port"))
