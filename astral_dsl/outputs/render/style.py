"""The shared look of every picture: colours, fonts, the legend, and a Canvas that draws nodes,
clusters and edges with the marks of the context (violations in red with their codes in the
tooltip, parts failed by a scenario in grey); labels.py escapes the text and builds the
HTML-like labels, numbers.py writes the numbers.

Every node and cluster carries an SVG class (`node compute`, `node violation`, `node failed`,
...) so that tools and tests can find them in the SVG."""
from __future__ import annotations

import contextlib
from typing import Iterable, Optional, Sequence, Tuple

from astral_dsl.outputs.render.labels import (Dot, Line, cut_texts, dot_label, dot_tooltip,
                                              esc, fit, label, short, table)

FONT = "Helvetica"

# theme -> (fill, border, font colour)
THEMES = {
    "compute": ("#e8f5e9", "#2e7d32", "#1b3a1d"),
    "network": ("#e3f2fd", "#1565c0", "#0d2c54"),
    "core": ("#d0e4fb", "#0d47a1", "#0d2c54"),
    "power": ("#fff3e0", "#e65100", "#4e2500"),
    "dc": ("#fff3e0", "#e65100", "#4e2500"),
    "ac": ("#f3e5f5", "#6a1b9a", "#33104a"),
    "storage": ("#fffde7", "#9e7d00", "#3d3000"),
    "liquid": ("#e0f7fa", "#00838f", "#00363a"),
    "facility": ("#e1f0ff", "#1a4f8b", "#0b2442"),
    "air": ("#f4f6f8", "#607d8b", "#263238"),
    "site": ("#ffffff", "#455a64", "#263238"),
    "group": ("#fafafa", "#78909c", "#263238"),
    "note": ("#ffffff", "#b0bec5", "#455a64"),
    "rail": ("#f7fbff", "#90caf9", "#0d2c54"),
}
EDGE = {
    "network": "#1565c0", "core": "#0d47a1", "dc": "#e65100", "ac": "#6a1b9a",
    "power": "#e65100", "storage": "#9e7d00", "liquid": "#00838f", "facility": "#1a4f8b",
    "air": "#78909c", "compute": "#2e7d32", "note": "#90a4ae",
}
PLANE_EDGE = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a"]   # plane A, B, C, D in the rack view

RED, RED_FILL = "#c62828", "#ffebee"
AMBER, AMBER_FILL = "#b26a00", "#fff8e1"
GREY, GREY_FILL = "#9e9e9e", "#eeeeee"


# ---- the canvas ---------------------------------------------------------------------------------

