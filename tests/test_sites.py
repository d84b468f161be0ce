"""Designs of several sites (a campus of data halls, each its own `site` with its feeders,
transformers, cooling and climate): every site named in the diagnostics that concern it, each
site's power path drawn and loaded on its own, per-site figures adding up to the design's.
Every expected value is computed by hand in the comments."""
from __future__ import annotations

import re

import pytest

import astral_dsl

BASE = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
rack Half { hosts = 4 x H, utilization = 50 % }
"""


def test_each_site_without_utilization_is_w627_with_its_own_share():
    # A declares 50 %: silent. B declares none: all its 2 x 40 kW = 80 kW at peak, W627 names
    # B. C holds 1 x R (40 kW, none stated) and 1 x Half (40 kW at 50 %): W627 names C "for
    # 40 kW of its IT load" (its average is 40 + 20 = 60 kW, more than the 40 kW unstated).
    # Before, one W627 named the first site (A, which declares it) for all 120 kW.
    text = BASE + ("site A { racks = 2 x R, utilization = 50 % }\n"
                   "site B { racks = 2 x R }\n"
                   "site C { racks = 1 x R, halves = 1 x Half }\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="util.astral"))
    w627 = [d for d in checked.diagnostics if d.code == "W627"]
    assert [d.message.split(":")[0] for d in w627] == [
        "site `B` declares no `utilization` (nor do the parts inside it)",
        "site `C` declares no `utilization` for 40 kW of its IT load (nor do the parts inside "
        "it)"]
    assert [d.span.start.line for d in w627] == [6, 7] and all(d.hint for d in w627)
    # the average IT load: A 80 kW x 50 % + B 80 kW + C 40 + 20 kW = 180 kW
    assert checked.engineering.power.it_average_w == pytest.approx(180e3)


MECH = "  feeder ma { current = ac, voltage = 400 V, capacity = 1 MW, side = A, efficiency = 100 %, " \
    "mechanical = true }\n  feeder mb { current = ac, voltage = 400 V, capacity = 1 MW, side = B, " \
    "efficiency = 100 %, mechanical = true }\n"
AIR = "  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 0 % }\n"
MECH_SITES = BASE + (
    "site X {\n  racks = 3 x R, utilization = 100 %, auxiliary = 20 kW, altitude = 0 m\n"
    + AIR + MECH + "}\n"
    "site Y {\n  racks = 1 x R, utilization = 100 %, auxiliary = 12 kW\n" + AIR + MECH + "}\n"
    "site Z {\n  racks = 1 x R, utilization = 100 %, auxiliary = 4 kW\n" + AIR + "}\n"
    "scenario a_down { fail X.ma }\n")


@pytest.fixture(scope="module")
def mech_sites():
    ws = astral_dsl.compiles(MECH_SITES, name="mech.astral")
    return astral_dsl.check(ws, scenarios=["a_down"])


def test_each_sites_mechanical_feeders_carry_its_own_consumers_not_the_designs(mech_sites):
    # The facility's consumers: the auxiliaries only (fans at 0 %, no facility water): X 20 kW,
    # Y 12 kW, Z 4 kW = 36 kW. X's pair carries X's own 20 kW (10 kW each side in normal
    # operation), Y's its 12 kW (6 kW each). Before, each site's pair carried the site's share
    # of the IT load (X 120 kW, Y 40 kW, Z 40 kW: 0.6, 0.2, 0.2) of the 36 kW: X 21.6 kW, Y
    # 7.2 kW, another site's auxiliaries on its feeders (and before that, the four feeders
    # shared 36 kW per side whatever their site). Z holds none: W629 names it, its 4 kW on no
    # feeder.
    facility = mech_sites.engineering.cooling.facility
    # in the order declared, the sites in theirs (the walk listed Y's first)
    assert [f.path for f in facility.feeders] == ["X.ma", "X.mb", "Y.ma", "Y.mb"]
    assert mech_sites.engineering.cooling.peak.auxiliary_w == pytest.approx(36e3)
    assert {f.path: (f.load_w, f.normal_w) for f in facility.feeders} == {
        "X.ma": (pytest.approx(20e3), pytest.approx(10e3)),
        "X.mb": (pytest.approx(20e3), pytest.approx(10e3)),
        "Y.ma": (pytest.approx(12e3), pytest.approx(6e3)),
        "Y.mb": (pytest.approx(12e3), pytest.approx(6e3))}
    (w,) = [d for d in mech_sites.diagnostics if d.code == "W629"]
    assert w.message.startswith("site `Z` holds no feeder with `mechanical = true`: its "
                                "facility's own consumers (4 kW of 36 kW at the sites' peaks)")
    assert w.span.start.line == 17 and w.hint       # `site Z {`


def test_failing_one_sites_mechanical_feeder_leaves_the_other_site_untouched(mech_sites):
    # X.ma down: X.mb carries X's 20 kW alone; Y's pair still 6 kW each
    (outcome,) = [o for o in mech_sites.scenarios if o.name == "a_down"]
    feeders = {f.path: f.normal_w for f in outcome.result.cooling.facility.feeders}
    assert feeders == {"X.ma": 0.0, "X.mb": pytest.approx(20e3),
                       "Y.ma": pytest.approx(6e3), "Y.mb": pytest.approx(6e3)}


def _power_view(checked, name):
    from astral_dsl.outputs.render import canvas

    cv = canvas(checked.design, "power", name, None, checked)
    return cv.g.source


@pytest.fixture(scope="module")
def chain_sites():
    # X and Y declare their own stages, hv then mv (in series, upstream first)
    t = ("  transformer hv { capacity = 5000 kVA, count = 2, redundancy = two_n, "
         "no_load_loss = 2 kW, load_loss = 8 kW, power_factor = 100 % }\n"
         "  transformer mv { capacity = 500 kVA, count = 2, redundancy = two_n, "
         "no_load_loss = 1 kW, load_loss = 4 kW, power_factor = 100 % }\n")
    text = MECH_SITES.replace("  racks = 3 x R,", t + "  racks = 3 x R,") \
        .replace("  racks = 1 x R, utilization = 100 %, auxiliary = 12 kW",
                 t + "  racks = 1 x R, utilization = 100 %, auxiliary = 12 kW")
    return astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))


def test_the_power_view_draws_each_sites_own_transformer_chain(chain_sites):
    # A site's load at the peak hour: its IT and its own consumers (feeders at 100 %): X 120 +
    # 20 = 140 kW, Y 40 + 12 = 52 kW. X's picture: X.hv -> X.mv -> the supplies, and nothing of
    # Y's (before: X.hv, X.mv, Y.hv, Y.mv in one chain of four; Y's picture had none). Its
    # consumers: what X's mechanical feeders carry, 20 kW (before, the design's 36 kW); its
    # title X's own 120 kW, not the design's 200 kW.
    stages = chain_sites.engineering.cooling.facility.transformers
    assert [t.path for t in stages] == ["X.hv", "X.mv", "Y.hv", "Y.mv"]     # as declared
    for site, other, carried, mech, it in (
            ("X", "Y", "140 kW", "20 kW", "12 hosts · 3 racks · 120 kW"),
            ("Y", "X", "52 kW", "12 kW", "4 hosts · 1 rack · 40 kW")):
        dot = _power_view(chain_sites, site)
        tooltips = re.findall(r'tooltip="transformer (\S+):', dot)
        assert tooltips == [f"{site}.hv", f"{site}.mv"]
        assert "transformer_0 -> transformer_1" in dot and "transformer_1 -> supply_A" in dot \
            and "transformer_1 -> supply_B" in dot and "transformer_2" not in dot
        assert dot.count(f"carries {carried} at the peak hour") == 2
        assert f"{mech} at the peak hour" in dot
        assert f'COLOR="#455a64">{it} peak<' in dot
        assert f"{other}.hv" not in dot and f"{other}.mv" not in dot


def test_w653_counts_and_names_every_sites_heat():
    # X 2 x 40 kW and Y 40 kW, no cooling anywhere: 120 kW of both sites' heat (it named X
    # alone for the design's 120 kW)
    text = BASE + "site X { racks = 2 x R }\nsite Y { racks = 1 x R }\n"
    checked = astral_dsl.check(astral_dsl.compiles(text, name="hot.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W653"]
    assert w.message == ("no cooling is declared: the 120 kW of heat of the sites `X` and `Y` "
                         "have no path out, and no PUE is computed")


def test_the_cooling_view_draws_each_sites_own_circuits():
    # X and Y each their own circuit `fw`: X's picture draws X.fw (its 120 kW of air heat + 3 %
    # fans = 123.6 kW average) and not Y's, Y's draws Y.fw (41.2 kW); each title the site's own
    # heat, not the design's (before: X's picture drew both circuits under the design's
    # figures, Y's none). A circuit two sites draw on (one template, `Shared`) says so.
    fw = ("  facility fw { supply = 15 degC, rise = 10 K, pump_head = 0 kPa, "
          "pump_efficiency = 80 %, free_cooling = 8760 h, chiller_cop = 5 }\n")
    air = "  air room { supply = 25 degC, rise = 12 K, approach = 10 K, fan_power_ratio = 3 % }\n"
    text = BASE + "".join(f"site {s} {{\n  racks = {k} x R, utilization = 100 %, altitude = 0 m\n"
                          + fw + air + "}\n" for s, k in (("X", 3), ("Y", 1)))
    checked = astral_dsl.check(astral_dsl.compiles(text, name="fw.astral"))
    from astral_dsl.outputs.render import canvas

    for site, other, heat, title in (("X", "Y", "123.6 kW", "12 hosts · 3 racks · 120 kW"),
                                     ("Y", "X", "41.2 kW", "4 hosts · 1 rack · 40 kW")):
        dot = canvas(checked.design, "cooling", site, None, checked).g.source
        assert f'tooltip="facility {site}.fw' in dot and f"facility {other}.fw" not in dot
        assert f"{heat} average · pumps 0 W" in dot and "another site" not in dot
        assert f'COLOR="#455a64">{title} peak<' in dot
    shared = BASE + "facility Shared { supply = 15 degC, rise = 10 K, free_cooling = 8760 h, " \
        "chiller_cop = 5 }\n" + "".join(
            f"site {s} {{\n  racks = 1 x R\n" + air.replace("3 % }", "3 %, facility = Shared }")
            + "}\n" for s in "XY")
    checked = astral_dsl.check(astral_dsl.compiles(shared, name="shared.astral"))
    for site in "XY":
        dot = canvas(checked.design, "cooling", site, None, checked).g.source
        assert "also another site&#x27;s: its figures are all its sites&#x27;" in dot


def test_a_site_without_transformers_among_others_takes_the_default_with_w630():
    # X 120 kW through its 2 x 2,500 kVA (P0 1 kW, Pk 4 kW): x = 120 / 5,000 = 0.024, 2 x
    # (1,000 + 4,000 x 0.024^2) = 2,004.608 W. Y 40 kW through none: 40,000 x (1 / 0.9953 - 1)
    # = 188.888 W at the sourced default, with W630 naming Y (it was 0 W, silently)
    t = ("transformer T { capacity = 2500 kVA, count = 2, redundancy = two_n, "
         "no_load_loss = 1 kW, load_loss = 4 kW, power_factor = 100 % }\n")
    f = "  feeder f { current = dc, voltage = 240 V, capacity = 1 MW, efficiency = 100 %, " \
        "serves = racks }\n"
    text = BASE + t + "site X {\n  racks = 3 x R, utilization = 100 %\n  transformer mv = T\n" \
        + f + "}\nsite Y {\n  racks = 1 x R, utilization = 100 %\n" + f + "}\n"
    checked = astral_dsl.check(astral_dsl.compiles(text, name="tx.astral"))
    cooling = checked.engineering.cooling
    assert cooling.peak.transformers_w == pytest.approx(2004.608 + 40e3 * (1 / 0.9953 - 1))
    assert cooling.peak.transformers_w == pytest.approx(2193.496, abs=1e-3)
    assert cooling.average.transformers_w == pytest.approx(cooling.peak.transformers_w)
    (w,) = [d for d in checked.diagnostics if d.code == "W630"]
    assert w.message.startswith("site `Y` declares no `transformer` (other sites do): the "
                                "losses between the utility and its feeders are taken as 0.47 %")
    assert w.span.start.line == 11 and w.hint          # `site Y {`
    assert cooling.facility.default_transformer


NET = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch S { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 8 kW }
rack R { hosts = 4 x H }
fabric F {
  rails = 8
  tier leaf { switch = S, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = S, scope = site, down = 64 x 400 Gb/s }
}
site X { racks = 8 x R, fabric = F, utilization = 100 %
  feeder n { current = dc, voltage = 240 V, capacity = 1 MW, efficiency = 100 %, network = true }
}
site Y { racks = 4 x R, fabric = F, utilization = 100 % }
"""


