"""The fabric an engineer would sign: switch counts that give every lower switch even uplinks,
the bill of materials by link medium, switch power that no GPU utilisation scales, and a
diagnostic (never a silent zero) wherever a design leaves network data out.

Every expected number is computed by hand in a comment, from the rules in
astral_dsl/analyses/network.py and network_links.py and the sources cited there:
- even uplinks: a lower switch reaching S upper switches with the same number of links needs
  S | uplinks; fat-tree planes (Al-Fares et al., SIGCOMM 2008); some rows of NVIDIA's published
  DGX SuperPOD reference architectures round spine counts up;
- media: IEEE 802.3ck (400GBASE-CR4, 2 m), 802.3db (400GBASE-SR4, 100 m OM4), 802.3bs
  (400GBASE-DR4, 500 m); twin-port OSFP modules carry two links, breakouts count once;
- power: a switch draws its rating whatever the job (switch silicon, fans and optics do not
  follow GPU load), so only the hosts scale with `utilization`."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses import formulas
from astral_dsl.analyses.engineering import analyse
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ASTRAL = EXAMPLES / "astral.astral"
DGX = EXAMPLES / "dgx_superpod.astral"
SINGLE_POD = EXAMPLES / "single_pod.astral"


def _cli(args) -> subprocess.CompletedProcess:
    return _astral_cli(*args, cwd=REPO, text=False)


def _check(text: str, name: str = "fabric.astral", root=None):
    ws = astral_dsl.compiles(text, name=name, root=root)
    design = ws.design
    assert design.valid, [(d.code, d.message) for d in design.diagnostics]
    return astral_dsl.check(ws)


def _codes(checked):
    return [d.code for d in checked.diagnostics]


def _network(checked):
    """The network's diagnostics (E600-E619, W600-W619); power and cooling have their own."""
    return [(d.code, d.message) for d in checked.diagnostics if d.code[1:3] in ("60", "61")]


def _only(checked, code):
    found = [d for d in checked.diagnostics if d.code == code]
    assert len(found) == 1, [(d.code, d.message) for d in checked.diagnostics]
    return found[0]


def _tiers(checked):
    (fabric,) = checked.engineering.fabrics
    return {t.name: t for t in fabric.tiers}


def _links(checked):
    (fabric,) = checked.engineering.fabrics
    return {layer.tier: layer for layer in fabric.links}


# A small block of parts most tests share: 400G single-port NICs, a 64-port 400G switch on 32
# twin-port OSFP cages (a QM9700-like box) with a declared power, 4 hosts of 8 GPUs per rack.
PARTS = """
import stdlib.network { DAC_400G_CR4, SR4_400G, DR4_400G }
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch Sw { ports = 64, port_speed = 400 Gb/s, cages = 32, form_factor = osfp, power = 750 W }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x H }
medium Twin = SR4_400G(form_factor = osfp, ports = 2, lower_ports = 2, power = 15 W)
"""


# =================================================================================================
# The even-uplink rule (formulas)
# =================================================================================================
def test_smallest_divisor_at_least():
    # divisors of 72: 1 2 3 4 6 8 9 12 18 24 36 72 -> the first >= 16 is 18
    assert formulas.smallest_divisor_at_least(72, 16) == 18
    # divisors of 32: 1 2 4 8 16 32 -> the first >= 12 is 16
    assert formulas.smallest_divisor_at_least(32, 12) == 16
    assert formulas.smallest_divisor_at_least(64, 64) == 64
    assert formulas.smallest_divisor_at_least(7, 3) == 7          # a prime: only itself
    assert formulas.smallest_divisor_at_least(32, 0) == 1
    with pytest.raises(ValueError):
        formulas.smallest_divisor_at_least(0, 1)


