"""`--name PATH`: a path in the language's own syntax (`Astral.pods[3]`,
`Astral.pods[0].rows[0].racks[0]`), parsed by the language's expression parser and followed
through the model's members, keeping the indices (a rack view numbers the ToRs from them).

Errors use the language's codes: E200 unknown name, E209 unknown member, E214 index out of
range, E103... for syntax; E702 when the path names no single part."""
from __future__ import annotations

from typing import List, Optional, Tuple


from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, did_you_mean
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.values import Group
from astral_dsl.outputs.render.context import RenderError, render_error
from astral_dsl.syntax import ast
from astral_dsl.syntax.errors import PAIRS, unclosed
from astral_dsl.syntax.parser import parse_expression
from astral_dsl.syntax.source import Source

GROUPING = ("site", "hall", "pod", "row", "block")


@records.frozen
class Step:
    owner: Instance            # the instance the member belongs to
    member: str
    index: Optional[int]       # None for a single-instance member
    instance: Instance         # what the step reaches


@records.frozen
class Located:
    root: Instance
    steps: Tuple[Step, ...]

    @property
    def instance(self) -> Instance:
        return self.steps[-1].instance if self.steps else self.root

    @property
    def text(self) -> str:
        out = self.root.template
        for s in self.steps:
            out += f".{s.member}" + (f"[{s.index}]" if s.index is not None else "")
        return out

    def chain(self) -> List[Instance]:
        """The root and every instance on the way down."""
        return [self.root] + [s.instance for s in self.steps]


def _members(inst: Instance) -> List[str]:
    from astral_dsl.model.design import Instance as I

    return [m.name for m in inst.members if isinstance(m.value, (Group, I))]


def _error(code: str, text: str, message: str, hint: Optional[str] = None) -> RenderError:
    return RenderError(Diagnostic(code, Severity.ERROR, f"--name {text}: {message}", None, hint))


def _syntax(d: Diagnostic, text: str) -> Diagnostic:
    """The parser's diagnostic for a path that is not one, in the words of a flag: the parser's
    end of input is the end of a file, and its hints look above in it (E105 said "the file ends
    at line 1" of `Lab.pods[0`)."""
    message = d.message.replace("the end of the file", "the end of the path")
    hint = d.hint if d.hint and "above" not in d.hint else "write a path such as `Site.pods[0]`"
    if d.code == "E105":
        opener = unclosed(text)
        if opener is not None:
            closer = PAIRS[opener[0]]
            message = f"this `{opener[0]}` is never closed: the path ends before its `{closer}`"
            hint = f"close it with `{closer}`, e.g. `{text.strip()}{closer}`"
        else:
            message = "the path stops in the middle"
            hint = "complete it, or give a path such as `Site.pods[0]`"
    return Diagnostic(d.code, d.severity, f"--name {text}: {message}", None, hint)


def resolve(design: Design, text: str) -> Located:
    try:
        expr = parse_expression(Source("--name", text.strip()))
    except DiagnosticError as exc:
        raise RenderError(_syntax(exc.diagnostic, text)) from None
    ops: List[Tuple[str, object]] = []
    node = expr
    while True:
        if isinstance(node, ast.Attr):
            ops.append(("member", node.name.name))
            node = node.obj
        elif isinstance(node, ast.Index):
            ops.append(("index", node.selector))
            node = node.obj
        elif isinstance(node, ast.Name):
            ops.append(("root", node.name))
            break
        else:
            raise _error("E702", text, "is not a path to a part of the design",
                         "write a path such as `Site.pods[0].rows[0]`")
    ops.reverse()
    roots = {r.template: r for r in design.roots}
    first = ops[0][1]
    if first in roots:
        root, rest = roots[first], ops[1:]
    elif len(design.roots) == 1 and first in _members(design.roots[0]):
        root, rest = design.roots[0], [("member", first)] + ops[1:]
    else:
        raise _error("E200", text, f"unknown name `{first}`",
                     did_you_mean(first, roots) or
                     ("sites: " + ", ".join(sorted(roots)) if roots else None))
    steps: List[Step] = []
    current: Instance = root
    shown = root.template
    i = 0
    while i < len(rest):
        op, arg = rest[i]
        if op != "member":
            raise _error("E702", text, f"`{shown}` is one part, it takes no index")
        value = current.member(arg)
        if not isinstance(value, (Group, Instance)):
            names = _members(current)
            raise _error("E209", text, f"`{shown}` has no member `{arg}`",
                         did_you_mean(arg, names) or
                         (("members: " + ", ".join(names)) if names else None))
        shown += f".{arg}"
        index = None
        if isinstance(value, Group):
            if i + 1 < len(rest) and rest[i + 1][0] == "index":
                index = _index(rest[i + 1][1], text, shown, value.count)
                i += 1
                target = value.at(index)
            elif value.count == 1:
                target = value.at(0)
            else:
                raise _error("E702", text, f"`{shown}` is {value.count:,} parts",
                             f"pick one: `{shown}[0]`")
            shown += f"[{index}]" if index is not None else ""
        else:
            target = value
        steps.append(Step(current, arg, index, target))
        current = target
        i += 1
    return Located(root, tuple(steps))


def _index(selector, text: str, shown: str, count: int) -> int:
    value = None
    if isinstance(selector, ast.Number) and float(selector.value).is_integer():
        value = int(selector.value)
    elif isinstance(selector, ast.Neg) and isinstance(selector.operand, ast.Number):
        value = -int(selector.operand.value)
    if value is None:
        raise _error("E702", text, f"the index of `{shown}` must be a whole number",
                     f"write `{shown}[0]`")
    if not 0 <= value < count:
        raise _error("E214", text, f"index {value} is out of range: `{shown}` has {count:,} "
                                   f"items (0 to {count - 1:,})")
    return value


def first_of(root: Instance, kinds: Tuple[str, ...]) -> Optional[Located]:
    """The first instance of `kinds` below (or at) the root, breadth first, by index 0."""
    if root.kind in kinds:
        return Located(root, ())
    queue: List[Tuple[Instance, Tuple[Step, ...]]] = [(root, ())]
    while queue:
        inst, steps = queue.pop(0)
        for m in inst.members:
            v = m.value
            if isinstance(v, Group) and v.count:
                child, index = v.at(0), 0
            elif isinstance(v, Instance):
                child, index = v, None
            else:
                continue
            if child.level is None:
                continue
            path = steps + (Step(inst, m.name, index, child),)
            if child.kind in kinds:
                return Located(root, path)
            queue.append((child, path))
    return None


def locate(design: Design, text: Optional[str], view: str, kinds: Tuple[str, ...],
           defaults: Tuple[str, ...]) -> Located:
    """The part a view draws: `--name` or the first part of `defaults` (kinds in order)."""
    if not design.roots:
        raise render_error("E702", "the design declares no site: there is nothing to draw",
                           file=design.file)
    if text:
        found = resolve(design, text)
        if found.instance.kind not in kinds:
            raise _error("E702", text, f"names a {found.instance.kind}, but the {view} view "
                                       f"draws a {' or '.join(kinds)}",
                         _better_view(found.instance.kind))
        return found
    for kind in defaults:
        found = first_of(design.roots[0], (kind,))
        if found is not None:
            return found
    return Located(design.roots[0], ())


def _better_view(kind: str) -> Optional[str]:
    if kind in ("rack", "host"):
        return "use `--view rack` for a rack or a host"
    if kind in GROUPING:
        return f"use `--view pod`, `--view power` or `--view cooling` for a {kind}"
    return "name a site, pod, row, rack or host"
