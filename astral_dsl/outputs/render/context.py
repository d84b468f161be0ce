"""What every view needs besides the model: the engineering results (under a scenario when one
is asked for), the diagnostics to draw and where they belong, and the parts a scenario fails.

A diagnostic belongs to the instances whose source it points into: an exact match with a field's
value or a declaration first, else the innermost declaration that encloses it (a failed `check`
inside `rack GpuRack { ... }` belongs to the rack); a power warning (W606, W607, W690) belongs
also to the parts whose numbers it understates (understated.py). A node is marked when it
stands for one of those instances."""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, sort_diagnostics
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.values import FabricSelection, Group
from astral_dsl.outputs.render.labels import short
from astral_dsl.outputs.render.understated import understated
from astral_dsl.units.readable import whole_percent


class RenderError(DiagnosticError):
    """A problem that stops a picture from being drawn; `.diagnostic` says what and how to fix
    it."""


def render_error(code: str, message: str, hint: Optional[str] = None,
                 file: Optional[str] = None) -> RenderError:
    return RenderError(Diagnostic(code, Severity.ERROR, message, None, hint, file=file))


def _key(span) -> Tuple:
    return (span.file, span.start.line, span.start.column, span.end.line, span.end.column)


def _encloses(outer, inner) -> bool:
    return outer.file == inner.file and (outer.start.line, outer.start.column) <= (
        inner.start.line, inner.start.column) and (inner.end.line, inner.end.column) <= (
        outer.end.line, outer.end.column)


def _size(span) -> Tuple[int, int]:
    return (span.end.line - span.start.line, span.end.column - span.start.column)


_PATH_IN_MESSAGE = re.compile(r"`([A-Za-z_][\w.\[\]]*)`")


class Highlight:
    """The suspects of a diagnosis (`astral diagnose -o`), drawn in red where the picture holds
    them; `shown` records which were drawn, so the others can be named in a note."""

    def __init__(self, suspects: Iterable[dict]):
        given = [s for s in suspects if isinstance(s, dict) and s.get("path")]
        self.suspects = [s for s in given if not s.get("alternative")]
        self.alternatives = len(given) - len(self.suspects)     # listed, not drawn
        self.shown: set = set()

    @staticmethod
    def _same(part: str, name: str) -> bool:
        """A part is the drawn thing, one switch of a drawn group, or the group of a drawn
        switch."""
        return part == name or part.startswith(name + "[") or name.startswith(part + "[")

    def match(self, *names: str) -> Optional[str]:
        """The label of the first suspect one of whose parts is one of `names`."""
        for i, s in enumerate(self.suspects):
            parts = [p for p in s.get("parts") or [s["path"]] if " -- " not in p] + [s["path"]]
            if any(self._same(p, n) for p in parts for n in names if n):
                self.shown.add(i)
                return self.label(i)
        return None

    def match_link(self, lower: str, upper: str) -> Optional[str]:
        """The label of the first suspect holding a link from `lower` to `upper`."""
        for i, s in enumerate(self.suspects):
            for p in s.get("parts") or ():
                a, _, b = p.partition(" -- ")
                if b and self._same(a, lower) and self._same(b, upper):
                    self.shown.add(i)
                    return self.label(i)
        return None

    def label(self, i: int) -> str:
        """`suspect 1: gpu S.racks[0].hosts[0].gpus[3] (87 %)`, at most SUSPECT_CHARS
        characters: a diagnosis file's `path` and `kind` are any text, and a path of 20,000
        characters in the legend ("not in this picture: ...") was a label `dot` refused (E000;
        or, when it stopped reading the DOT text, `astral render` exited 0 writing nothing)."""
        s = self.suspects[i]
        conf = s.get("probability", s.get("confidence"))     # "confidence": before version 1
        return short(f"suspect {i + 1}: {s.get('kind', '')} {s['path']}"
                     + (f" ({whole_percent(conf)})" if isinstance(conf, (int, float)) else ""),
                     SUSPECT_CHARS)

    def not_shown(self) -> List[str]:
        return [self.label(i) for i in range(len(self.suspects)) if i not in self.shown]

    def notes(self) -> List[str]:
        out = [f"not in this picture: {x}" for x in self.not_shown()]
        if self.alternatives:
            out.append(f"{self.alternatives} alternative suspect(s) of the diagnosis are not "
                       f"drawn")
        return out


# a suspect's label: a part's path and kind, as long as a design's deepest names (the reference
# design's GPU paths are 45 characters), and the probability
SUSPECT_CHARS = 240