@pytest.mark.parametrize("args, expected", [
    # DGX SuperPOD B200, 4 SUs (NVIDIA's reference architecture): 32 leaves (L = 1 per rail group,
    # m = 32 groups), u = 32 uplinks, d = 64: needed = 32 x 32 / 64 = 16; 16 | 32 -> 16 spines,
    # 2 links from every leaf to every spine.
    ((16, 1, 32, 32, 64), (16, 16)),
    # 2 SUs: 16 x 32 / 64 = 8; 8 | 32 -> 8 (the golden vector).
    ((8, 1, 32, 16, 64), (8, 8)),
    # 3 SUs: 24 x 32 / 64 = 12; 12 does not divide 32 (2.67 links per spine): 16.
    ((12, 1, 32, 24, 64), (16, 16)),
    # A 144-port class leaf with 72 uplinks under 16 spines (32 leaves, d = 144): 72 / 16 = 4.5
    # links per spine; 18 spines take 4 each (and use 32 x 4 = 128 of their 144 ports).
    ((16, 1, 72, 32, 144), (18, 18)),
    # Astral core (k = 128): 64 aggs per (rail, plane) group, 128 groups, u = 64, d = 128.
    # 64 x 128 > 128, so planes: P >= 128 x 64 / 128 = 64, 64 | 64; S = 64 x 64 = 4,096.
    ((4096, 64, 64, 128, 128), (4096, 64)),
    # Planes that round: 8 aggs per group, 16 groups, u = 32, d = 48: needed = ceil(16 x 8 x
    # 32 / 48) = 86; P >= ceil(16 x 32 / 48) = 11 -> 16 (divisors of 32: 8, 16); S = 8 x 16 = 128.
    ((86, 8, 32, 16, 48), (128, 16)),
    # m = 1 (agg over the ToRs of its own group): 64 ToRs x 64 up / 64 down = 64; 64 | 64.
    ((64, 64, 64, 1, 64), (64, 64)),
    # the radix cannot reach (E604): left as needed
    ((200, 1, 32, 400, 64), (200, None)),
    ((3, 100, 2, 1, 64), (3, None)),
    # nothing to spread
    ((0, 1, 32, 4, 64), (0, None)),
    # lower groups of different sizes (network_groups): one of 16 spines and 7 of 2 (30 in
    # all) under 64-port cores, u = 32: 16 x 8 = 128 > 64 would be planes, but a core can take
    # a link from each of the 30: a mesh, 30 x 32 / 64 = 15 -> 16 | 32
    ((15, 16, 32, 8, 64, 30), (16, 16)),
    # ... and of 70 in all (> 64): planes of P >= ceil(8 x 32 / 64) = 4, S = 16 x 4 = 64
    ((35, 16, 32, 8, 64, 70), (64, 4)),
])
def test_even_upper_switches(args, expected):
    assert formulas.even_upper_switches(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((64, 8, 2), 32),       # 8 links per switch, twin-port: 4 modules each
    ((128, 1, 4), 32),      # 128 x 200G on one switch, 4 per 800G breakout module
    ((10, 3, 4), 3),        # 4 + 3 + 3 links: 1 + 1 + 1 modules
    ((10, 3, 2), 6),        # 4 + 3 + 3 links at 2 per module: 2 + 2 + 2
    ((0, 5, 2), 0),
    ((7, 0, 2), 0),
])
def test_modules_for(args, expected):
    assert formulas.modules_for(*args) == expected


# =================================================================================================
# Switch counts rounded for even uplinks, in designs and in the size report
# =================================================================================================
B300_CLASS = """
gpu G { power = 1 kW }
nic N { ports = 1, port_speed = 800 Gb/s }
switch X { ports = 144, port_speed = 800 Gb/s, power = 1 kW }   // a 144-port 800G class switch
host H { gpus = 8 x G, nics = 8 x N, power = 14 kW }
rack R { hosts = 8 x H }
block SU { racks = 9 x R }                                      // 72 hosts per scalable unit
fabric F {
  rails = 8
  tier leaf { switch = X, scope = block, per = [rail], down = 72 x 800 Gb/s, up = 72 x 800 Gb/s }
  tier spine { switch = X, scope = site, down = 144 x 800 Gb/s }
}
site S { sus = 4 x SU, fabric = F }
"""


def test_spines_round_up_to_divide_the_leaf_uplinks():
    # 4 SUs x 8 rails = 32 leaves of 72 ports (one per host of the SU on that rail);
    # leaf-spine links = 32 x 72 = 2,304; 2,304 / 144 = 16 spines would give each leaf 4.5
    # links per spine: 18 spines, 4 links from each leaf, 128 of 144 downlinks used each.
    checked = _check(B300_CLASS)
    t = _tiers(checked)
    assert t["leaf"].switches == 32
    assert t["spine"].needed == 16
    assert t["spine"].per_group == t["spine"].switches == 18
    assert t["spine"].down_links == 2304
    assert t["spine"].down_used == pytest.approx(128.0)
    assert "72 / 16 = 4.5" in t["spine"].rounding and "18" in t["spine"].rounding
    assert not [d for d in checked.diagnostics if d.is_error]


