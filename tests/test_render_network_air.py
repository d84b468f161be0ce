"""The cooling view draws the switches' heat path: the air unit with `network = true` to the
network switches, and says so when no unit removes that heat (W647)."""
from __future__ import annotations

import astral_dsl
from astral_dsl.outputs.render import render


def test_reference_switch_heat_goes_to_the_netroom():
    ws = astral_dsl.compile("examples/astral.astral")
    source = render(ws.design, "cooling", checked=astral_dsl.check(ws)).source
    edges = [line for line in source.splitlines() if "-> network" in line]
    assert len(edges) == 1 and "netroom" in edges[0] and "40.1 MW" in edges[0]   # 20,480 x (1 kW + 64 x 15 W)
    assert "W647" not in source


def test_uncooled_switch_heat_is_marked():
    text = open("examples/astral.astral").read()
    start = text.index("  air netroom {")
    end = text.index("}", start) + 1
    ws = astral_dsl.compiles(text[:start] + text[end:], name="examples/astral.astral",
                             root="examples")
    source = render(ws.design, "cooling", checked=astral_dsl.check(ws)).source
    assert "no unit removes it: W647" in source
    assert not [line for line in source.splitlines() if "-> network" in line]
