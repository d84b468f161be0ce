"""A picture `dot` laid out before in this process is not laid out again (render/laid.py): the
same bytes without a second `dot`, unless the `dot` is another, the format carries its time
(PDF), or the picture was dropped from the last 128 kept; a `dot` that failed leaves nothing."""
from __future__ import annotations

import os
import shutil

import graphviz
import pytest

from astral_dsl.outputs import render
from astral_dsl.outputs.render import laid, layout


@pytest.fixture
def runs(monkeypatch):
    """The `dot` runs of the test (graphviz's pipe, counted), none kept before it."""
    count = [0]
    pipe = graphviz.Digraph.pipe

    def counted(self, *args, **kwargs):
        count[0] += 1
        return pipe(self, *args, **kwargs)

    monkeypatch.setattr(graphviz.Digraph, "pipe", counted)
    monkeypatch.setattr(laid, "_KEPT", laid.kept())
    return count


def _picture(label: str) -> graphviz.Digraph:
    g = graphviz.Digraph()
    g.node("a", label)
    g.edge("a", "b")
    return g


def test_the_same_picture_is_laid_out_once(runs):
    first = layout(_picture("one"), "svg")
    again = layout(_picture("one"), "svg")
    assert runs[0] == 1 and again == first and first.startswith(b"<?xml")
    # what `dot` itself gives, not something else
    assert first == _picture("one").pipe(format="svg", engine="dot", quiet=True)
    assert layout(_picture("two"), "svg") != first and runs[0] == 3
    png = layout(_picture("one"), "png")
    assert layout(_picture("one"), "png") == png and png.startswith(b"\x89PNG") and runs[0] == 4
    # another dpi is another picture
    assert layout(_picture("one"), "png", dpi=30) != png and runs[0] == 5


def test_another_dot_lays_it_out_again(runs, tmp_path, monkeypatch):
    layout(_picture("one"), "svg")
    real = shutil.which("dot")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "dot"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    layout(_picture("one"), "svg")
    assert runs[0] == 2
    # the same file changed is another dot too
    wrapper.write_text(f'#!/bin/sh\n# changed\nexec {real} "$@"\n')
    layout(_picture("one"), "svg")
    assert runs[0] == 3


def test_a_pdf_is_laid_out_each_time(runs):
    """A PDF carries the time it was written: it is `dot`'s each time, never kept."""
    assert layout(_picture("one"), "pdf").startswith(b"%PDF")
    layout(_picture("one"), "pdf")
    assert runs[0] == 2 and not laid._KEPT


def test_the_least_recently_used_pictures_are_dropped(runs, monkeypatch):
    """At most MAX_BYTES of pictures (32 MiB), each counted as at least a MAX_PICTURES'th of
    that (so at most 128 pictures), the least recently used dropped first (here 3 pictures, then
    fewer bytes than 3 pictures' SVG)."""
    assert (laid.MAX_PICTURES, laid.MAX_BYTES) == (128, 32 * 1024 * 1024)
    assert laid._KEPT.most == laid.MAX_BYTES
    monkeypatch.setattr(laid, "_KEPT", laid.kept(pictures=3))
    for label in ("0", "1", "2"):
        layout(_picture(label), "svg")
    layout(_picture("0"), "svg")                      # kept, and now the most recently used
    assert runs[0] == 3
    layout(_picture("3"), "svg")                      # drops "1", the least recently used
    assert len(laid._KEPT) == 3 and runs[0] == 4
    layout(_picture("0"), "svg")
    layout(_picture("2"), "svg")
    assert runs[0] == 4
    layout(_picture("1"), "svg")
    assert runs[0] == 5
    size = len(layout(_picture("1"), "svg"))
    monkeypatch.setattr(laid, "_KEPT", laid.kept(size=2 * size + size // 2))
    for label in ("0", "1", "4"):                     # two pictures' bytes fit, not three
        layout(_picture(label), "svg")
    assert len(laid._KEPT) == 2 and runs[0] == 8
    assert [data for _, data in laid._KEPT.items()] == [layout(_picture(label), "svg")
                                                       for label in ("1", "4")]
    assert runs[0] == 8
    # a picture larger than all the bytes kept is drawn and not kept
    monkeypatch.setattr(laid, "_KEPT", laid.kept(size=size // 2))
    assert layout(_picture("1"), "svg") == layout(_picture("1"), "svg") and runs[0] == 10
    assert not laid._KEPT


def test_a_failed_dot_leaves_nothing_kept(monkeypatch):
    """Whatever `dot` raised is raised each time, and the next `dot` that works lays it out."""
    monkeypatch.setattr(laid, "_KEPT", laid.kept())
    failing = [0]

    def pipe(self, *args, **kwargs):
        failing[0] += 1
        raise graphviz.CalledProcessError(1, ["dot"], output=b"", stderr=b"Error: a crash\n")

    with monkeypatch.context() as m:
        m.setattr(graphviz.Digraph, "pipe", pipe)
        for _ in range(2):
            with pytest.raises(render.RenderError) as err:
                layout(_picture("one"), "svg")
            assert err.value.diagnostic.code == "E701"
    assert failing[0] == 2 and not laid._KEPT
    assert layout(_picture("one"), "svg").startswith(b"<?xml") and len(laid._KEPT) == 1