class Context:
    highlight: Optional[Highlight] = None
    site: Optional[Instance] = None   # the site drawn, in a design of several (None: of one)
    devices = None                    # analyses.devices.Devices: the names of the devices

    def device_name(self, path: str) -> Optional[str]:
        """The real (or pattern) name of the device at replica `path`, if it has one."""
        return self.devices.name_of(path) if self.devices else None

    def __init__(self, design: Design, engineering, diagnostics: Iterable[Diagnostic],
                 scenario: Optional[Instance] = None, outcome=None, notes: Iterable[str] = ()):
        self.design = design
        self.eng = engineering
        self.diagnostics = sort_diagnostics(diagnostics)
        self.scenario = scenario.template if scenario is not None else None
        self.outcome = outcome
        self.notes = tuple(notes)
        self.by_path: Dict[str, Instance] = {i.path: i for i in design.instances}
        self.cache: Dict = {}
        self.fabrics = {f.fabric: f for f in engineering.fabrics} if engineering else {}
        self.feeders = {f.path: f for f in engineering.power.feeders} if engineering else {}
        if engineering is not None and engineering.cooling.facility is not None:
            self.feeders.update((f.path, f) for f in engineering.cooling.facility.feeders)
        self.levels = {lv.path: lv for lv in engineering.power.levels} if engineering else {}
        self.loops = {lp.path: lp for lp in engineering.cooling.loops} if engineering else {}
        self.air = {a.path: a for a in engineering.cooling.air} if engineering else {}
        self._owners = self._map_diagnostics()
        self._inside: Optional[set] = None
        self.failed_paths, self.failed_fabric, self.changed = self._scenario_actions(scenario)

    # -- diagnostics -> instances -------------------------------------------------------------
    def _map_diagnostics(self) -> Dict[int, set]:
        exact: Dict[Tuple, List[Instance]] = {}
        blocks: List[Tuple[object, Instance]] = []
        for inst in self.design.instances:
            if inst.span is not None:
                exact.setdefault(_key(inst.span), []).append(inst)
                blocks.append((inst.span, inst))
            for _, s in inst.field_spans:
                exact.setdefault(_key(s), []).append(inst)
        owners: Dict[int, set] = {}
        for d in self.diagnostics:
            found: List[Instance] = []
            if d.span is not None:
                found = exact.get(_key(d.span), [])
                if not found:
                    around = [(s, i) for s, i in blocks if _encloses(s, d.span)]
                    if around:
                        best = min(_size(s) for s, _ in around)
                        found = [i for s, i in around if _size(s) == best]
            named = [self.by_path[p] for p in _PATH_IN_MESSAGE.findall(d.message)
                     if p in self.by_path]
            if not found:
                found = named
            elif len(found) > 1 and any(i in named for i in found):
                # one source, several instances (a scenario isolates replicas of one
                # declaration): the message names the one it is about
                found = [i for i in found if i in named]
            # a power warning marks the parts whose numbers it understates too
            owners[id(d)] = {id(i) for i in found} | understated(d, found, self.design,
                                                                 self.by_path, self.feeders)
        return owners

    def problems_for(self, parts: Iterable) -> List[Diagnostic]:
        ids = {id(p) for p in parts if p is not None}
        if not ids:
            return []
        return [d for d in self.diagnostics if self._owners.get(id(d), set()) & ids]

    def shown_problems(self) -> List[Diagnostic]:
        """The problems to list: in a design of several sites, a picture of one lists those
        whose source or subject (a part the message names) is in its site, and the design-wide
        ones (about no part), not the other sites'."""
        return [d for d in self.diagnostics if d.severity is not Severity.INFO
                and self._in_site(d)]

    def _in_site(self, d: Diagnostic) -> bool:
        if self.site is None:
            return True
        owners = self._owners.get(id(d), set())
        named = _PATH_IN_MESSAGE.findall(d.message)
        parts = [p for p in named if p in self.by_path]
        if not owners and not parts:
            return True                                 # design-wide
        inside = self._site_parts()
        top = self.site.path
        return bool(owners & inside) or any(
            p == top or p.startswith((top + ".", top + "[")) or id(self.by_path[p]) in inside
            for p in parts)

    def _site_parts(self) -> set:
        """The ids of the instances in the site drawn (an instance a template shares between
        sites is in each)."""
        if self._inside is None:
            seen, todo = set(), [self.site]
            while todo:
                inst = todo.pop()
                if id(inst) in seen:
                    continue
                seen.add(id(inst))
                for v in inst.member_values():
                    todo.extend(i for _, i in v.flat()) if isinstance(v, Group) \
                        else todo.append(v)
            self._inside = seen
        return self._inside

    # -- the scenario ------------------------------------------------------------------------
    def _scenario_actions(self, scenario: Optional[Instance]):
        failed: set = set()
        fabric: List[FabricSelection] = []
        changed: Dict[str, List[str]] = {}
        if scenario is None:
            return failed, fabric, changed
        for action in scenario.actions:
            if action.verb == "fail":
                if isinstance(action.target, FabricSelection):
                    fabric.append(action.target)
                else:
                    failed.update(self._paths(action.target))
            elif action.verb == "set":
                for p in self._paths(action.target):
                    value = getattr(action.value, "display", None) or str(action.value)
                    changed.setdefault(p, []).append(f"{action.field} = {value}")
        return failed, fabric, changed

    def _paths(self, target) -> List[str]:
        if isinstance(target, Ref):
            return [target.path]
        if isinstance(target, Instance):
            return [target.path]
        if isinstance(target, Group):
            out = []
            for _, item in target.flat():
                out.extend(self._paths(item))
            return out
        return []

    def is_failed(self, parts: Iterable) -> bool:
        return any(getattr(p, "path", None) in self.failed_paths for p in parts
                   if isinstance(p, Instance))

    def _fabric_hits(self, fabric_path: str, axes, scope):
        """The scenario's fabric failures that reach a node drawing part of a fabric: `axes`
        (tier, rail, plane) of the node, None for an axis it spans entirely, in `scope` ((kind,
        index) of one scope instance; None: every one); with whether each takes out all of it
        (not a failure of one switch, nor of one scope instance of a node standing for more)."""
        for sel in self.failed_fabric:
            if getattr(sel.fabric, "path", None) != fabric_path:
                continue
            if sel.scope is not None and scope is not None and sel.scope != scope:
                continue
            pairs = tuple(zip((sel.tier, sel.rail, sel.plane), axes))
            if any(want is not None and have is not None and want != have
                   for want, have in pairs):
                continue
            yield sel, (sel.switch is None and sel.scope in (None, scope) and
                        all(want is None or want == have for want, have in pairs))

    def fabric_failed(self, fabric_path: str, tier: Optional[str], rail: Optional[int],
                      plane: Optional[int], scope=None) -> bool:
        """Whether a scenario fails all of a node drawing a fabric's tier of one rail and plane
        (None for an axis the node spans) in one scope instance, or in every one (None)."""
        return any(whole for _, whole in self._fabric_hits(fabric_path, (tier, rail, plane), scope))

    def fabric_partly_failed(self, fabric_path: str, tier: Optional[str], rail: Optional[int],
                             plane: Optional[int], scope=None) -> List[str]:
        """The failures (as the scenario names them) that take out part of such a node only."""
        return [sel.display for sel, whole in
                self._fabric_hits(fabric_path, (tier, rail, plane), scope) if not whole]

    def changed_notes(self, inst: Optional[Instance]) -> List[str]:
        return self.changed.get(inst.path, []) if inst is not None else []

    def resolve(self, value) -> Optional[Instance]:
        if isinstance(value, Ref):
            return self.by_path.get(value.path)
        return value if isinstance(value, Instance) else None