def test_the_rounding_reason_is_in_the_size_report(tmp_path):
    path = tmp_path / "b300.astral"
    path.write_text(B300_CLASS, encoding="utf-8")
    human = _cli(["size", str(path), "--color", "never"])
    assert human.returncode == 0, human.stderr.decode()
    out = human.stdout.decode()
    assert "spine: 18 switches per group, not 16" in out
    doc = json.loads(_cli(["size", str(path), "--format", "json"]).stdout)
    (row,) = [r for r in doc["summary"]["network_bom"]
              if r["item"] == "switch" and r["tier"] == "spine"]
    assert (row["count"], row["per_group"], row["needed_per_group"]) == (18, 18, 16)
    assert "uplinks unevenly" in row["rounded"]


def test_core_planes_round_up():
    # examples/single_pod.astral with 48 core downlinks: 16 (rail, plane) groups of 8 aggs with
    # 32 uplinks each = 4,096 links; 4,096 / 48 = 86 cores would leave uneven uplinks. 8 x 16 >
    # 48, so planes: each agg spreads its 32 uplinks over a plane of P >= 16 x 32 / 48 = 10.7 ->
    # 16 cores (2 links each); 8 planes x 16 = 128 cores, each with 16 x 2 = 32 of 48 used.
    text = SINGLE_POD.read_text(encoding="utf-8").replace(
        "scope = pod, down = 64 x 400 Gb/s", "scope = pod, down = 48 x 400 Gb/s")
    checked = _check(text, name=str(SINGLE_POD), root=EXAMPLES)
    core = _tiers(checked)["core"]
    assert (core.needed, core.per_group, core.switches) == (86, 128, 128)
    assert core.down_used == pytest.approx(32.0)
    assert "plane of 16" in core.rounding


def test_golden_vectors_need_no_rounding():
    for sus, spines in (("2", 8), ("4", 16), ("8", 32)):
        eng = analyse(astral_dsl.load(DGX, overrides={"scalable_units": sus}))
        spine = {t.name: t for t in eng.fabrics[0].tiers}["spine"]
        assert spine.switches == spine.needed == spines and spine.rounding is None


def test_three_sus_round_spines_up():
    # 3 SUs: 24 leaves x 32 uplinks = 768 links / 64 = 12 spines; 12 does not divide 32, so 16
    # spines with 2 links from each leaf (48 of 64 spine ports used).
    eng = analyse(astral_dsl.load(DGX, overrides={"scalable_units": "3"}))
    spine = {t.name: t for t in eng.fabrics[0].tiers}["spine"]
    assert (spine.needed, spine.switches) == (12, 16)
    assert spine.down_used == pytest.approx(48.0)


# =================================================================================================
# Bill of materials by link medium
# =================================================================================================
def _two_tier(tor_medium: str, length: str, racks: int = 8) -> str:
    # a ToR per rack (32 NIC ports down, 32 up), spines over a row of `racks` racks
    return PARTS + f"""
fabric F {{
  tier tor {{
    switch = Sw, scope = rack, down = 32 x 400 Gb/s, up = 32 x 400 Gb/s
    medium = {tor_medium}, length = {length}
  }}
  tier spine {{ switch = Sw, scope = row, down = 64 x 400 Gb/s, medium = Twin, length = 40 m }}
}}
row Row {{
  racks = {racks} x R
  fabric = F
  air netroom {{ supply = 27 degC, rise = 12 K, network = true }}
}}
site S {{ rows = 1 x Row }}
"""


DAC_THEN_OPTICS = "[DAC_400G_CR4(form_factor = osfp, ports = 2), Twin]"


def test_copper_within_its_reach_needs_no_transceivers():
    # 2 m <= the DAC's 2 m (IEEE 802.3ck 400GBASE-CR4): copper. 8 ToRs x 32 host links = 256
    # links; splitter DACs with one twin-port connector at the ToR: 256 / 2 = 128 cables,
    # 16 connectors per ToR, no transceivers, 0 W.
    checked = _check(_two_tier(DAC_THEN_OPTICS, "2 m"))
    tor = _links(checked)["tor"]
    assert (tor.medium_type, tor.links, tor.cables, tor.transceivers) == ("dac", 256, 128, 0)
    assert tor.upper_modules == 128
    assert _network(checked) == []


