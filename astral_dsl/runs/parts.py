"""The GPU, and so the stdlib system, a row's `system` and `gpu` cells name (docs/runs.md, "The
system"), read exactly: a row runs on the part it names or is not expressible with the column
and why, never silently on another part.

A cell is read as words of letters and digits (case ignored). A GPU model is a word such as
`H100`, `B200`, `GB200` (`DGX`/`HGX` before it and a form factor after it allowed: `DGXH100`,
`H100SXM5`); the `gpu` cell's other words may state the part's form factor (`SXM`, `SXM4`,
`SXM5`; `PCIe` and `NVL` are PCIe cards, other GPUs), its memory (`80GB`) and its power
(`500W`). The `gpu` cell decides; the `system` cell's model is read when the `gpu` cell names
none and must agree with it when it does (a `system` of "B200-upgrade cluster" beside a gpu of
"H100-SXM5-80GB" is a contradiction, not a B200). A stated memory or power must be the stdlib
part's (stdlib/hardware.astral), except that an H100 stated with 96 GB, 500 W or on Grand Teton
is Meta's Grand Teton part."""
from __future__ import annotations

import re
from typing import Optional, Tuple

from astral_dsl import records
from astral_dsl.runs.precision import squeezed as _n
from astral_dsl.runs.system_spec import SYSTEMS, System


@records.frozen
class Part:
    """A stdlib GPU a row can name: its model word, system (runs/stacks.py SYSTEMS), memory as
    the part is labelled ("80GB": stdlib/hardware.astral declares it in GiB) and power."""
    model: str
    system: str
    memory_gb: int
    power_w: int


PARTS = (
    # stdlib/hardware.astral: A100_80GB (A100 data sheet, SXM4 80GB: 400 W), H100_SXM (H100
    # data sheet, SXM: 700 W, 80 GB), H800 (SXM5: 700 W, 80 GB), H200 (SXM: 700 W, 141 GB),
    # B200 (DGX B200: 1,440 GB over 8 GPUs; HGX B200: 1,000 W), GB200 (NVL72: 13.4 TB / 72;
    # Blackwell data sheet: 1,200 W), H100_SXM_96GB_500W (Meta's Grand Teton, 2024)
    Part("a100", "DGX-A100", 80, 400),
    Part("h100", "DGX-H100", 80, 700),
    Part("h800", "HGX-H800", 80, 700),
    Part("h200", "DGX-H200", 141, 700),
    Part("b200", "DGX-B200", 180, 1000),
    Part("gb200", "DGX-GB200", 186, 1200),
)
GRAND_TETON = Part("h100", "GrandTeton-H100-500W", 96, 500)
UNCHECKED = ("b300", "gb300")            # no published run checks a system of these
MODEL = re.compile(r"(?:dgx|hgx)?(gb[1-9]00|[abh][1-9]00)([a-z][a-z0-9]*)?")
# the stdlib systems as a `system` cell names them (letters and digits, case ignored)
NAMED = {"dgxa100": "DGX-A100", "selene": "DGX-A100", "dgxh100": "DGX-H100",
         "dgxh200": "DGX-H200", "hgxh800": "HGX-H800", "dgxb200": "DGX-B200",
         "dgxgb200": "DGX-GB200", "grandteton": "GrandTeton-H100-500W"}


def _words(text: str):
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _models(text: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(the GPU models a cell names, in order, once each; the other words and the qualifiers
    written after a model in its word)."""
    models, rest = [], []
    for w in _words(text):
        m = MODEL.fullmatch(w)
        if m:
            if m.group(1) not in models:
                models.append(m.group(1))
            if m.group(2):
                rest.append(m.group(2))
        else:
            rest.append(w)
    return tuple(models), tuple(rest)


def names_stdlib_system(system: str) -> Optional[str]:
    """The stdlib system a `system` cell names ("DGX-H100", "Selene (DGX A100 SuperPOD)"), or
    None."""
    s = _n(system)
    return next((key for name, key in NAMED.items() if name in s), None)


def system_of(system: str, gpu: str) -> Tuple[Optional[System], str, str]:
    """(the stdlib system of a row's `system` and `gpu` cells, or None; the column to blame and
    why when None) by the module docstring's rule."""
    gpus, words = _models(gpu)
    systems, _ = _models(system)
    if any(m in UNCHECKED for m in gpus + systems):
        return None, "gpu", ("no stdlib system of B300 / GB300 GPUs has published runs to check "
                             "it against: name one with --gpu-file")
    if len(gpus) > 1:
        return None, "gpu", f"gpu `{gpu}` names several GPUs ({', '.join(gpus).upper()})"
    other = [m for m in systems if m not in gpus]
    if gpus and other or len(systems) > 1:
        return None, "system", (f"system `{system}` names {', '.join(systems).upper()} and gpu "
                                f"`{gpu}` names {', '.join(gpus).upper() or 'none'}: write the "
                                "GPU the run used in both, or leave `system` without a GPU")
    model = (gpus or systems or (None,))[0]
    part = next((p for p in PARTS if p.model == model), None)
    if part is None:
        return None, "gpu", (f"no stdlib system matches system `{system}` / gpu `{gpu}` (name "
                             "one with --gpu-file)")
    memory = [int(w[:-2]) for w in words if re.fullmatch(r"\d+gb", w)]
    power = [int(w[:-1]) for w in words if re.fullmatch(r"\d+w", w)]
    if model == "h100" and (96 in memory or 500 in power or
                            "grandteton" in _n(system) + _n(gpu)):
        part = GRAND_TETON
    card = next((w for w in words if w in ("pcie", "nvl")), None)
    name = model.upper()
    if card:
        return None, "gpu", (f"gpu `{gpu}` is the {name} {'PCIe' if card == 'pcie' else 'NVL'} "
                             f"card, another GPU than the stdlib's {name} (the SXM part, "
                             "stdlib/hardware.astral): name yours with --gpu-file")
    for stated, unit, has in ((memory, "GB", part.memory_gb), (power, "W", part.power_w)):
        wrong = [v for v in stated if v != has]
        if wrong:
            return None, "gpu", (f"gpu `{gpu}` states {wrong[0]} {unit}: the stdlib's {name} of "
                                 f"{part.system} has {has} {unit} (stdlib/hardware.astral): "
                                 "name yours with --gpu-file")
    return SYSTEMS[part.system], "", ""
