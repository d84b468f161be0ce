"""`astral render`: every view of every example laid out by the real `dot` into SVG, parsed with
xml.etree, with assertions on the labels and the counts of nodes and edges; violations in red,
scenarios greyed, `--name` resolution and its diagnostics, the missing-`dot` diagnostic, and the
size of the reference pictures.

Expected figures come from the analyses (ctx.eng) or from the reference design's sources (the
Astral paper: 8 pods, 8 rails x 2 planes, 8,192 ToR, 8,192 Agg and 4,096 core switches)."""
from __future__ import annotations

import functools
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict

import graphviz
import pytest

import astral_dsl
from astral_dsl.cli import main
from astral_dsl.outputs.render import VIEWS, RenderError, canvas, layout, render, write
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.astral"))
REFERENCE = REPO / "examples" / "astral.astral"
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"

def _require_dot(fn):
    """These tests need Graphviz's `dot` (installed by `make test`): without it they fail."""
    return fn


needs_dot = _require_dot


@functools.lru_cache(maxsize=None)
def checked(path: str, scenario: str = "", sets: tuple = ()):
    return astral_dsl.check(astral_dsl.compile(path, dict(sets)), [scenario] if scenario else None)


class Picture:
    """An SVG laid out by dot, with its nodes, edges and clusters."""

    def __init__(self, data: bytes):
        self.data = data
        self.root = ET.fromstring(data)
        self.groups = list(self.root.iter(f"{SVG}g"))

    def _of(self, kind: str, cls=None):
        out = []
        for g in self.groups:
            classes = (g.get("class") or "").split()
            if kind in classes and (cls is None or cls in classes):
                out.append(g)
        return out

    def nodes(self, cls=None):
        return self._of("node", cls)

    def edges(self, cls=None):
        return self._of("edge", cls)

    def clusters(self, cls=None):
        return self._of("cluster", cls)

    @staticmethod
    def title(g) -> str:
        t = g.find(f"{SVG}title")
        return t.text if t is not None else ""

    @staticmethod
    def texts(g):
        return [t.text or "" for t in g.iter(f"{SVG}text")]

    @staticmethod
    def text(g) -> str:
        return " | ".join(Picture.texts(g))

    @staticmethod
    def tooltip(g) -> str:
        for a in g.iter(f"{SVG}a"):
            return a.get(f"{XLINK}title") or ""
        return ""

    @staticmethod
    def fills(g):
        return {e.get("fill") for e in g.iter() if e.get("fill")}

    def all_text(self) -> str:
        return " | ".join(t.text or "" for t in self.root.iter(f"{SVG}text"))

    def node(self, name: str):
        found = [g for g in self.nodes() if self.title(g) == name]
        assert found, f"no node {name}"
        return found[0]

    def with_text(self, pattern: str, kind: str = "node", cls=None):
        rx = re.compile(pattern)
        return [g for g in self._of(kind, cls) if rx.search(self.text(g))]


def picture(path, view="cluster", name=None, scenario="", sets=()) -> Picture:
    c = checked(str(path), scenario, tuple(sorted(sets)))
    return Picture(layout(render(c.design, view, name, scenario or None, c), "svg"))


def context(path, view="cluster", name=None, scenario="", sets=()):
    c = checked(str(path), scenario, tuple(sorted(sets)))
    return canvas(c.design, view, name, scenario or None, c)


# ---- every view of every example ---------------------------------------------------------------

@needs_dot
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_view_of_every_example(example, view):
    cv = context(example, view)
    pic = Picture(layout(cv.g, "svg"))
    nodes, edges = pic.nodes(), pic.edges()
    # what the canvas drew is what dot laid out (tables count once; invisible edges are hidden)
    assert len(nodes) == cv.node_count > 0
    assert len([e for e in edges if "invis" not in (e.get("class") or "")]) >= cv.edge_count
    title = pic.all_text()
    assert f"— {'cluster' if view == 'cluster' else ''}" in title or f"{view} view" in title
    assert "legend" in title
    assert pic.clusters("legend"), "the legend is drawn below the picture"
    # every count label on a node reads `N x thing`, N a whole number with separators
    for g in nodes:
        for t in pic.texts(g):
            m = re.match(r"^(\d[\d,]*) x ", t)
            if m:
                assert int(m.group(1).replace(",", "")) >= 1
    assert len(pic.data) < 2_000_000


# ---- the reference design ---------------------------------------------------------------------

