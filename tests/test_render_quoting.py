"""A picture's DOT text is quoted in linear time (outputs/render/labels.py, `Dot`): graphviz's own
quoting finds the quotes to escape with a regex that tries every backslash of a run, quadratic in
a run with no quote after it (a tooltip of 4,000 backslashes from a design, 16,000 once escaped,
took about 3 s of CPU a node). `Dot` quotes as graphviz does, byte for byte, and what is drawn
is the text given, whatever its backslashes, quotes and entities."""
from __future__ import annotations

import random
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import graphviz
import pytest

import astral_dsl
from astral_dsl.outputs.render import VIEWS, layout, render
from astral_dsl.outputs.render.labels import (Dot, a_list, attr_list, dot_label, dot_tooltip,
                                              label, quote, quote_edge)

REPO = Path(__file__).resolve().parents[1]
SVG, XLINK = "{http://www.w3.org/2000/svg}", "{http://www.w3.org/1999/xlink}"
# the characters graphviz's quoting looks at: backslashes, quotes, the ID's and HTML's
ALPHABET = ["\\", "\\", '"', "a", "_", "1", ".", "-", "<", ">", " ", "&", ":", "\n", "é"]
# graphviz's warning of a string ending in an odd number of backslashes (a test compares it)
QUIET = pytest.mark.filterwarnings("ignore::graphviz.exceptions.DotSyntaxWarning")


def _words(count: int, seed: int):
    rng = random.Random(seed)
    words = ["", "node", "Graph", "-4.2", ".5", "<<b>x</b>>", "<a>", "\\", "\\\\", '"', '\\"']
    words += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12)))
              for _ in range(count)]
    return words


@QUIET
def test_the_quoting_is_graphvizs_byte_for_byte():
    """Names, ports and attribute lists, plain text and text marked not HTML, quoted as
    graphviz.quoting quotes them, with its warning of an odd number of trailing backslashes."""
    for word in _words(3000, 67):
        for text in (word, graphviz.nohtml(word)):
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                mine = quote(text)
            with warnings.catch_warnings(record=True) as theirs:
                warnings.simplefilter("always")
                expected = graphviz.quoting.quote(text)
            assert mine == expected, repr(text)
            assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
            assert quote_edge(text) == graphviz.quoting.quote_edge(text), repr(text)
    words = _words(200, 68)
    kwargs = dict(zip(words[::2], words[1::2]))
    pairs = list(zip(words[1::2], words[::2]))
    for lab in (None, "a b", '\\"'):
        assert a_list(lab, kwargs=kwargs, attributes=pairs) == \
            graphviz.quoting.a_list(lab, kwargs=kwargs, attributes=pairs)
        assert attr_list(lab, kwargs=kwargs, attributes=dict(pairs)) == \
            graphviz.quoting.attr_list(lab, kwargs=kwargs, attributes=dict(pairs))
    assert attr_list() == graphviz.quoting.attr_list() == ""


def _drawn(g):
    g.attr(tooltip=dot_tooltip("graph"))
    for name, text in (("a b", '\\"x\\'), ("c", "\\" * 50 + "N"), ("d:p", 'q"&<b>')):
        g.node(name, label=label([text], "#000000"), tooltip=dot_tooltip(text))
    with g.subgraph(name="cluster_x") as sub:
        sub.attr(label=label(["\\\\"], "#000000"), tooltip=dot_tooltip('"\\\\"'))
        sub.node("e", tooltip=dot_tooltip("\\ \\\\ \\\\\\"))
    g.edge("a b", "c", label=dot_label("\\" * 9), tooltip=dot_tooltip("\\" * 9))
    g.edges([("c", "d:p"), ("e", "c")])
    return g


@QUIET
def test_a_dot_graph_writes_the_digraphs_text():
    """The same calls on a Dot and on a graphviz.Digraph write the same DOT text, subgraphs
    (Dots too) included."""
    assert _drawn(Dot(name="g")).source == _drawn(graphviz.Digraph(name="g")).source


def test_every_view_is_drawn_on_a_dot_graph():
    """The canvas draws on a Dot (a graphviz.Digraph): the views' text is quoted in linear
    time."""
    checked = astral_dsl.check(astral_dsl.compile(REPO / "examples" / "tutorial_rack.astral"))
    for view in VIEWS:
        drawing = render(checked.design, view, None, None, checked)
        assert type(drawing) is Dot and isinstance(drawing, graphviz.Digraph), view


TEXTS = ["a\\b", "\\N \\G \\L \\E \\T \\H \\l \\n \\r", "\\", "ends in \\", "\\\\ two",
         '"quoted"', '\\"', '\\\\"', "a & b &amp; &#92; &lt;", "<b>not html</b>", "é ü 中",
         "\\" * 40 + '"' + "\\" * 41]


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_is_drawn_as_given(text):
    """Round trip through `dot`: the tooltips (a node's, an edge's, each line of a two-line
    one), the edge's plain label and the node's HTML-like label show the text given, no
    escString (`\\N`, `\\l`) or entity read, no backslash lost or doubled."""
    g = Dot(name="g")
    g.node("n", label=label([text], "#000000"), tooltip=dot_tooltip(f"{text}\n{text}"))
    g.node("m", label="m")
    g.edge("n", "m", label=dot_label(text), tooltip=dot_tooltip(text))
    root = ET.fromstring(layout(g, "svg"))
    titles = [a.get(f"{XLINK}title") for a in root.iter(f"{SVG}a")]
    assert titles == [f"{text}\n{text}", text]
    assert [t.text for t in root.iter(f"{SVG}text")] == [text, "m", text]