def build(design: Design, checked, scenario: Optional[str] = None,
          highlight: Optional[Iterable[dict]] = None) -> Context:
    """The context of a picture: the design as `checked` (pipeline.check, with `scenario` among
    the scenarios it ran: the picture only presents), under the scenario when one is named;
    `highlight`: the suspects of a diagnosis to draw in red."""
    ctx = _build(design, checked, scenario)
    ctx.devices = getattr(checked, "devices", None)
    if highlight is not None:
        ctx.highlight = Highlight(highlight)
    return ctx


def _build(design: Design, checked, scenario: Optional[str] = None) -> Context:
    from astral_dsl.analyses.engineering import analyse, scenario_diagnostics

    if checked is None:
        raise TypeError("a picture presents a checked design: pass `checked` "
                        "(astral_dsl.check(workspace, [scenario]))")
    design = checked.design
    diagnostics = list(checked.diagnostics)
    eng = checked.engineering
    if eng is None:
        errors = [d for d in diagnostics if d.is_error]
        # a failed user `check` leaves a complete model: draw it with the check in red
        if design.roots and not design.needs_sizing and errors and \
                all(d.code == "E500" for d in errors):
            eng = analyse(design)
            diagnostics.extend(eng.diagnostics)
        elif not design.roots:
            raise render_error("E702", "the design declares no site: there is nothing to draw",
                               "declare a `site` that holds the parts", file=design.file)
        elif errors:
            raise RenderError(errors[0])
    if not scenario:
        return Context(design, eng, diagnostics)
    known = {s.template: s for s in design.scenarios}
    inst = known.get(scenario)
    if inst is None:
        from astral_dsl.pipeline_scenarios import unknown_scenarios

        raise RenderError(unknown_scenarios(design, {scenario})[0])
    outcome = next((o for o in checked.scenarios if o.name == scenario), None)
    if outcome is None:
        raise TypeError(f"`checked` did not run scenario `{scenario}`: check with it "
                        f"(astral_dsl.check(workspace, [\"{scenario}\"]))")
    baseline = {id(d) for d in eng.diagnostics}
    marks = [d for d in diagnostics if id(d) not in baseline and d.code not in ("E680", "W680")]
    marks += list(outcome.result.diagnostics) + scenario_diagnostics(outcome, inst)
    # what the design's `allow`s (or the baseline) accept is not drawn as a problem
    marks = [d for d in marks if not checked.accepts(d)]
    # draw the design as compiled under the scenario: the parts it names are their own
    # instances there, so only they are greyed or changed
    twin = outcome.applied.design
    twin_inst = next((s for s in twin.scenarios if s.template == scenario), inst)
    return Context(twin, outcome.result, marks, twin_inst, outcome, outcome.notes)