@needs_dot
def test_reference_cluster_view():
    cv = context(REFERENCE, "cluster")
    eng = cv.ctx.eng
    fabric = eng.fabrics[0]
    pic = Picture(layout(cv.g, "svg"))
    # the pods collapsed: one cluster `8 x pod Pod`, one `128 x row GpuRow`, racks as one node
    assert [c for c in pic.clusters() if "8 x pod Pod" in pic.text(c)]
    assert [c for c in pic.clusters() if "128 x row GpuRow" in pic.text(c)]
    racks = pic.with_text(r"^16 x rack GpuRack", cls="compute")
    assert len(racks) == 1
    # 8 rails, each with its agg and tor; a cell per plane with the switches per pod
    rails = [c for c in pic.clusters("rail") if re.match(r"^rail \d+$", pic.texts(c)[0])]
    assert sorted(pic.texts(c)[0] for c in rails) == [f"rail {r}" for r in range(8)]
    assert fabric.rails == 8 and fabric.planes == 2
    for tier in ("tor", "agg"):
        per_rail = pic.with_text(rf"^{tier} · rail \d")
        assert len(per_rail) == 8
        for g in per_rail:
            assert pic.texts(g)[1:3] == ["A: 64", "B: 64"]
    # the tier counts 8,192 / 8,192 / 4,096 in the table, and the core on top
    table = pic.node("tiers")
    cells = pic.texts(table)
    for name, switches in (("core", "4,096"), ("agg", "8,192"), ("tor", "8,192")):
        i = cells.index(name)
        assert cells[i + 4] == switches, cells[i:i + 6]
    assert [t.switches for t in fabric.tiers] == [8192, 8192, 4096]
    core = pic.with_text(r"^core")
    assert len(core) == 1 and "4,096 x Switch51T" in pic.texts(core[0])
    # edges: racks to 8 ToR columns, ToR to Agg per rail, Agg to core per rail
    network = pic.edges("network") + pic.edges("core")
    assert len(network) == 3 * 8 == cv.edge_count
    labels = pic.all_text()
    assert "16,384 x 200G each rail" in labels          # 8,192 hosts x 2 ports per rail per pod
    assert "8,192 x 400G each rail" in labels           # 128 switches x 64 uplinks
    assert "8 rails x 2 planes, 3 tiers, 20,480 switches" in labels
    assert "524,288 GPUs" in labels


@needs_dot
def test_reference_pod_view_per_rail_and_plane():
    cv = context(REFERENCE, "pod", "Astral.pods[3]")
    pic = Picture(layout(cv.g, "svg"))
    assert "Astral.pods[3] — pod view" in pic.all_text()
    for tier in ("tor", "agg"):
        for plane in "AB":
            nodes = pic.with_text(rf"^{tier} {plane} \| 64 x Switch51T")
            assert len(nodes) == 8, (tier, plane)
    hosts = pic.with_text(r"^8,192 x host Node", cls="compute")
    assert len(hosts) == 1
    assert "in 128 x row GpuRow > 16 x rack GpuRack" in pic.text(hosts[0])
    # the core is outside the pod, with its uplinks
    outside = [c for c in pic.clusters() if "above Astral.pods[3]" in pic.text(c)]
    assert outside
    core = pic.with_text(r"^core \| 4,096 x Switch51T")
    assert len(core) == 1
    # 16 host-ToR, 16 ToR-Agg, 16 Agg-core edges
    assert len(pic.edges("network")) + len(pic.edges("core")) == 48
    assert "8,192 x 200G each" in pic.all_text()
    assert "4,096 x 400G each" in pic.all_text()


@needs_dot
def test_reference_rack_view_ports_reach_their_rail_and_plane():
    name = "Astral.pods[0].rows[5].racks[3]"
    pic = picture(REFERENCE, "rack", name)
    hosts = [g for g in pic.nodes("compute") if pic.title(g).startswith("host")]
    assert len(hosts) == 4
    for g in hosts:
        gpus = [t for t in pic.texts(g) if re.match(r"^GPU \d · H800$", t)]
        assert len(gpus) == 8
        ports = [t for t in pic.texts(g) if t in ("a", "b")]
        assert len(ports) == 16
    switches = pic.with_text(r"^tor rail \d · plane [AB]")
    assert len(switches) == 16
    edges = pic.edges("network")
    assert len(edges) == 4 * 8 * 2
    # hosts 332..335 of pod 0 (rows[5] x 64 + racks[3] x 4): 128 hosts per ToR -> ToR #2
    for e in edges:
        m = re.match(r"host (\d) NIC (\d) port ([ab]) -> tor rail (\d) plane ([AB]) #(\d+)",
                     pic.tooltip(e))
        assert m, pic.tooltip(e)
        assert m.group(2) == m.group(4)                                   # NIC k on rail k
        assert "ab".index(m.group(3)) == "AB".index(m.group(5))           # port a on plane A
        assert m.group(6) == "2"
    counts = {}
    for e in edges:
        head = pic.title(e).split("->")[-1].split(":")[0]
        counts[head] = counts.get(head, 0) + 1
    assert sorted(counts.values()) == [4] * 16                            # each ToR: 4 hosts