def test_beyond_copper_reach_the_next_medium_is_optics():
    # 3 m > 2 m: the DAC does not reach, so the twin-port optics: 128 modules at the ToRs
    # (16 each) and 256 / 2 = 128 at the hosts (8 ports per host / 2 = 4 per host x 32 hosts).
    checked = _check(_two_tier(DAC_THEN_OPTICS, "3 m"))
    tor = _links(checked)["tor"]
    assert (tor.medium_type, tor.links, tor.cables) == ("optics", 256, 256)
    assert (tor.upper_modules, tor.lower_modules, tor.transceivers) == (128, 128, 256)


def test_twin_port_optics_carry_two_links_per_module_and_power_the_switches():
    # ToR-spine: 8 ToRs x 32 up = 256 links over 4 spines (256 / 64; 4 | 32). Twin-port at both
    # ends: 4 spines x 64 / 2 = 128 modules at the spines, 8 x 32 / 2 = 128 at the ToRs.
    # Power: a ToR = 750 W + 16 twin-port modules of its uplinks x 15 W (the DAC below draws
    # nothing) = 990 W; a spine = 750 + 32 x 15 = 1,230 W; network = 8 x 990 + 4 x 1,230 =
    # 12,840 W.
    checked = _check(_two_tier(DAC_THEN_OPTICS, "2 m"))
    spine = _links(checked)["spine"]
    assert (spine.links, spine.upper_modules, spine.lower_modules) == (256, 128, 128)
    t = _tiers(checked)
    assert t["tor"].power_w == pytest.approx(8 * 990.0)
    assert t["spine"].power_w == pytest.approx(4 * 1230.0)
    assert checked.engineering.network_w == pytest.approx(12_840.0)


def test_breakouts_count_once():
    # The reference ToR: 128 x 200G downlinks on 800G OSFP modules broken out to 4 x 200G:
    # 32 modules per ToR, 8,192 ToRs -> 262,144 at the ToRs; one QSFP112 module per NIC port at
    # the hosts: 65,536 hosts x 16 ports = 1,048,576.
    eng = analyse(astral_dsl.load(ASTRAL))
    links = {layer.tier: layer for layer in eng.fabrics[0].links}
    tor = links["tor"]
    assert (tor.links, tor.upper_modules, tor.lower_modules) == (1_048_576, 262_144, 1_048_576)
    assert tor.cables == 1_048_576                  # one fibre per optical link
    # Agg and core: 400G links on twin-port modules at both ends: 524,288 / 2 at each end.
    for name in ("agg", "core"):
        assert (links[name].upper_modules, links[name].lower_modules) == (262_144, 262_144)
    # the agg layer prefers multimode but its 150 m run is beyond SR4's 100 m (802.3db): DR4
    assert links["agg"].medium_name == "DR4_400G" and links["agg"].reach_m == 500


def test_dgx_superpod_bill_of_materials():
    # 4 SUs: host-leaf 1,024 links on twin-port OSFP at both ends: 32 leaves x 32 / 2 = 512
    # modules at the leaves, 128 DGX x 8 ports / 2 = 512 at the hosts (4 OSFP cages each);
    # leaf-spine 1,024 links: 16 spines x 64 / 2 = 512 and 32 leaves x 32 / 2 = 512.
    # Power: QM9700 747 W (data sheet, typical with passive cables) + 32 modules x 15 W
    # (param module_power) = 1,227 W per switch; 48 switches -> 58,896 W.
    eng = analyse(astral_dsl.load(DGX))
    links = {layer.tier: layer for layer in eng.fabrics[0].links}
    assert (links["leaf"].upper_modules, links["leaf"].lower_modules) == (512, 512)
    assert (links["spine"].upper_modules, links["spine"].lower_modules) == (512, 512)
    assert eng.network_w == pytest.approx(48 * (747 + 32 * 15))
    bom = json.loads(_cli(["size", "examples/dgx_superpod.astral", "--format", "json"])
                     .stdout)["summary"]["network_bom"]
    rows = [r for r in bom if r["item"] == "link"]
    assert [(r["tier"], r["count"], r["transceivers"], r["medium"]) for r in rows] == [
        ("host-leaf", 1024, 1024, "TwinPortSR4"), ("leaf-spine", 1024, 1024, "TwinPortSR4")]


