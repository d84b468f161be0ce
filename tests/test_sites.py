"""Designs of several sites (a campus of data halls, each its own `site` with its feeders,
transformers, cooling and climate): every site named in the diagnostics that concern it, each
site's power path drawn and loaded on its own, per-site figures adding up to the design's.
Every expected value is computed by hand in the comments."""
from __future__ import annotations

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
