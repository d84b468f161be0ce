"""Long names in a picture: a label line is at most LABEL_CHARS (96) characters, cut with an
ellipsis, and the node's or cluster's tooltip holds it in full (a 221-character template name
was drawn in full on the power view's rack node, widening the whole view)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.outputs.render import VIEWS, render

REPO = Path(__file__).resolve().parents[1]
LONG = "R" + "x" * 220                       # a rack template of 221 characters


@pytest.fixture(scope="module")
def checked():
    text = (REPO / "examples" / "tutorial_rack.astral").read_text()
    ws = astral_dsl.compiles(re.sub(r"\bRack\b", LONG, text), name="examples/long.astral",
                             root="examples")
    return ws, astral_dsl.check(ws)


def _labels(source: str):
    """The HTML-like labels' texts of the DOT source, tags left out."""
    return [re.sub(r"<[^>]*>", "\n", m) for m in re.findall(r"label=<(.*?)>\s*(?:\w+=|\])",
                                                             source)]


@pytest.mark.parametrize("view", VIEWS)
def test_no_label_line_holds_the_long_name_in_full(checked, view):
    ws, c = checked
    source = render(ws.design, view, checked=c).source
    lines = [t for label in _labels(source) for t in label.split("\n")]
    assert not [t for t in lines if LONG in t], view
    assert max(len(t) for t in lines) <= 96, view


def test_the_power_views_rack_node_is_cut_and_its_tooltip_holds_the_name(checked):
    ws, c = checked
    source = render(ws.design, "power", checked=c).source
    (node,) = [line for line in source.splitlines() if "1 x rack R" in line and "->" not in line]
    # "1 x rack " (9 characters) + 86 of the name + "…": 96 characters
    assert "<B>1 x rack " + LONG[:86] + "…</B>" in node
    assert re.search(r'tooltip="rack Tutorial\.racks\[0\]\\n1 x rack ' + LONG + '"', node)


def test_a_name_past_dots_longest_string_is_cut_in_the_tooltips_and_drawn():
    """Graphviz's lexer refuses a quoted string past 16,384 characters: a site named by 20,000
    characters went whole into the tooltips, and every view was E000 (`dot` rejected the DOT
    text; at 60,000 it stopped reading it). A plain attribute is cut to MAX_QUOTED characters
    as quoted, escapes whole, with an ellipsis."""
    import graphviz

    from astral_dsl.outputs.render import layout
    from astral_dsl.outputs.render.labels import MAX_QUOTED, dot_tooltip

    long = "N" * 20_000
    text = (REPO / "examples" / "tutorial_rack.astral").read_text()
    ws = astral_dsl.compiles(text.replace("Tutorial", long), name="examples/long.astral",
                             root="examples")
    checked = astral_dsl.check(ws)
    for view in VIEWS:
        drawing = render(checked.design, view, None, None, checked)
        assert layout(drawing, "svg").startswith(b"<?xml")
    # escapes are kept whole: a backslash is four bytes, `&` five, a quote two as quoted, é two
    # graphviz quotes a text that is no DOT ID and holds no `"` as itself in double quotes (its
    # regex rewrites only a quote and the backslashes before it), as a short run of the
    # backslashes' tooltip shows: that one, 16,000 backslashes, is quoted so here, not by the
    # regex, quadratic in a run of backslashes (about 3 s of CPU); the others by graphviz
    short = dot_tooltip("\\" * 300)
    assert graphviz.quoting.quote(short) == f'"{short}"'
    for unit in ("\\", "&", '"', "é", "ab\ncd"):
        tip = dot_tooltip(unit * 40_000)
        if unit == "\\":
            assert '"' not in tip and set(tip) == {"\\", "…"}
            quoted = f'"{tip}"'
        else:
            quoted = graphviz.quoting.quote(tip)
        assert len(quoted.encode()) <= MAX_QUOTED + 8 and tip.endswith("…"), (unit, len(quoted))
        # the line `g.node("a", tooltip=tip)` writes, from the quoted text above: graphviz's
        # quoting is quadratic in a run of backslashes (its regex for unescaped quotes), 16,000
        # of them about 3 s of CPU a call, and g.node would quote the tip again
        g = graphviz.Digraph()
        g.body.append(f"\ta [tooltip={quoted}]\n")
        assert layout(g, "svg").startswith(b"<?xml")
    assert dot_tooltip("a\\b & c") == "a\\\\\\\\b &amp; c"          # as before, when short