class Canvas:
    """A graphviz.Digraph (labels.Dot: quoted in linear time) with the marks of a render
    context.

    `parts` of a node or cluster: the model instances it stands for (a diagnostic whose source
    lies in one of them turns it red; a part failed by the scenario greys it)."""

    def __init__(self, ctx, view: str, rankdir: str, title: Sequence[str],
                 cluster_labels: str = "t"):
        if ctx.scenario:          # every view says which scenario it shows
            title = list(title) + [f"under scenario `{ctx.scenario}`: " + "; ".join(ctx.notes)]
        self.ctx = ctx
        self.view = view
        self.cluster_labels = cluster_labels
        self.g = Dot(
            name=f"astral_{view}", format="svg",
            graph_attr={"rankdir": rankdir, "fontname": FONT, "fontsize": "12",
                        "labelloc": "t", "labeljust": "c", "newrank": "true",
                        "compound": "true", "nodesep": "0.25", "ranksep": "0.55",
                        "pad": "0.3", "bgcolor": "white",
                        "tooltip": dot_tooltip("\n".join(list(title[:1])
                                                         + cut_texts(title[1:], ()))),
                        "class": f"astral {view}", "label": self._title(title)},
            node_attr={"shape": "box", "style": "rounded,filled", "fontname": FONT,
                       "fontsize": "11", "margin": "0.12,0.06", "penwidth": "1.3"},
            edge_attr={"fontname": FONT, "fontsize": "10", "arrowsize": "0.7",
                       "penwidth": "1.3"})
        # everything is drawn inside one borderless cluster whose label, below the drawing,
        # holds the legend and the list of problems
        self.body = Dot(name="cluster_all")
        self._stack = [self.body]
        self._failed_stack = [False]
        self.marked: set = set()           # ids of diagnostics drawn on some node
        self.node_count = 0
        self.edge_count = 0

    @staticmethod
    def _title(lines: Sequence[str]) -> str:
        out = [f'<FONT POINT-SIZE="18"><B>{esc(fit(lines[0]))}</B></FONT>']
        out += [f'<FONT POINT-SIZE="12" COLOR="#455a64">{esc(fit(t))}</FONT>' for t in lines[1:]]
        return "<" + "<BR/>".join(out) + "<BR/> >"

    @property
    def here(self):
        return self._stack[-1]

    # -- marks --------------------------------------------------------------------------------
    def _marks(self, parts, failed: Optional[bool]):
        problems = self.ctx.problems_for(parts)
        for d in problems:
            self.marked.add(id(d))
        is_failed = bool(failed) if failed is not None else self.ctx.is_failed(parts)
        return problems, is_failed or self._failed_stack[-1]

    def _tooltip(self, tooltip: str, problems, cut: Sequence[str] = ()) -> str:
        tips = [tooltip] if tooltip else []
        tips += [t for t in cut if t not in tooltip]
        tips += [f"{d.code}: {d.message}" for d in problems]
        return dot_tooltip("\n".join(tips) or " ")

    def _colours(self, theme: str, problems, failed: bool):
        fill, border, font = THEMES[theme]
        classes = [theme]
        pen = "1.3"
        style = []
        if failed:
            fill, border, font = GREY_FILL, GREY, GREY
            classes.append("failed")
            style.append("dashed")
        errors = [d for d in problems if d.is_error]
        if errors:
            border, font, pen = RED, RED, "2.6"
            fill = RED_FILL if not failed else fill
            classes.append("violation")
        elif problems:
            # a warning marks the border and names its code (▲ W621): the part keeps its own
            # fill, so an AC or DC feeder stays the colour the legend gives it
            border, pen = AMBER, "2.6"
            classes.append("warning")
        return fill, border, font, pen, style, classes

    # -- drawing ------------------------------------------------------------------------------
    def node(self, gid: str, lines, *, theme: str, parts: Iterable = (), tooltip: str = "",
             failed: Optional[bool] = None, shape: str = "box", table_rows=None,
             header: Optional[str] = None, extra_class: str = "", padding: int = 2,
             suspect: Optional[str] = None, **attrs) -> str:
        """`suspect`: the label of a diagnosis's suspect the node stands for (drawn red)."""
        problems, is_failed = self._marks(parts, failed)
        fill, border, font, pen, style, classes = self._colours(theme, problems, is_failed)
        if suspect:
            fill, border, pen = RED_FILL, RED, "3.2"
            classes.append("suspect")
            tooltip = f"{suspect}\n{tooltip}" if tooltip else suspect
            if table_rows is None:
                lines = list(lines) + [Line("● " + suspect, small=True, bold=True, colour=RED)]
        codes = ", ".join(sorted({d.code for d in problems}))
        mark = Line("▲ " + codes, bold=True, colour=border) if problems else None
        if table_rows is not None:
            rows = list(table_rows) + ([[(mark, {"align": "CENTER"})]] if mark else [])
            text = table(rows, font, header=header, padding=padding)
        else:
            text = label(list(lines) + ([mark] if mark else []), font)
        shape_style = {"box": "rounded,filled", "plain": "filled"}.get(shape, "filled")
        style_text = ",".join([shape_style] + style)
        cls = " ".join(classes + ([extra_class] if extra_class else []))
        self.here.node(gid, text, shape="box" if shape == "plain" else shape, style=style_text,
                       fillcolor=fill, color=border, penwidth=pen,
                       tooltip=self._tooltip(tooltip, problems, cut_texts(lines, table_rows)),
                       **{"class": cls}, **attrs)
        self.node_count += 1
        return gid

    def edge(self, a: str, b: str, text: str = "", *, theme: str = "network",
             failed: bool = False, tooltip: str = "", colour: Optional[str] = None,
             suspect: Optional[str] = None, **attrs) -> None:
        col = GREY if failed else (colour or EDGE[theme])
        cls = "failed" if failed else theme
        if suspect:
            col, cls = RED, cls + " suspect"
            tooltip = f"{suspect}\n{tooltip}" if tooltip else suspect
            attrs.setdefault("penwidth", "3.2")
        opts = {"color": col, "fontcolor": col if not failed else GREY, "class": cls}
        if failed:
            opts["style"] = "dashed"
        if text:
            opts["label"] = dot_label(" " + text + " ")
        opts["tooltip"] = dot_tooltip(tooltip or text or " ")
        opts.update(attrs)
        self.here.edge(a, b, **opts)
        self.edge_count += 1

    @contextlib.contextmanager
    def cluster(self, gid: str, title: Sequence[str], *, theme: str = "group",
                parts: Iterable = (), failed: Optional[bool] = None, tooltip: str = "",
                dashed: bool = False, labelloc: Optional[str] = None):
        problems, is_failed = self._marks(parts, failed)
        fill, border, font, pen, style, classes = self._colours(theme, problems, is_failed)
        lines = list(title)
        if problems:
            lines.append(Line("▲ " + ", ".join(sorted({d.code for d in problems})), bold=True,
                              colour=border))
        with self.here.subgraph(name=f"cluster_{gid}") as sub:
            sub.attr(label=label(lines, font), style=",".join(["rounded", "filled"] + style + (
                ["dashed"] if dashed else [])), fillcolor=fill, color=border, penwidth=pen,
                fontname=FONT, fontsize="12", labeljust="l", margin="12", peripheries="1",
                labelloc=labelloc or self.cluster_labels,
                tooltip=self._tooltip(tooltip, problems, cut_texts(title, ())),
                **{"class": " ".join(["cluster"] + classes)})
            self._stack.append(sub)
            self._failed_stack.append(is_failed)
            try:
                yield sub
            finally:
                self._stack.pop()
                self._failed_stack.pop()

    @contextlib.contextmanager
    def same_rank(self, rank: str = "same"):
        with self.here.subgraph() as sub:
            sub.attr(rank=rank)
            self._stack.append(sub)
            try:
                yield sub
            finally:
                self._stack.pop()

    # -- the legend and the list of problems ------------------------------------------------------
    def finish(self, entries: Sequence[Tuple[str, str]], notes: Sequence[str] = (),
               after: Sequence[str] = (), extra: Sequence[str] = ()) -> None:
        """Close the picture: below the drawing, a legend (theme, meaning) with the common
        marks, and the problems of the design (those not drawn on any part first); the `extra`
        nodes (a table of tiers) go after the nodes `after`."""
        rows = []
        for theme, meaning in entries:
            fill, border, _ = THEMES[theme]
            rows.append(_swatch(fill, border, meaning))
        rows.append(_swatch("#ffffff", "#78909c", "N x item: N identical replicas drawn once"))
        rows.append(_swatch(RED_FILL, RED, "violation (code on the part, message in tooltip)"))
        rows.append(_swatch("#ffffff", AMBER, "warning: amber border and ▲ code (the part "
                                              "keeps its colour)", border_width=2))
        if self.ctx.scenario is not None:
            rows.append(_swatch(GREY_FILL, GREY, f"failed in scenario `{self.ctx.scenario}`",
                                dashed=True))
        highlight = getattr(self.ctx, "highlight", None)
        if highlight is not None:
            rows.append(_swatch(RED_FILL, RED, "suspect of the diagnosis (red edge: its link)"))
            notes = list(notes) + highlight.notes()
        for note in notes:
            rows.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="10" '
                        f'COLOR="#455a64">{esc(note)}</FONT></TD></TR>')
        boxes = ['<TD VALIGN="TOP"><TABLE BORDER="1" STYLE="rounded" COLOR="#b0bec5" '
                 'CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">'
                 '<TR><TD COLSPAN="2" ALIGN="LEFT"><B>legend</B></TD></TR>'
                 + "".join(rows) + "</TABLE></TD>"]
        problems = self.ctx.shown_problems()
        if problems:
            unmarked = [d for d in problems if id(d) not in self.marked]
            marked = [d for d in problems if id(d) in self.marked]
            lines = []
            for d in (unmarked + marked)[:12]:
                where = f" ({d.span.file.rsplit('/', 1)[-1]}:{d.span.start.line})" \
                    if d.span else ""
                colour = RED if d.is_error else AMBER
                lines.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{colour}"><B>'
                             f'{esc(d.code)}</B></FONT></TD><TD ALIGN="LEFT">'
                             f'<FONT POINT-SIZE="10">{esc(short(d.message, 100) + where)}'
                             f'</FONT></TD></TR>')
            more = len(problems) - 12
            if more > 0:
                lines.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="10">'
                             f'and {more} more: run `astral check`</FONT></TD></TR>')
            title = (f"problems under scenario `{self.ctx.scenario}`"
                     if self.ctx.scenario else "problems")
            any_error = any(d.is_error for d in problems)
            boxes.append(f'<TD VALIGN="TOP"><TABLE BORDER="1" STYLE="rounded" '
                         f'COLOR="{RED if any_error else AMBER}" '
                         f'BGCOLOR="{RED_FILL if any_error else AMBER_FILL}" CELLBORDER="0" '
                         f'CELLSPACING="1" CELLPADDING="2"><TR><TD COLSPAN="2" ALIGN="LEFT">'
                         f'<FONT COLOR="{RED if any_error else AMBER}"><B>{esc(title)}</B>'
                         f'</FONT></TD></TR>' + "".join(lines) + "</TABLE></TD>")
        text = ('<<TABLE BORDER="0" CELLSPACING="10" CELLPADDING="0"><TR>' + "".join(boxes)
                + "</TR></TABLE>>")
        for a in after:
            for b in extra:
                self.body.edge(a, b, style="invis")
        self.body.attr(label=text, labelloc="b", labeljust="l", peripheries="0", style="",
                       fontname=FONT, fontsize="11", margin="4",
                       tooltip=dot_tooltip("\n".join(f"{d.code}: {d.message}" for d in problems)
                                        or "legend"),
                       **{"class": "legend" + (" problems" if problems else "")})
        self.g.subgraph(self.body)


def _swatch(fill: str, border: str, meaning: str, dashed: bool = False, border_width: int = 1
            ) -> str:
    style = ' STYLE="dashed"' if dashed else ""
    return (f'<TR><TD BGCOLOR="{fill}" BORDER="{border_width}" COLOR="{border}" WIDTH="24" '
            f'HEIGHT="12" FIXEDSIZE="TRUE"{style}> </TD><TD ALIGN="LEFT"><FONT POINT-SIZE="10">'
            f'{esc(meaning)}</FONT></TD></TR>')