# =================================================================================================
# Switch power is not scaled by GPU utilisation
# =================================================================================================
def test_switch_power_is_not_scaled_by_utilisation():
    # 8 racks x 4 hosts x 10 kW = 320 kW of hosts at 50 % -> 160 kW; the 12,840 W network at
    # full power whatever the job: IT average = 160 + 12.84 = 172.84 kW (not 0.5 x 332.84 =
    # 166.42 kW); the peak is 320 + 12.84 = 332.84 kW.
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace(
        "site S { rows = 1 x Row }", "site S { rows = 1 x Row, utilization = 50 % }")
    power = _check(text).engineering.power
    assert power.it_peak_w == pytest.approx(332_840.0)
    assert power.it_average_w == pytest.approx(172_840.0)


def test_reference_average_counts_the_switches_at_full_power():
    # 0.75 x 668,467.2 kW (hosts) + 20,480 x 1.96 kW (switches) = 501,350.4 + 40,140.8
    eng = analyse(astral_dsl.load(ASTRAL))
    assert eng.power.it_average_w == pytest.approx((0.75 * 668_467.2 + 40_140.8) * 1e3)


# =================================================================================================
# No silent zeros: each warning on a design that omits the data
# =================================================================================================
def test_w606_reference_without_switch_power():
    text = ASTRAL.read_text(encoding="utf-8").replace("Switch51T(power = switch_power)",
                                                      "Switch51T")
    checked = _check(text, name=str(ASTRAL), root=EXAMPLES)
    d = _only(checked, "W606")
    assert d.message == ("switch power not declared: the network's 20,480 switches are "
                         "counted as 0 W")
    assert d.span is not None and "power" in d.hint
    # without switch power the network is its optics alone: 20,480 x 64 x 15 W
    assert checked.engineering.network_w == pytest.approx(20_480 * 64 * 15.0)


def test_w606_names_the_tiers_that_lack_power():
    # the spines are a switch with no power: 4 of 8 + 4 = 12 switches
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace("tier spine { switch = Sw,",
                                                     "tier spine { switch = Bare,")
    text = text.replace("medium Twin", "switch Bare { ports = 64, port_speed = 400 Gb/s }\n"
                                       "medium Twin")
    d = _only(_check(text), "W606")
    assert d.message == ("switch power not declared: 4 of the network's 12 switches (tier "
                         "`spine`) are counted as 0 W")


def test_w607_optics_without_power():
    # 256 ToR-spine links on single-port SR4 with no power: 256 modules at the spines and 256
    # at the ToRs count as 0 W
    text = _two_tier("SR4_400G", "20 m").replace("medium = Twin, length = 40 m",
                                                 "medium = SR4_400G, length = 40 m")
    text = text.replace("cages = 32, ", "")
    checked = _check(text)
    d = _only(checked, "W607")
    assert "counted as 0 W" in d.message
    # host-tor: 256 modules at the ToRs; tor-spine: 256 at the spines and 256 at the ToRs
    assert "768 modules" in d.message


def test_w607_names_lower_power_when_the_lower_ends_modules_differ():
    # twin-port modules at the spines, single-port ones at the ToRs (`lower_ports = 1`): the
    # medium's `power` is its upper end's, and the ToRs' 256 modules want `lower_power`
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace(
        "medium Twin = SR4_400G(form_factor = osfp, ports = 2, lower_ports = 2, power = 15 W)",
        "medium Twin = SR4_400G(form_factor = osfp, ports = 2, lower_ports = 1, power = 15 W)")
    text = text.replace("cages = 32, ", "")
    d = _only(_check(text), "W607")
    assert "256 modules" in d.message
    # at the spine tier's medium, whose links' lower ends they are, as the note says
    assert d.span.start.line == text.split("\n").index(
        "  tier spine { switch = Sw, scope = row, down = 64 x 400 Gb/s, medium = Twin, "
        "length = 40 m }") + 1
    assert d.notes == ("tier `tor`: 256 x `Twin`, the lower ends of tier `spine`'s links",)
    assert d.hint == ("declare the module `lower_power` of `Twin` (its lower end's modules, not "
                      "its upper end's) from the transceiver's data sheet (or the tier's "
                      "`optics_power`)")
    # the same medium with no power at all: its upper end's `power` is what the spines want
    d = _only(_check(text.replace(", power = 15 W)", ")")), "W607")
    assert d.hint.startswith("declare the module `lower_power` of `Twin` (its lower end's "
                             "modules, not its upper end's), `power` of `Twin` from")


