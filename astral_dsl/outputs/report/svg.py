"""Graphviz's SVG inline in the page: parsed and written again with only the elements and
attributes a drawing needs (no script, no event handler, no link, no external reference), so
that whatever a design names cannot run in the reviewer's browser. Graphviz's tooltips
(`xlink:title` on its anchors) become `<title>` children, which browsers show on hover; the
internal node names Graphviz writes as titles are dropped."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import List

from astral_dsl.outputs.report.html import esc

_ELEMENTS = {"svg", "g", "title", "a", "path", "polygon", "polyline", "ellipse", "circle",
             "rect", "line", "text", "tspan"}
_ATTRIBUTES = {"class", "d", "points", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx",
               "ry", "width", "height", "transform", "viewBox", "fill", "fill-opacity",
               "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity", "opacity",
               "font-family", "font-size", "font-weight", "font-style", "text-anchor",
               "text-decoration", "dominant-baseline", "baseline-shift"}
_XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"
_SAFE_VALUE = re.compile(r"url\(|javascript:|expression\(", re.IGNORECASE)


class SvgError(ValueError):
    pass


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1]


def embed(data: bytes, label: str) -> str:
    """The SVG `data` (as Graphviz writes it) as an inline `<svg>` element scaled to the page
    width, labelled `label` for screen readers."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise SvgError(f"the picture is not valid SVG: {exc}") from None
    if _local(root.tag) != "svg":
        raise SvgError("the picture is not an SVG document")
    width = root.get("width", "")
    out: List[str] = []
    extra = {"role": "img", "aria-label": label, "class": "view"}
    if re.fullmatch(r"[0-9.]+pt", width):
        extra["style"] = f"max-width:{width}"
    _write(root, out, extra, top=True)
    return "".join(out)


def _write(el: ET.Element, out: List[str], extra=None, top: bool = False) -> None:
    name = _local(el.tag)
    if name not in _ELEMENTS:
        return                                       # dropped with what it holds
    title = el.get(_XLINK_TITLE) if name == "a" else None
    if name == "a":
        name = "g"                                   # no links out of the page
    attributes = {}
    for key, value in el.attrib.items():
        key = _local(key) if key.startswith("{") else key
        if key not in _ATTRIBUTES or _SAFE_VALUE.search(value):
            continue
        if top and key in ("width", "height"):
            continue
        attributes[key] = value
    if top:
        attributes["xmlns"] = "http://www.w3.org/2000/svg"
        attributes.update(extra or {})
    out.append(f"<{name}" + "".join(f' {k}="{esc(v)}"' for k, v in attributes.items()) + ">")
    if title:
        out.append(f"<title>{esc(title)}</title>")
    if el.text and el.text.strip() and name in ("text", "tspan", "title"):
        out.append(esc(el.text))
    for child in el:
        if _local(child.tag) == "title" and name != "text":
            continue                                 # Graphviz's internal names
        _write(child, out)
        if child.tail and child.tail.strip() and name in ("text", "tspan"):
            out.append(esc(child.tail))
    out.append(f"</{name}>")
