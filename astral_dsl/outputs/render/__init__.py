"""Pictures of a design with graphviz: `render(design, view)` returns a `graphviz.Digraph`
(pure: no file, no `dot` needed) and `write(digraph, path)` lays it out into SVG, PNG or PDF by
the file's extension (DOT needs no `dot` program).

Views:
- cluster: the site's pods, rails and switch tiers, collapsed with counts;
- pod:     one pod's ToR and Agg tiers per rail and plane, and its uplinks to the core;
- rack:    one rack's hosts, GPUs, NIC ports and the switch each port reaches;
- power:   the one-line diagram: feeders, rectifiers and batteries to rows and racks;
- cooling: facility water to CDUs, liquid loops and racks, and the air path.

Diagnostics are drawn on the parts they are about (red for errors, amber for warnings, the code
on the part and the message in its tooltip); under a scenario the failed parts are greyed out
and the numbers are those of the scenario."""
from __future__ import annotations

import os
import shutil
from typing import Optional

import graphviz

from astral_dsl.outputs.render.context import RenderError, build as build_context, render_error
from astral_dsl.outputs.render.laid import laid_out
from astral_dsl.outputs.render.names import locate
from astral_dsl.regularfile import output

VIEWS = ("cluster", "pod", "rack", "power", "cooling")
HIGHLIGHT_VIEWS = ("rack", "pod")
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
INSTALL_HINT = ("install Graphviz, which provides `dot`: `apt-get install graphviz` "
                "(Debian, Ubuntu), `dnf install graphviz`, `brew install graphviz`; or write "
                "the DOT text with `-o FILE.dot`, which needs no `dot`")

# view -> (kinds --name may name, default kinds in order of preference)
_TARGETS = {
    "cluster": (("site", "hall", "pod", "row", "block"), ("site",)),
    "pod": (("pod", "block", "row", "hall", "site"), ("pod", "block", "row", "hall", "site")),
    "rack": (("rack", "host"), ("rack", "host")),
    "power": (("site", "hall", "pod", "row", "block", "rack"), ("site",)),
    "cooling": (("site", "hall", "pod", "row", "block", "rack"), ("site",)),
}


def render(design, view: str = "cluster", name: Optional[str] = None,
           scenario: Optional[str] = None, checked=None, highlight=None) -> graphviz.Digraph:
    """The picture of one view as a graphviz.Digraph. `checked` (from pipeline.check, with the
    scenario among those run; a design with unknowns comes sized) is required: a picture only
    presents; `highlight`: the suspects of a diagnosis (its JSON's `suspects`), drawn in red
    by the rack and pod views.
    Raises RenderError (with a diagnostic) for an unknown view, name or scenario."""
    return canvas(design, view, name, scenario, checked, highlight).g


def canvas(design, view: str = "cluster", name: Optional[str] = None,
           scenario: Optional[str] = None, checked=None, highlight=None):
    """Like render(), returning the Canvas (the Digraph in `.g`, node and edge counts)."""
    if view not in VIEWS:
        raise render_error("E702", f"unknown view `{view}`", "views: " + ", ".join(VIEWS))
    if highlight is not None and view not in HIGHLIGHT_VIEWS:
        raise render_error("E702", f"--highlight draws on the {' and '.join(HIGHLIGHT_VIEWS)} "
                                   f"views, not `{view}`", "add --view rack or --view pod")
    ctx = build_context(design, checked, scenario, highlight)
    kinds, defaults = _TARGETS[view]
    located = locate(ctx.design, name, view, kinds, defaults)
    if len(ctx.design.roots) > 1:
        ctx.site = located.root
    from importlib import import_module

    module = import_module(f"astral_dsl.outputs.render.{view}")
    return module.build(ctx, located)


def format_of(path: str) -> Optional[str]:
    return FORMATS.get(os.path.splitext(path)[1].lower())


def dot_available() -> bool:
    return shutil.which("dot") is not None


def layout(digraph: graphviz.Digraph, fmt: str, dpi: Optional[int] = None) -> bytes:
    """The picture in `fmt` (svg, png, pdf) laid out by `dot`, or the DOT text for `dot`.
    Raises RenderError: E700 without `dot`, E701 when the Graphviz installed fails (a format it
    lacks, a crash); RuntimeError (an internal error) when `dot` cannot read what astral drew.
    A picture laid out before in this process by the same `dot` is not laid out again
    (laid.py)."""
    if fmt == "dot":
        return digraph.source.encode("utf-8")
    if not dot_available():
        raise render_error("E700", "Graphviz's `dot` program was not found on PATH: it lays out "
                                   "the picture", INSTALL_HINT)
    g = digraph
    if dpi and fmt == "png":
        g = digraph.copy()
        g.graph_attr["dpi"] = str(dpi)
    try:
        return laid_out(g.source, fmt, dpi,
                        lambda: g.pipe(format=fmt, engine="dot", quiet=True))
    except BrokenPipeError:
        # `dot` stopped reading the DOT text before its end: it refused what astral drew, as
        # below (this went up to the command, which took it for its own output's reader gone:
        # exit 0, nothing written, nothing said)
        raise RuntimeError("Graphviz's `dot` stopped reading the DOT text astral drew before "
                           "its end") from None
    except graphviz.ExecutableNotFound:
        raise render_error("E700", "Graphviz's `dot` program was not found on PATH: it lays out "
                                   "the picture", INSTALL_HINT) from None
    except graphviz.CalledProcessError as exc:
        err = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        said = err[-1] if err else f"exit status {exc.returncode}"
        if any("syntax error" in line for line in err):
            # `dot` cannot read the DOT text astral wrote: astral's bug (E000, exit 3)
            raise RuntimeError(f"Graphviz's `dot` rejected the DOT text astral drew: "
                               f"{said}") from None
        # the Graphviz installed is broken (a format plugin missing, a crash): the machine's
        raise render_error("E701", f"Graphviz's `dot` failed: {said}",
                           f"check the Graphviz installation (`dot -T{fmt}` must work); or "
                           f"write the DOT text with `-o FILE.dot`, which needs no `dot`") from None


def write(digraph: graphviz.Digraph, path: str, dpi: Optional[int] = None) -> int:
    """Write the picture to `path` in the format of its extension; returns the bytes written."""
    fmt = format_of(path)
    if fmt is None:
        raise render_error("E703", f"cannot tell the picture format of `{path}`",
                           "end the file name with .svg, .png, .pdf or .dot")
    data = layout(digraph, fmt, dpi)
    try:
        with open(output(path), "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise render_error("E703", f"cannot write `{path}`: {exc.strerror or exc}",
                           "check that the directory exists and is writable") from None
    return len(data)


__all__ = ["FORMATS", "RenderError", "VIEWS", "canvas", "dot_available", "format_of", "layout",
           "render", "write"]