def test_w608_w609_on_a_design_without_media_or_lengths():
    bare = PARTS + """
fabric F { tier leaf { switch = Sw, down = 32 x 400 Gb/s } }
site S { racks = 1 x R, fabric = F, air n { supply = 27 degC, rise = 12 K, network = true } }
"""
    d = _only(_check(bare), "W608")
    assert "32 links are counted with one single-port transceiver at each end (64)" in d.message
    unmeasured = bare.replace("down = 32 x 400 Gb/s }", "down = 32 x 400 Gb/s, medium = Twin }")
    d = _only(_check(unmeasured), "W609")
    assert "within the 100 m reach of `Twin`" in d.message


def test_w610_two_planes_on_single_port_nics():
    text = PARTS + """
fabric F {
  planes = 2
  tier leaf { switch = Sw, scope = site, per = [plane], down = 32 x 400 Gb/s,
              medium = Twin, length = 10 m }
}
site S { racks = 8 x R, fabric = F, air n { supply = 27 degC, rise = 12 K, network = true } }
"""
    checked = _check(text)
    d = _only(checked, "W610")
    assert "`planes = 2` but the NICs have 1 port each" in d.message
    # all 256 ports land on plane A: 256 / 32 = 8 leaves there, none on plane B
    assert _tiers(checked)["leaf"].switches == 8


def test_w610_more_rails_than_nics():
    text = PARTS + """
fabric F {
  rails = 16
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s,
              medium = Twin, length = 10 m }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s, medium = Twin, length = 10 m }
}
site S { racks = 8 x R, fabric = F, air n { supply = 27 degC, rise = 12 K, network = true } }
"""
    checked = _check(text)
    assert "rails 8..15 have no ports" in _only(checked, "W610").message
    # 8 rails used: 32 hosts per rail -> one leaf each; 8 x 32 / 64 = 4 spines
    t = _tiers(checked)
    assert (t["leaf"].switches, t["spine"].switches) == (8, 4)


# =================================================================================================
# Errors: fields honoured, never ignored
# =================================================================================================
def _errors(checked):
    return [d.code for d in checked.diagnostics if d.is_error]


def test_e608_no_medium_reaches():
    checked = _check(_two_tier("DAC_400G_CR4(form_factor = osfp, ports = 2)", "5 m"))
    d = _only(checked, "E608")
    assert "5 m" in d.message and "2 m" in d.message
    assert _errors(checked) == ["E608"]


def test_e609_speed_and_form_factor():
    checked = _check(_two_tier("DAC_400G_CR4(form_factor = qsfp_dd, ports = 2)", "1 m"))
    assert "qsfp_dd modules at the upper end" in _only(checked, "E609").message
    checked = _check(_two_tier("SR4_400G(speed = 200 Gb/s, form_factor = osfp, ports = 2, "
                               "power = 12 W)", "10 m"))
    assert "carries 200 Gb/s links" in _only(checked, "E609").message


def test_e610_modules_beyond_the_cages():
    # single-port modules at the ToR: 32 down + 16 (32 uplinks on twin-port) = 48 > 32 cages
    checked = _check(_two_tier("SR4_400G(form_factor = osfp, power = 12 W)", "10 m"))
    d = _only(checked, "E610")
    assert "needs 48 modules per switch" in d.message and "32 cages" in d.message


def test_e611_protocols():
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace(
        "nic N { ports = 1, port_speed = 400 Gb/s }",
        "nic N { ports = 1, port_speed = 400 Gb/s, protocol = ethernet }").replace(
        "power = 750 W }", "power = 750 W, protocol = infiniband }")
    assert _errors(_check(text)) == ["E611"]
    roce = text.replace("protocol = ethernet", "protocol = roce").replace(
        "protocol = infiniband", "protocol = ethernet")
    assert _errors(_check(roce)) == []


def test_e612_optics_counted_twice():
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace(
        "tier spine { switch = Sw,", "tier spine { switch = Sw, optics_power = 480 W,")
    assert _errors(_check(text)) == ["E612"]


def test_e606_scope_beyond_the_owner():
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace("scope = row", "scope = site")
    d = _only(_check(text), "E606")
    assert "`scope = site`" in d.message and "attached" in d.message
    missing = _two_tier(DAC_THEN_OPTICS, "2 m").replace("scope = row", "scope = hall")
    assert _errors(_check(missing)) == ["E606"]