@needs_dot
def test_reference_power_view():
    cv = context(REFERENCE, "power")
    power = cv.ctx.eng.power
    hvdc = next(f for f in power.feeders if f.path == "Astral.pods[0].rows[0].hvdc")
    pic = Picture(layout(cv.g, "svg"))
    feeders = {pic.texts(g)[0]: g for g in pic.with_text(r"^((56|72) x )?feeder ")}
    assert set(feeders) == {"feeder hvdc · side A", "feeder utility · side B",
                            "56 x feeder net_hvdc · side A", "56 x feeder net_utility · side B",
                            "72 x feeder mech_a · side A", "72 x feeder mech_b · side B"}
    # the facility's own consumers on the mechanical feeders: 109.41 MW at the peak hour
    # (tests/test_reference_facility.py), 109,407.0 / 144 = 759.8 kW on each of the 144 normally
    mech = pic.with_text(r"^facility consumers")
    assert mech and "109.4 MW at the peak hour" in pic.text(mech[0])
    assert "normal 759.8 kW" in pic.text(feeders["72 x feeder mech_a · side A"])
    # the switches are on the network feeders: 40,140.8 kW / 56 / 2 = 358.4 kW each normally
    net = pic.with_text(r"^network switches")
    assert net and "on the feeders with network = true" in pic.text(net[0])
    assert "normal 358.4 kW" in pic.text(feeders["56 x feeder net_hvdc · side A"])
    a, b = pic.text(feeders["feeder hvdc · side A"]), pic.text(feeders["feeder utility · side B"])
    assert "240 V DC · HVDC240" in a and "400 V AC 3-phase" in b
    assert "capacity 800 kW" in a and "capacity 800 kW" in b
    assert f"normal {hvdc.normal_w / 1e3:g} kW (40.8 %)" in a                # 652.8 kW / 2
    assert "other side down: 652.8 kW (81.6 %)" in a
    assert "dc" in pic.node(pic.title(feeders["feeder hvdc · side A"])).get("class")
    rect = [pic.text(g) for g in pic.with_text(r"^rectifier Rectifier")]
    assert f"{hvdc.rectifier_modules_needed} x 50 kW modules" in " ".join(rect)
    bat = [pic.text(g) for g in pic.with_text(r"^battery Battery240")]
    assert f"needs {round(hvdc.battery_required_ah):,} Ah" in " ".join(bat)
    supplies = pic.with_text(r"^side [AB] supply")
    assert len(supplies) == 2
    # each side: 1,024 rows' feeders, 56 network feeders and 72 mechanical feeders
    assert all("1,152 feeders" in pic.text(g) for g in supplies)
    assert pic.with_text(r"^16 x rack GpuRack \|.*40.8 kW peak each", cls="compute")
    # the 720 2N transformers of 2,500 kVA (stdlib.power.Transformer: P0 = 2,951 W and
    # Pk = 11,806 W each) carry the site's load at the peak hour, L, in apparent power at the
    # feeders' 95 % power factor: P0 + Pk (L / 0.95 / 720 / rating)^2 each
    (stage,) = cv.ctx.eng.cooling.facility.transformers
    site = stage.peak_load_w
    assert site == pytest.approx(cv.ctx.eng.cooling.peak.total_w
                                 - cv.ctx.eng.cooling.peak.transformers_w)
    p0 = 2.5e6 * 0.5 * (1 / 0.9953 - 1) / 2
    peak_loss = 720 * (p0 + 4 * p0 * (site / 0.95 / 720 / 2.5e6) ** 2)
    assert stage.peak_loss_w == pytest.approx(peak_loss)
    tx = pic.with_text(r"^transformers mv")
    assert tx and "720 x 2.5 MVA · two_n" in pic.text(tx[0])
    # 847.80 MW (tests/test_reference_facility.py) / 0.95 = 892.42 MVA, within one side's
    # 360 x 2.5 = 900 MVA
    assert site == pytest.approx(847.80e6, abs=0.01e6)
    assert "carries 847.8 MW at the peak hour" in pic.text(tx[0])
    assert site / 0.95 == pytest.approx(892.42e6, abs=0.01e6)
    assert "| 892.4 MVA at power factor 0.95 |" in pic.text(tx[0])
    assert f"{peak_loss / 1e6:.2f} MW at the peak" in pic.text(tx[0])
    # transformers -> each side's supply, supply -> rectifier / feeder, rectifier -> bus,
    # battery -> bus, feeders -> racks (or the network switches, or the facility's consumers),
    # for the rows', the network's and the mechanical feeders
    assert cv.edge_count == 18
    assert pic.all_text().count("326.4 kW") >= 2
    assert "2N: A + B" in pic.all_text()


@needs_dot
def test_feeder_loading_in_the_picture_is_the_reports():
    """The picture gives a feeder's loading as the report, the scenario matrix and E620/E621 do:
    the power through its conductors, its share over its own efficiency, over its capacity.
    Tutorial busway: 4 x 10.2 kW = 40.8 kW of racks, 97 % efficient, 45 kW capacity:
    40.8 / 0.97 = 42.06 kW = 93.47 % (it read 40.8 kW, 90.7 %; the report 93.47 %)."""
    from astral_dsl.outputs.report.sizing import engineering_tables

    path = REPO / "examples" / "tutorial_rack.astral"
    pic = picture(path, "power")
    (busway,) = pic.with_text(r"^feeder busway")
    text = pic.text(busway)
    assert "normal 42.1 kW (93.5 %)" in text, text
    assert "68 A at 42.1 kW" in text                 # the current: 42.06 kW at 415 V, pf 0.95
    assert "97 % efficient: 40.8 kW of load" in text
    eng = checked(str(path)).engineering
    cells = engineering_tables(eng).split('id="size-feeders"')[1].split("</tr>")[1]
    assert ">93.47<" in cells or 'data-v="93.47"' in cells, cells
    # the supply feeds the busway (42.06 kW) and the mechanical feeder (100 % efficient)
    mech = next(f for f in eng.cooling.facility.feeders)
    supply = 40.8 / 0.97 + mech.normal_w / 1e3
    (sup,) = pic.with_text(r"^supply")
    assert f"normal {supply:.1f} kW" in pic.text(sup), pic.text(sup)


