"""The systems a user names with `--gpu-file F` (`astral runs`, `astral calibrate`): their own
cluster, declared in an .astral file, for forecasting (and fitting Seer on) their own measured
runs.

A system is a top-level `block` of the file (a scalable unit: racks of hosts with GPUs, as
stdlib/systems.astral declares DGX SuperPODs) with its `fabric`: the fabric named
`<Block>_Fabric` (or, for a block named `<Name>_SU`, `<Name>_Fabric`), else the file's only
fabric. A run is placed on as many of its blocks as its GPUs need, exactly as on a stdlib
system. A row of the table is matched to a system (match()) by its `system` cell, which names
the block, else by its `gpu` cell, which names the GPU of exactly one block: the GPU's name
(letters and digits, case ignored), or the stdlib part the cell reads as (runs/parts.py:
"H100-SXM5-80GB" names H100_SXM, "H100-SXM-96GB-HBM2e (500W, Grand Teton)" another part). A
row whose `system` names a stdlib system ("DGX-H100", "Selene") keeps it, and a row matching
no block is matched to the stdlib systems as without --gpu-file (runs/parts.py); the system
each row ran on is reported with it.

read_systems(path) compiles the file as `astral check` compiles a design and returns its
systems with the file's diagnostics (E767 when it declares no block with GPUs)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.runs.precision import squeezed as _n
from astral_dsl.runs.system_spec import System


@records.frozen
class GpuFile:
    file: str
    systems: Tuple[System, ...]
    diagnostics: Tuple[Diagnostic, ...]

    @property
    def valid(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def by_key(self) -> Dict[str, System]:
        return {s.key: s for s in self.systems}


def _fabric_for(block: str, fabrics: Sequence[str]) -> Tuple[Optional[str], str]:
    """(the fabric of `block`, why none) by the module docstring's rule."""
    names = [f"{block}_Fabric"]
    if block.endswith("_SU"):
        names.append(f"{block[:-3]}_Fabric")
    for name in names:
        if name in fabrics:
            return name, ""
    if len(fabrics) == 1:
        return fabrics[0], ""
    if not fabrics:
        return None, ("the file declares no `fabric`: Seer prices the collectives between "
                      f"hosts on it (declare `fabric {names[-1]} {{ ... }}`)")
    return None, (f"the file declares several fabrics ({', '.join(fabrics)}) and none is named "
                  f"`{names[-1]}`")


def read_systems(path) -> GpuFile:
    """The systems of the .astral file `path` (module docstring)."""
    from astral_dsl.model.allows import apart
    from astral_dsl.model.rollup import count_of, group_of
    from astral_dsl.syntax import ast
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    ws = Workspace.open(path, option=command_line)      # its hints in the command's words
    design = ws.design
    name = design.file
    # a systems file declares parts, not a site: W400 ("nothing is built") does not apply;
    # the warnings its `allow`s accept are not said (the runs' output lists none)
    diags = [d for d in apart(design.diagnostics, design.allows)[0] if d.code != "W400"]
    if not design.valid:
        return GpuFile(name, (), tuple(diags))
    tree = ws.entry.tree
    decls = [item for item in (tree.items if tree is not None else ())
             if isinstance(item, ast.Decl)]
    blocks = [d for d in decls if d.kind.name == "block"]
    fabrics = [d.name.name for d in decls if d.kind.name == "fabric"]
    text = ws.entry.source.text if ws.entry.source is not None else ""
    root = str(ws.root)
    systems: List[System] = []
    empty: List[str] = []
    if blocks:
        # one probe site per block: its GPUs, and the GPU they are
        probe = "\n".join(f"site RunsProbe{i} {{ su = 1 x {b.name.name} }}"
                          for i, b in enumerate(blocks))
        probed = Workspace.of_text(text + "\n" + probe + "\n", name, root).design
        sites = {r.template: r for r in probed.roots}
        cache: dict = {}
        for i, b in enumerate(blocks):
            site = sites.get(f"RunsProbe{i}")
            gpus = count_of(site, ("gpu",), cache) if site is not None else 0
            if not gpus:
                empty.append(b.name.name)
                continue
            gpu = next(g for _, g in group_of(site, ("gpu",), cache).flat())
            fabric, why = _fabric_for(b.name.name, fabrics)
            systems.append(System(b.name.name, b.name.name, fabric or "", gpus, gpu.template,
                                  prelude=text, root=root, file=name,
                                  problem=why))
    if not systems:
        first = blocks[0].span if blocks else Span.at(name, 1, 1, 1, 2)
        notes = (f"block(s) without GPUs: {', '.join(empty)}",) if empty else ()
        diags.append(Diagnostic(
            "E767", Severity.ERROR, f"`{name}` declares no system to run on: no top-level "
            "`block` holds GPUs", first,
            "declare your scalable unit as a block of racks of hosts with GPUs, and its fabric: "
            "`block Lab_SU { racks = 8 x MyRack }` and `fabric Lab_Fabric { ... }` "
            "(docs/runs.md, \"Your own cluster\")", notes=notes))
    return GpuFile(name, tuple(systems), tuple(diags))


def match(row, systems: Sequence[System]) -> Tuple[Optional[System], str]:
    """(the user's system a row runs on, or None; why none, when it matched but cannot run, or
    "" when it matched none): by `system`, then by `gpu` (module docstring)."""
    from astral_dsl.runs.parts import names_stdlib_system, system_of

    s = _n(row.system)
    named = [x for x in systems if s and _n(x.key) == s]
    if len(named) > 1:                      # `Lab_SU` and `LAB_SU`: the cell's own spelling
        exact = [x for x in named if x.key == row.system.strip()]
        if len(exact) == 1:
            return exact[0], ""
        return None, (f"system `{row.system}` matches the blocks "
                      f"{', '.join(x.key for x in named)} of the --gpu-file (names are "
                      f"compared without case and punctuation): give their names apart")
    if named:
        return named[0], ""
    if names_stdlib_system(row.system):
        return None, ""                     # "DGX-H100": the stdlib's, not a block of ours
    g = _n(row.gpu)
    if not g:
        return None, ""
    found = [x for x in systems if _n(x.gpu) == g]
    if not found:                           # "H100-SXM5-80GB" names the stdlib's H100_SXM
        part = system_of(row.system, row.gpu)[0]
        found = [x for x in systems if part is not None and x.gpu == part.gpu]
    if len(found) > 1:
        return None, (f"gpu `{row.gpu}` matches the blocks {', '.join(x.key for x in found)} of "
                      f"the --gpu-file: name one in the `system` cell")
    return (found[0], "") if found else (None, "")