def test_e607_groups_must_nest():
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace("scope = rack, down", "scope = row, down") \
        .replace("scope = row, down = 64", "scope = rack, down = 64")
    assert "E607" in _errors(_check(text))


def test_e600_link_faster_than_the_port():
    text = _two_tier(DAC_THEN_OPTICS, "2 m").replace(
        "port_speed = 400 Gb/s, cages", "port_speed = 200 Gb/s, cages")
    messages = [d.message for d in _check(text).diagnostics if d.code == "E600"]
    assert any("400 Gb/s downlinks but the ports of `Sw` run at 200 Gb/s" in m
               for m in messages)


def test_e600_capacity_from_ports_and_speed():
    # no declared capacity: 64 x 400G = 25.6 Tb/s; with max_ports 128, 96 x 400G = 38.4 Tb/s
    # fits the port count but not the capacity
    text = PARTS.replace("cages = 32, ", "max_ports = 128, ") + """
fabric F { tier leaf { switch = Sw, down = 96 x 400 Gb/s, medium = Twin, length = 10 m } }
site S { racks = 3 x R, fabric = F, air n { supply = 27 degC, rise = 12 K, network = true } }
"""
    d = _only(_check(text), "E600")
    assert "38.4 Tb/s" in d.message and "25.6 Tb/s" in d.message


def test_tier_without_downlinks_is_an_error():
    design = astral_dsl.loads(PARTS + "fabric F { tier leaf { switch = Sw } }\n"
                                      "site S { racks = 1 x R, fabric = F }\n", name="x.astral")
    assert [d.code for d in design.diagnostics] == ["E204"]


# =================================================================================================
# The examples declare what the warnings ask for
# =================================================================================================
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.astral")))
def test_examples_have_no_network_warnings(name):
    checked = astral_dsl.check(astral_dsl.compile(EXAMPLES / name), all_scenarios=True)
    network = [d for d in checked.diagnostics
               if d.code[1:3] == "60" or d.code[1:3] == "61"]
    assert network == [], [(d.code, d.message) for d in network]


# Planes over a first tier: 8-port switches (leaf 4 down / 4 up, spine 8 down), 2 rails of
# single-port NICs, leaves per rail over the whole site, one spine group joining both rails.
PLANES_OVER_LEAVES = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch Sw { ports = 8, port_speed = 400 Gb/s, power = 500 W }
host H { gpus = 2 x G, nics = 2 x N, power = 2 kW }
fabric F {
  rails = 2
  tier leaf { switch = Sw, scope = site, per = [rail], down = 4 x 400 Gb/s, up = 4 x 400 Gb/s }
  tier spine { switch = Sw, scope = site, down = 8 x 400 Gb/s }
}
site S { hosts = HOSTS x H, fabric = F }
"""


def test_planes_over_a_first_tier_are_e604():
    # 32 hosts: 32 ports per rail / 4 = L = 8 leaves per rail, m = 2 rail groups; L x m = 16 > 8
    # spine downlinks, so the spines would be wired in planes (leaf p of each rail to plane p):
    # leaf 0 and leaf 1 of rail 0 would share no spine, and nothing under them joins them.
    # A two-tier Clos of 8-port spines reaches 8 leaves: at most 8 // 2 = 4 per rail group.
    checked = _check(PLANES_OVER_LEAVES.replace("HOSTS", "32"))
    d = _only(checked, "E604")
    assert "all 16 `leaf` switches of the 2 groups it joins (8 per group)" in d.message
    assert "8 downlinks" in d.message and "no path between them" in d.message
    assert (d.span.start.line, d.span.start.column) == (9, 50)    # the spine's `down`
    assert "at most 4 `leaf` switches per group" in d.hint
    # 16 hosts: 4 leaves per rail, 4 x 2 = 8 <= 8: every leaf reaches every spine (mesh) with
    # 4 x 4 x 2 = 32 uplinks / 8 = 4 spines, one link each; no error.
    ok = _check(PLANES_OVER_LEAVES.replace("HOSTS", "16"))
    assert not [c for c in _codes(ok) if c.startswith("E")]
    spine = _tiers(ok)["spine"]
    assert (spine.switches, spine.mesh) == (4, True)