@needs_dot
def test_reference_cooling_view():
    cv = context(REFERENCE, "cooling")
    loop = cv.ctx.eng.cooling.loops[0]
    pic = Picture(layout(cv.g, "svg"))
    cdu = pic.with_text(rf"^{loop.cdus} x CDU")
    assert cdu and f"needs {loop.cdus_needed} (n_plus_1)" in pic.text(cdu[0])
    lp = pic.with_text(r"^loop secondary · PG25")
    assert lp
    flow = f"{round(loop.flow_m3s * 60000):,} L/min"
    assert "40 °C supply → 50 °C return" in pic.text(lp[0]) and flow in pic.text(lp[0])
    warm, chilled = pic.with_text(r"^facility Warm · W32"), pic.with_text(r"^facility Chilled")
    assert warm and chilled
    assert "dry coolers alone 7,716 h a year, sharing 1,044 h" in pic.text(warm[0])
    assert "cooling towers alone" in pic.text(chilled[0])
    room = cv.ctx.air["Astral.pods[0].room"]
    assert pic.with_text(rf"^air room \|.*{round(room.flow_m3s):,} m³/s")
    assert "8 x 62.7 MW" in pic.all_text()          # warm water to the 8 pods' CDUs
    assert "8 x 20.9 MW" in pic.all_text()          # chilled water to the 8 pods' rooms
    assert f"PUE {cv.ctx.eng.cooling.pue:.3f}" in pic.all_text()
    rack = pic.with_text(r"^16 x rack GpuRack", cls="compute")
    assert "30.6 kW to liquid (75 %) · 10.2 kW to air each" in pic.text(rack[0])


@needs_dot
@pytest.mark.parametrize("view", VIEWS)
def test_reference_svg_is_small(view):
    pic = picture(REFERENCE, view)
    assert len(pic.data) < 2_000_000


# ---- violations and scenarios -------------------------------------------------------------------

RED_FILL = "#ffebee"
GREY_FILL = "#eeeeee"


@needs_dot
def test_violations_are_red_with_their_code_in_the_tooltip():
    # 5 hosts per rack: 51 kW racks over the 45 kW busway (E500), rows over their feeders (E621)
    sets = (("hosts_per_rack", "5"),)
    pic = picture(REFERENCE, "power", sets=sets)
    red = pic.nodes("violation")
    assert red
    racks = [g for g in red if pic.texts(g)[0].startswith("16 x rack GpuRack")]
    assert racks and "E500" in pic.tooltip(racks[0]) and RED_FILL in pic.fills(racks[0])
    assert "▲ E500" in pic.texts(racks[0])
    feeders = [g for g in red if pic.texts(g)[0].startswith("feeder ")]
    assert len(feeders) == 2 and all("E621" in pic.tooltip(g) for g in feeders)
    rows = [c for c in pic.clusters("violation") if "128 x row GpuRow" in pic.text(c)]
    assert rows and "E500" in pic.tooltip(rows[0])           # the row's own check
    assert "problems" in pic.all_text() and "E621" in pic.all_text()
    # the same design without the override has none
    assert not picture(REFERENCE, "power").nodes("violation")


@needs_dot
def test_transformers_too_few_are_red_with_e634(tmp_path):
    path = tmp_path / "few.astral"
    text = REFERENCE.read_text()
    assert "Transformer(units = 720)" in text
    path.write_text(text.replace("Transformer(units = 720)", "Transformer(units = 600)"))
    pic = picture(path, "power")
    tx = pic.with_text(r"^transformers mv")
    assert tx and "E634" in pic.tooltip(tx[0]) and RED_FILL in pic.fills(tx[0])


@needs_dot
def test_violation_on_a_tier(tmp_path):
    text = REFERENCE.read_text().replace("down = 64 x 400 Gb/s, up = 64 x 400 Gb/s",
                                         "down = 64 x 400 Gb/s, up = 32 x 400 Gb/s")
    path = tmp_path / "over.astral"
    path.write_text(text)
    pic = picture(path, "cluster")
    red = pic.with_text(r"^agg · rail", cls="violation")
    assert len(red) == 8 and all("E602" in pic.tooltip(g) for g in red)
    assert not pic.with_text(r"^tor · rail", cls="violation")
    table = pic.node("tiers")
    assert "violation" in table.get("class")


@needs_dot
def test_scenario_greys_the_failed_feeder_and_shows_the_other_side_carrying_all():
    pic = picture(REFERENCE, "power", scenario="hvdc_lost")
    hvdc = pic.with_text(r"^feeder hvdc")[0]
    assert "failed" in hvdc.get("class") and GREY_FILL in pic.fills(hvdc)
    assert "failed: carries nothing" in pic.text(hvdc)
    utility = pic.with_text(r"^feeder utility")[0]
    assert "failed" not in utility.get("class")
    # the row's 652.8 kW through the utility feeder's own 97 % conversion: 673.0 kW = 84.1 % of
    # its 800 kW (as the report and E620 count it)
    assert "carries 673 kW (84.1 %)" in pic.text(utility)
    assert "97 % efficient: 652.8 kW of load" in pic.text(utility)
    assert "under scenario `hvdc_lost`" in pic.all_text()
    # with its partner down nothing backs it: no "other side down" line (it read "other side
    # down: 673 kW", what it carries now, with the other side down already)
    assert "down:" not in pic.text(utility)