def test_one_fabric_on_two_sites_is_named_and_drawn_per_site():
    # Each site's fabric: a leaf per rail (8, X's 32 hosts and Y's 16 within 32 ports) and
    # 8 x 32 uplinks / 64 = 4 spines: 12 switches of 1 kW, 12 kW per site, 24 kW in all. The
    # fabric is one (`X.fabric`): W647 says which site's switches (both read `X.fabric`, one
    # message for two sites' heat); each site's picture draws its own 12 switches (X's drew
    # the design's 24, Y's none), X's on its network feeder, Y's on none (W628 names Y).
    from astral_dsl.outputs.render import canvas

    checked = astral_dsl.check(astral_dsl.compiles(NET, name="net.astral"))
    assert [d.message for d in checked.diagnostics if d.code == "W647"] == [
        "the switches of `X.fabric` make 12 kW of heat that no air unit removes",
        "the switches of `X.fabric` on `Y` make 12 kW of heat that no air unit removes"]
    (w,) = [d for d in checked.diagnostics if d.code == "W628"]
    assert "(12 switches of `X.fabric` on `Y`)" in w.message
    for site, where in (("X", "on the feeders with network = true"),
                        ("Y", "not on a declared feeder")):
        dot = canvas(checked.design, "power", site, None, checked).g.source
        assert "12 switches · 12 kW peak" in dot and where in dot


