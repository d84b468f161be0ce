"""The sizing of a check (pipeline.py, step 16): each combination of a design's structural `?`s
compiled by the workspace and checked (analyses/sizing.py `combinations`, `baseline`), the
choice made (`choose`: one MILP) and compiled once more; what it decides kept per user
(analyses/sizing_cache.py) and read back instead of sizing the same text again."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from astral_dsl.model.design import Design
    from astral_dsl.workspace import Workspace


def size(workspace: "Workspace", design: Design):
    """Step 16: each combination of the structural `?`s compiled and checked (with the twins of
    its required scenarios), then the choice and its counts compiled once more. What it
    decides is kept per user (analyses/sizing_cache.py): the same text with the same overrides
    (and the same climate files, by their contents) is then compiled once, with the values
    chosen, instead of sized again."""
    from astral_dsl.analyses import climate, sizing_cache

    digest = sizing_cache.key(workspace.sources(), design.overrides, climate.digests(design))
    kept = _kept(workspace, design, digest)
    if kept is not None:
        return kept
    result = _size(workspace, design)
    sizing_cache.write(digest, result)
    return result


def _kept(workspace: "Workspace", design: Design, digest: str):
    """The sizing the cache holds for `digest`, its chosen design compiled again; None when it
    holds none (or a damaged one)."""
    from astral_dsl.analyses import sizing, sizing_cache

    doc = sizing_cache.read(digest)
    if doc is None:
        return None
    try:
        assigned = sizing_cache.assigned_of(doc)
        failed = tuple(sizing_cache.diagnostic_of(d) for d in doc["diagnostics"])
        warnings = tuple(sizing_cache.diagnostic_of(d) for d in doc["warnings"])
        choice = sizing.rebuilt(design, assigned, doc["objective"], doc["sense"], doc["value"],
                                int(doc["combinations"]), int(doc["feasible"]), failed,
                                warnings)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None
    if choice.diagnostics:
        return choice
    return sizing.sized(choice, workspace.recompile(design, assignments=assigned))


def _size(workspace: "Workspace", design: Design):
    from astral_dsl.analyses import sizing

    plan = sizing.combinations(design)
    if plan.refused is not None:
        return plan.refused
    candidates = []
    for index, assign in plan.items:
        compiled = workspace.recompile(design, assignments=assign)
        eng, required = sizing.baseline(compiled)
        twins = tuple(workspace.recompile(compiled, scenario=s) for s in required)
        candidates.append(sizing.Candidate(index, assign, compiled, eng, twins))
    choice = sizing.choose(design, candidates)
    if choice.diagnostics:
        return choice
    return sizing.sized(choice, workspace.recompile(design, assignments=dict(choice.assigned)))


__all__ = ["size"]