@needs_dot
def test_under_a_scenario_a_feeder_group_shows_what_one_more_failure_leaves_it():
    # sizing.astral under one_feeder_down: 2 of row 0's 3 feeders carry its 367.2 kW, 183.6 kW
    # each (61.2 % of 300 kW); one more down, the last carries all of it
    pic = picture(REPO / "examples" / "sizing.astral", "power", scenario="one_feeder_down")
    texts = [pic.text(g) for g in pic.with_text(r"^3 x feeder hvdc")]
    assert any("carries 183.6 kW (61.2 %)" in t and "one more down: 367.2 kW (122.4 %)" in t
               for t in texts), texts


@needs_dot
def test_scenario_plane_b_down_greys_plane_b_only():
    pic = picture(REFERENCE, "pod", "Astral.pods[0]", scenario="plane_b_down")
    failed = pic.nodes("failed")
    assert len(failed) == 16                          # tor B and agg B of 8 rails
    assert all(re.match(r"^(tor|agg) B$", pic.texts(g)[0]) for g in failed)
    assert len(pic.edges("failed")) == 8 + 8 + 8      # their host, agg and core links
    rack = picture(REFERENCE, "rack", scenario="plane_b_down")
    assert len(rack.edges("failed")) == 32 and len(rack.edges("network")) == 32
    cluster = picture(REFERENCE, "cluster", scenario="plane_b_down")
    assert "(4,096 down)" in cluster.all_text()


@needs_dot
def test_scenario_failing_one_rail_of_a_tier(tmp_path):
    dgx = tmp_path / "dgx_superpod.astral"
    dgx.write_text((REPO / "examples" / "dgx_superpod.astral").read_text()
                   + "scenario spine_rail_0_leaf_down { fail SuperPOD.fabric.rail[0].leaf }\n")
    pic = picture(dgx, "cluster", scenario="spine_rail_0_leaf_down")
    failed = pic.nodes("failed")
    assert [pic.texts(g)[0] for g in failed] == ["leaf · rail 0"]
    single = REPO / "examples" / "single_pod.astral"
    pic = picture(single, "pod", scenario="tor_plane_a_rail_3")
    assert [pic.texts(g)[0] for g in pic.nodes("failed")] == ["tor A"]


@needs_dot
def test_one_switch_or_one_pods_tier_greys_only_what_it_names(tmp_path):
    ref = tmp_path / "ref.astral"
    ref.write_text(REFERENCE.read_text()
                   + "scenario one_tor { fail Astral.fabric.pod[3].rail[4].plane[A].tor[17] }\n"
                   + "scenario pod3_agg { fail Astral.fabric.pod[3].agg }\n")
    named = "scenario: Astral.fabric.pod[3].rail[4].plane[A].tor[17] failed"
    # one ToR of the 16 x 512 the pod view's tor nodes draw: nothing greys, its node names it
    pod3 = picture(ref, "pod", "Astral.pods[3]", scenario="one_tor")
    assert pod3.nodes("failed") == []
    marked = pod3.with_text(re.escape(named))
    assert [pod3.texts(g) for g in marked] == [["tor A", "64 x Switch51T", named]]
    assert pod3.tooltip(marked[0]).startswith("tier tor rail 4 plane A:")
    # another pod's view shows nothing of it; the cluster view names it on its tier only
    assert picture(ref, "pod", "Astral.pods[2]", scenario="one_tor").with_text("scenario:") == []
    cluster = picture(ref, "cluster", scenario="one_tor")
    assert cluster.nodes("failed") == [] and len(cluster.with_text(re.escape(named))) == 1
    # all of pod 3's aggs: its 16 agg nodes grey (8 rails x 2 planes), pod 2's stay as they are
    pic = picture(ref, "pod", "Astral.pods[3]", scenario="pod3_agg")
    assert len(pic.nodes("failed")) == 16
    assert all(pic.texts(g)[0].startswith("agg") for g in pic.nodes("failed"))
    other = picture(ref, "pod", "Astral.pods[2]", scenario="pod3_agg")
    assert other.nodes("failed") == [] and other.with_text("scenario:") == []


@needs_dot
def test_what_a_scenario_breaks_is_red(tmp_path):
    text = REFERENCE.read_text().replace(
        "fail Astral.pods[0].rows[0].hvdc\n",
        "fail Astral.pods[0].rows[0].hvdc\n  set Astral.pods[0].rows[0].utility.capacity = 600 kW\n")
    path = tmp_path / "weak.astral"
    path.write_text(text)
    pic = picture(path, "power", scenario="hvdc_lost")
    utility = pic.with_text(r"^feeder utility")[0]
    assert "violation" in utility.get("class") and "E620" in pic.tooltip(utility)
    assert "failed" in pic.with_text(r"^feeder hvdc")[0].get("class")
    assert "E680" in pic.all_text()                    # the required scenario breaks
    # without the scenario, the baseline holds: nothing red on the feeders
    assert not picture(path, "power").with_text(r"^feeder", cls="violation")


# ---- names ----------------------------------------------------------------------------------------