def _chilled_site(name, racks, free, kva, aux=0):
    """A site of `racks` x 40 kW on air units and one facility-water circuit (COP 4 chillers,
    `free` h of free cooling; fans at 0 %, pumps at 0 kPa), a `kva` transformer and the
    mechanical pair MECH."""
    return (f"site {name} {{\n  racks = {racks} x R, utilization = 100 %, auxiliary = {aux} kW, "
            f"altitude = 0 m\n"
            f"  transformer mv {{ capacity = {kva} kVA, redundancy = n, "
            f"no_load_loss = 0 kW, load_loss = 1 kW, power_factor = 100 % }}\n"
            "  air room { supply = 25 degC, rise = 12 K, approach = 10 K, "
            "fan_power_ratio = 0 %, dew_point = 10 degC }\n"
            "  facility fw { supply = 15 degC, rise = 10 K, pump_head = 0 kPa, "
            f"pump_efficiency = 80 %, free_cooling = {free} h, chiller_cop = 4, "
            "rejection_fan_ratio = 0 % }\n" + MECH + "}\n")


def test_each_site_carries_its_own_chillers_not_a_share_of_the_designs():
    # X (3 racks, 120 kW) on chillers all year at COP 4: 120 kW / 4 = 30 kW at the peak; Y (1
    # rack, 40 kW) on free cooling all year: no chillers (fans at 0 %, pumps at 0 kPa, no
    # auxiliaries). X's mechanical pair carries its 30 kW (15 kW each side), Y's nothing; X's
    # transformer 120 + 30 = 150 kVA (PF 1) > its 145 kVA: E634; Y's 40 kVA <= 45 kVA. By the
    # sites' shares of the IT load (0.75, 0.25) X's pair carried 22.5 kW and Y's 7.5 kW of X's
    # chillers, X's transformer 0.75 x 190 = 142.5 kVA (passed) and Y's 47.5 kVA (E634).
    text = BASE + _chilled_site("X", 3, 0, 145) + _chilled_site("Y", 1, 8760, 45)
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chillers.astral"))
    facility = checked.engineering.cooling.facility
    assert checked.engineering.cooling.peak.chillers_w == pytest.approx(30e3)
    assert {f.path: f.load_w for f in facility.feeders} == {
        "X.ma": pytest.approx(30e3), "X.mb": pytest.approx(30e3),
        "Y.ma": pytest.approx(0.0), "Y.mb": pytest.approx(0.0)}
    assert {t.path: t.peak_load_w for t in facility.transformers} == {
        "X.mv": pytest.approx(150e3), "Y.mv": pytest.approx(40e3)}
    (e,) = [d for d in checked.diagnostics if d.code == "E634"]
    assert e.message.startswith("transformers `X.mv` carry 150 kVA at the peak")