def test_name_resolution_and_its_diagnostics():
    c = checked(str(REFERENCE))
    g = render(c.design, "rack", "Astral.pods[7].rows[127].racks[15]", checked=c)
    assert isinstance(g, graphviz.Digraph)
    assert "Astral.pods[7].rows[127].racks[15]" in g.source
    assert "#63 of 64" in g.source                     # the last rack of the pod: the last ToR
    g = render(c.design, "pod", "pods[2]", checked=c)  # relative to the only site
    assert "Astral.pods[2]" in g.source
    cases = [("Astral.podz[3]", "E209", "did you mean `pods`?"),
             ("Astrl.pods[1]", "E200", "did you mean `Astral`?"),
             ("Astral.pods[8]", "E214", None),
             ("Astral.pods", "E702", "Astral.pods[0]"),
             ("Astral.pods[1", "E105", None)]
    for name, code, hint in cases:
        with pytest.raises(RenderError) as err:
            render(c.design, "pod", name, checked=c)
        assert err.value.diagnostic.code == code, name
        if hint:
            assert hint in (err.value.diagnostic.hint or ""), err.value.diagnostic
    with pytest.raises(RenderError) as err:
        render(c.design, "rack", "Astral.pods[1]", checked=c)
    assert err.value.diagnostic.code == "E702" and "--view pod" in err.value.diagnostic.hint
    # a path is a flag's text, not a file: E105 said "the file ends at line 1"
    said = {}
    for name in ("Astral.pods[1", "Astral.pods[1] +", "Astral.pods[1]]"):
        with pytest.raises(RenderError) as err:
            render(c.design, "pod", name, checked=c)
        said[name] = (err.value.diagnostic.message, err.value.diagnostic.hint)
    assert said == {
        "Astral.pods[1": ("--name Astral.pods[1: this `[` is never closed: the path ends before "
                          "its `]`", "close it with `]`, e.g. `Astral.pods[1]`"),
        "Astral.pods[1] +": ("--name Astral.pods[1] +: the path stops in the middle",
                             "complete it, or give a path such as `Site.pods[0]`"),
        "Astral.pods[1]]": ("--name Astral.pods[1]]: unexpected `]`; expected the end of the "
                            "path", "write a path such as `Site.pods[0]`")}
    with pytest.raises(RenderError) as err:
        render(c.design, "cluster", scenario="hvdc_lst", checked=c)
    assert err.value.diagnostic.code == "E216" and "hvdc_lost" in err.value.diagnostic.hint


def test_render_draws_the_checked_design():
    ws = astral_dsl.compile(REFERENCE)
    g = render(ws.design, "power", checked=astral_dsl.check(ws))
    assert "feeder hvdc" in g.source and "326.4 kW" in g.source
    with pytest.raises(TypeError, match="checked"):       # a picture only presents
        render(ws.design, "power")


# ---- the command line -----------------------------------------------------------------------------

def run(args, env=None):
    return _astral_cli(*args, cwd=REPO, env=env)


@needs_dot
@pytest.mark.parametrize("ext", ["svg", "png", "pdf", "dot"])
def test_cli_writes_each_format(tmp_path, ext):
    out = tmp_path / f"cluster.{ext}"
    assert main(["render", str(REFERENCE), "-o", str(out)]) == 0
    data = out.read_bytes()
    magic = {"svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF", "dot": b"digraph"}[ext]
    assert data.startswith(magic)


def test_cli_missing_dot_is_a_diagnostic(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "x.svg")], env)
    assert r.returncode == 2
    assert "error[E700]" in r.stderr and "apt-get install graphviz" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.svg").exists()
    # DOT needs no dot
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "x.dot")], env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.dot").read_text().startswith("digraph")


def test_layout_without_dot_raises_e700(monkeypatch):
    monkeypatch.setenv("PATH", "")
    c = checked(str(REFERENCE))
    with pytest.raises(RenderError) as err:
        write(render(c.design, "cluster", checked=c), "/nonexistent/x.svg")
    assert err.value.diagnostic.code == "E700"


def _dot_fails(monkeypatch, stderr: bytes):
    """`dot` exits 1 with `stderr`, as the graphviz package reports it (no process is run; the
    layouts the real `dot` made before in this process are not this `dot`'s: none kept)."""
    from astral_dsl.outputs.render import laid

    def pipe(self, *args, **kwargs):
        raise graphviz.CalledProcessError(1, ["dot", "-Tsvg"], output=b"", stderr=stderr)

    monkeypatch.setattr(graphviz.Digraph, "pipe", pipe)
    monkeypatch.setattr("astral_dsl.outputs.render.dot_available", lambda: True)
    monkeypatch.setattr(laid, "_KEPT", laid.kept())


def test_dot_rejecting_astrals_picture_is_an_internal_error(tmp_path, monkeypatch, capsys):
    """`dot` cannot read the DOT text astral wrote: astral's bug, E000 and exit 3 (docs/language.md
    19.4), not a diagnostic of the design (it used to be E701)."""
    _dot_fails(monkeypatch, b"Error: <stdin>: syntax error in line 12 near '}'\n")
    assert main(["render", str(REFERENCE), "-o", str(tmp_path / "x.svg")]) == 3
    err = capsys.readouterr().err
    assert "error[E000]" in err and "syntax error in line 12" in err and "E701" not in err
    assert not (tmp_path / "x.svg").exists()


def test_a_broken_graphviz_is_e701_exit_2(tmp_path, monkeypatch, capsys):
    """A Graphviz without the format's plugin is the machine's problem, as no `dot` is (E700):
    E701 with exit 2 and a hint on the installation, never exit 3."""
    _dot_fails(monkeypatch, b'Format: "png" not recognized. Use one of: canon dot svg\n')
    assert main(["render", str(REFERENCE), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "error[E701]" in err and '"png" not recognized' in err and "`dot -Tpng`" in err
    assert "E000" not in err and not (tmp_path / "x.png").exists()


@needs_dot
def test_cli_errors(tmp_path):
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "x.jpg")])
    assert r.returncode == 2 and "end it with .svg, .png, .pdf or .dot" in r.stderr
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "no" / "x.svg")])
    assert r.returncode == 2 and "error[E703]" in r.stderr
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "x.svg"), "--view", "rack",
             "--name", "Astral.pods[0].rows[0].rack[0]"])
    assert r.returncode == 2 and "error[E209]" in r.stderr and "`racks`" in r.stderr
    r = run(["render", str(REFERENCE), "-o", str(tmp_path / "x.svg"), "--set",
             "hosts_per_rack=5"])
    assert r.returncode == 1 and (tmp_path / "x.svg").exists()    # drawn, with errors in red
    assert "error[E500]" in r.stderr and "drawn in red" in r.stdout
    bad = tmp_path / "bad.astral"
    bad.write_text("site S { power_limit = 45 GB }\n")
    r = run(["render", str(bad), "-o", str(tmp_path / "bad.svg")])
    assert r.returncode == 1 and "error[E304]" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "bad.svg").exists()


def test_cooling_title_names_both_kinds_of_pump():
    """The title read "pumps 184.5 W" (the loop's alone) while the circuits' pumps drew 357.1 W
    more. The tutorial's loop: 30.6 kW at 10 K, water at 40 degC (992.2 kg/m^3, 4,179.4 J/kg/K):
    30,600 / (992.2 x 4,179.4 x 10) = 0.7379 L/s, x 150 kPa / 60 % = 184.5 W."""
    cv = context(REPO / "examples" / "tutorial_rack.astral", "cooling")
    facility = cv.ctx.eng.cooling.average.facility_pumps_w
    assert facility == pytest.approx(sum(cy.circuit.pump_w
                                         for cy in cv.ctx.eng.cooling.facility.circuits))
    assert f"secondary pumps 184.5 W · facility-water pumps {facility:.1f} W" in cv.g.source


# ---- power warnings marked on the parts whose numbers they understate -------------------------
UNDERSTATED = """
gpu G { power = 700 W }
gpu Z { }
nic N { ports = 1, port_speed = 400 Gb/s }
switch Sw { ports = 64, port_speed = 400 Gb/s, power = 750 W }
switch Sp { ports = 64, port_speed = 400 Gb/s }
medium M { type = optics, reach = 100 m, speed = 400 Gb/s }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
host HZ { gpus = 8 x Z, nics = 8 x N }
rack R { hosts = 4 x H }
rack RZ { hosts = 4 x HZ }
row W {
  racks = [1 x R, 1 x RZ]
  feeder f { current = ac, voltage = 415 V, phases = 3, power_factor = 95 %,
             capacity = 200 kW, serves = racks }
}
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s,
              up = 32 x 400 Gb/s, medium = M, length = 10 m }
  tier spine { switch = Sp, scope = site, down = 64 x 400 Gb/s, medium = M, length = 10 m }
}
site S {
  rows = 1 x W, fabric = F
  feeder net { current = ac, voltage = 415 V, phases = 3, power_factor = 95 %,
               capacity = 50 kW, network = true }
}
"""


def _marks(source: str) -> Dict[str, str]:
    """The first bold line of every marked node or cluster -> its ▲ codes."""
    out = {}
    for line in source.splitlines():
        codes = re.search(r"<B>▲ ([A-Z0-9, ]+)</B>", line)
        title = re.search(r"<B>([^<▲]+)</B>", line)
        if codes and title:
            out[title.group(1)] = codes.group(1)
    return out


def test_power_warnings_mark_what_they_understate():
    # W606: the spine's 4 switches declare no power: the spine (its span) and the network's
    # feeder `net` (6 kW of leaves, none of the spines'). W607: the modules of both tiers have
    # no power: every leaf and the spine. W690: gpu Z and nic N count 0 W in host HZ, which
    # declares no power: rack RZ, row W, site S and the row's feeder `f` (40 kW: rack R's
    # declared 4 x 10 kW, RZ's 0 W); rack R's hosts declare their power: not marked.
    c = astral_dsl.check(astral_dsl.compiles(UNDERSTATED, name="understated.astral"))
    power = _marks(render(c.design, "power", checked=c).source)
    assert "W606" in power["feeder net"] and "W607" in power["feeder net"]
    assert "W690" not in power["feeder net"]
    assert "W690" in power["feeder f"] and "W606" not in power["feeder f"]
    assert power["1 x rack RZ"] == "W690" and power["1 x row W"] == "W690"
    assert "1 x rack R" not in power
    cluster = _marks(render(c.design, "cluster", checked=c).source)
    assert cluster["spine"] == "W606, W607"
    assert cluster["leaf · rail 0"] == "W607"