def test_a_sites_auxiliaries_heat_its_own_circuit_not_anothers():
    # Y's 20 kW of auxiliaries (its building, air-cooled) go into Y's circuit (free cooling):
    # 40 + 20 = 60 kW, and X's stays at its 120 kW of air heat, its chillers 120 / 4 = 30 kW on
    # X's pair; Y's pair carries its 20 kW. Shared by the circuits' air heat across the sites
    # (120 : 40), 15 kW of Y's went into X's circuit: X's chillers 135 / 4 = 33.75 kW.
    text = BASE + _chilled_site("X", 3, 0, 500) + _chilled_site("Y", 1, 8760, 500, aux=20)
    checked = astral_dsl.check(astral_dsl.compiles(text, name="aux.astral"))
    facility = checked.engineering.cooling.facility
    assert {c.circuit.path: c.circuit.peak_w for c in facility.circuits} == {
        "X.fw": pytest.approx(120e3), "Y.fw": pytest.approx(60e3)}
    assert checked.engineering.cooling.peak.chillers_w == pytest.approx(30e3)
    assert {f.path: f.load_w for f in facility.feeders} == {
        "X.ma": pytest.approx(30e3), "X.mb": pytest.approx(30e3),
        "Y.ma": pytest.approx(20e3), "Y.mb": pytest.approx(20e3)}