def test_a_sites_picture_lists_its_sites_problems_and_the_design_wide_ones():
    # two sites, neither declaring `utilization`: W627 at each site's declaration (A's on line 3,
    # B's on line 4); W626 (the racks on no feeder: rack R, which both sites hold) and W653 (no
    # cooling: names `A` and `B`) are about both. A's picture lists A's W627, not B's, and B's
    # the reverse; each lists W626 and W653
    text = ("host H { power = 10 kW }\nrack R { hosts = 4 x H }\n"
            "site A { racks = 1 x R, auxiliary = 1 kW }\n"
            "site B { racks = 1 x R, auxiliary = 1 kW }\n")
    c = astral_dsl.check(astral_dsl.compiles(text, name="two.astral"))
    assert sorted(d.code for d in c.diagnostics) == ["W626", "W627", "W627", "W653"]
    for site, other in (("A", "B"), ("B", "A")):
        drawn = canvas(c.design, "power", site, None, c)
        listed = [(d.code, d.span.start.line) for d in drawn.ctx.shown_problems()]
        own = 3 if site == "A" else 4
        assert sorted(listed) == [("W626", 2), ("W627", own), ("W653", 3)]
        legend = drawn.g.source
        assert f"site `{site}` declares no `utilization`" in legend
        assert f"site `{other}` declares no `utilization`" not in legend
    # one site: every problem, as before
    one = astral_dsl.check(astral_dsl.compiles(text[:text.index("site B")], name="one.astral"))
    drawn = canvas(one.design, "power", None, None, one)
    assert len(drawn.ctx.shown_problems()) == len([d for d in one.diagnostics
                                                   if d.severity.name != "INFO"])


@needs_dot
def test_a_feeder_rated_in_kva_is_drawn_with_its_rating_as_stated(tmp_path):
    """A feeder's `capacity = 120 kVA` at power factor 0.9 holds 120 x 0.9 = 108 kW (analyses/
    feeders.py rated_capacity): the power view said "capacity 108 kW" beside the size report's
    "120.0 kVA"; it gives the rating as stated and the real power it holds. 10 racks of 10 kW:
    100 kW, 100 / 108 = 92.6 % of it."""
    from test_power_ac import DESIGN

    path = tmp_path / "ac.astral"
    path.write_text(DESIGN.replace("capacity = 200 kW", "capacity = 120 kVA"), encoding="utf-8")
    pic = picture(path, "power")
    (feeder,) = pic.with_text(r"^feeder b")
    text = pic.text(feeder)
    assert "capacity 120 kVA (108 kW)" in text and "normal 100 kW (92.6 %)" in text, text


@needs_dot
def test_a_side_supply_draws_its_rectifiers_losses(tmp_path):
    """A side's supply feeds the rectifiers of its DC feeders: it draws their losses too, as the
    facility's conversion losses and the transformers count them, so the sides add up to what
    the transformers carry. Two racks of 100 kW on a 240 V DC feeder behind 95 % rectifiers
    (4 modules of 100 kW at 1 % no load: 1 kW each) on side A and a 100 % AC feeder on side B:
    side A supplied 100 kW (the DC feeder's 100 kW share alone; side B's 100 kW), now
    100 / 0.95 + 4 = 109.3 kW. Under a scenario that fails one of side B's two mechanical
    feeders, that side counted both at the survivor's share (count, not the ones running)."""
    src = tmp_path / "sides.astral"
    src.write_text(
        "gpu G { power = 1 kW }\n"
        "host H { gpus = 8 x G, power = 10 kW }\n"
        "rack R { hosts = 10 x H }\n"
        "standard DC240 { nominal = 240 V, min = 192 V, max = 288 V, current = dc }\n"
        "rectifier Rect { module = 100 kW, modules = 4, redundancy = n_plus_1,\n"
        "  efficiency = 95 %, no_load_loss = 1 % }\n"
        "site S {\n"
        "  racks = 2 x R\n"
        "  auxiliary = 40 kW\n"
        "  transformer mv { capacity = 1 MW, count = 2, redundancy = two_n,\n"
        "    no_load_loss = 1 kW, load_loss = 5 kW, power_factor = 100 % }\n"
        "  feeder a { current = dc, voltage = 240 V, standard = DC240, side = A,\n"
        "    capacity = 300 kW, rectifier = Rect, serves = racks }\n"
        "  feeder b { current = ac, voltage = 400 V, phases = 3, power_factor = 100 %, side = B,\n"
        "    capacity = 300 kW, efficiency = 100 %, serves = racks }\n"
        "  feeder ma { current = ac, voltage = 400 V, phases = 3, power_factor = 100 %,\n"
        "    side = A, capacity = 100 kW, efficiency = 100 %, mechanical = true }\n"
        "  feeder mb { current = ac, voltage = 400 V, phases = 3, power_factor = 100 %,\n"
        "    side = B, count = 2, capacity = 100 kW, efficiency = 100 %, mechanical = true }\n"
        "}\n"
        "scenario mb_one { fail S.mb }\n")

    def supplies(scenario=""):
        pic = picture(src, "power", scenario=scenario)
        out = {}
        for side in "AB":
            (g,) = pic.with_text(rf"^side {side} supply")
            out[side] = re.search(r"(?:normal|carries) ([\d.]+) kW", pic.text(g)).group(1)
        (tx,) = pic.with_text(r"^transformers mv")
        return out, re.search(r"carries ([\d.]+) kW at the peak hour", pic.text(tx)).group(1)

    # the facility's consumers: the 40 kW of auxiliaries, 20 kW on side A's feeder and 10 kW on
    # each of side B's two; the racks' 200 kW, 100 kW on each side
    sides, carried = supplies()
    assert sides == {"A": "129.3", "B": "120"}, sides        # A: 100 / 0.95 + 4 + 20
    assert carried == "249.3", carried
    # one of side B's mechanical feeders down: its survivor carries B's 20 kW, not 2 x 20 kW
    sides, carried = supplies("mb_one")
    assert sides == {"A": "129.3", "B": "120"}, sides
    assert carried == "249.3", carried