# ---- a site's transformers carry its own IT feeders' input --------------------------------------
def _own_feeders(bare_y: bool) -> str:
    t = ("  transformer t { capacity = 1000 kVA, count = 1, no_load_loss = 0 W, "
         "load_loss = 10 kW, power_factor = 100 % }\n")

    def site(name, util, eff, transformer=True):
        return (f"site {name} {{\n  racks = 2 x R{name}, utilization = {util}, altitude = 0 m, "
                f"auxiliary = 0 W\n" + (t if transformer else "") + AIR +
                f"  feeder f {{ current = ac, voltage = 400 V, capacity = 1 MW, efficiency = "
                f"{eff}, power_factor = 100 %, serves = racks }}\n}}\n")
    return ("host H { power = 10 kW }\nrack RX { hosts = 4 x H }\nrack RY { hosts = 4 x H }\n"
            + site("X", "100 %", "100 %") + site("Y", "50 %", "80 %", not bare_y))


def test_each_sites_transformer_carries_its_own_feeders_input_not_an_it_share():
    # X: 2 racks of 40 kW at 100 % (80 kW average and peak) on a feeder at 100 %: no losses.
    # Y: the same 80 kW peak at 50 % (40 kW average) on a feeder at 80 %: losses 40 / 0.8 - 40
    # = 10 kW on average, 80 / 0.8 - 80 = 20 kW at the peak. No other consumer (fans at 0 %, no
    # auxiliary). X's transformer carries 80 kW, Y's 50 kW on average and 100 kW at the peak.
    # Each loses x^2 x 10 kW at x = load / 1,000 kVA: X 0.08^2 x 10 kW = 64 W; Y 0.05^2 x 10 kW
    # = 25 W on average, 0.1^2 x 10 kW = 100 W at the peak: 89 W and 164 W. Before, each site
    # carried its IT share (1/2) of the design's 120 + 10 kW average and 160 + 20 kW peak: 65
    # and 90 kW each, 84.5 W and 162 W.
    checked = astral_dsl.check(astral_dsl.compiles(_own_feeders(False), name="own.astral"))
    cooling = checked.engineering.cooling
    stages = {t.path: t for t in cooling.facility.transformers}
    assert {p: t.peak_load_w for p, t in stages.items()} == {
        "X.t": pytest.approx(80e3), "Y.t": pytest.approx(100e3)}
    assert {p: t.average_loss_w for p, t in stages.items()} == {
        "X.t": pytest.approx(64.0), "Y.t": pytest.approx(25.0)}
    assert cooling.average.transformers_w == pytest.approx(89.0)
    assert cooling.peak.transformers_w == pytest.approx(164.0)


def test_a_site_without_transformers_loses_the_default_on_its_own_load():
    # Y declares no transformer: its own load, 50 kW on average and 100 kW at the peak (as
    # above), at the sourced default 99.53 %: 50 kW x (1 / 0.9953 - 1) = 236.11 W and 100 kW x
    # (1 / 0.9953 - 1) = 472.22 W, with X's 64 W: 300.11 W and 536.22 W. Before, its IT share
    # (1/2) of the design's load, 65 and 90 kW: 306.94 + 42.25 (X at 65 kW) = 349.19 W.
    checked = astral_dsl.check(astral_dsl.compiles(_own_feeders(True), name="bare.astral"))
    cooling = checked.engineering.cooling
    k = 1 / 0.9953 - 1
    assert cooling.average.transformers_w == pytest.approx(64.0 + 50e3 * k)
    assert cooling.average.transformers_w == pytest.approx(300.11, abs=0.01)
    assert cooling.peak.transformers_w == pytest.approx(64.0 + 100e3 * k)
    assert [d.message.split(" (")[0] for d in checked.diagnostics if d.code == "W630"] == [
        "site `Y` declares no `transformer`"]
