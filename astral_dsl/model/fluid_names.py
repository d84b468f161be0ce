"""The domain of a fluid's `coolprop` name: which CoolProp fluid strings a design may name.

A fluid name is untrusted input handed to CoolProp, and the string picks CoolProp's backend as
well as the fluid: `REFPROP::` (or the older `REFPROP-` prefix) tries to load NIST's REFPROP
library and prints to standard output (breaking `--format json` and the language server's
JSON-RPC stream); the tabular backends (`BICUBIC&HEOS::`, `TTSE&HEOS::`) run for seconds and
write tables below the home directory; cubic equations of state (`SRK::`, `PR::`) give liquid
densities 15-25 % off. So only these forms are accepted:

- a plain CoolProp name, evaluated by the Helmholtz-energy backend (`Water`, `R134a`,
  `R1234ze(E)`, `n-Propane`), or a mixture of them with mole fractions (`R32[0.5]&R125[0.5]`);
- the same with the backend named: `HEOS::Water`, `HEOS::R32[0.5]&R125[0.5]`;
- an incompressible liquid, optionally with its concentration: `INCOMP::Water`,
  `INCOMP::MPG[0.25]` (the stdlib's PG25).

Anything else is refused (E649) before any analysis runs; analyses/fluids.py checks again
before calling CoolProp, so the Python API is held to the same rule."""
from __future__ import annotations

import re
from typing import Optional, Tuple

MAX_LENGTH = 120
MAX_COMPONENTS = 8

_COMPONENT = r"[A-Za-z0-9][A-Za-z0-9_()\-]{0,39}"
_FRACTION = r"\[(\d{0,3}(?:\.\d{1,15})?(?:[eE]-?\d{1,3})?)\]"
_PURE = re.compile(rf"^({_COMPONENT})$")
_PART = re.compile(rf"^({_COMPONENT}){_FRACTION}$")
_INCOMP = re.compile(rf"^({_COMPONENT})(?:{_FRACTION})?$")

ACCEPTED = ("a plain CoolProp name (`Water`, `R134a`), a mixture (`R32[0.5]&R125[0.5]`), "
            "`HEOS::NAME` or `INCOMP::NAME[fraction]` (e.g. `INCOMP::MPG[0.25]`)")


def check_fluid_name(name: str) -> Optional[Tuple[str, str, str]]:
    """None when CoolProp may be asked about `name`, else (code, message, hint)."""
    def refuse(message: str, hint: str = f"write {ACCEPTED}"):
        return "E649", message, hint

    if not isinstance(name, str):
        return refuse("a fluid's CoolProp name must be a string")
    shown = name if len(name) <= 60 else name[:57] + "..."
    if len(name) > MAX_LENGTH:
        return refuse(f"the fluid name `{shown}` is longer than {MAX_LENGTH} characters")
    backend, sep, rest = name.partition("::")
    if not sep:
        backend, rest = "", name
    upper = backend.upper()
    if upper.startswith("REFPROP") or (not sep and name.upper().startswith("REFPROP")):
        return refuse(f"the fluid `{shown}` asks for NIST REFPROP, which astral does not use",
                      "CoolProp's own equations of state cover the coolants: write the plain "
                      "name (e.g. `Water`) or `HEOS::NAME`")
    if "&" in backend or upper in ("BICUBIC", "TTSE"):
        return refuse(f"the fluid `{shown}` asks for a tabular CoolProp backend "
                      f"(`{backend}`), which builds tables in the home directory",
                      "write the plain name or `HEOS::NAME`: properties are evaluated directly")
    if sep and upper not in ("HEOS", "INCOMP"):
        return refuse(f"the CoolProp backend `{backend[:40]}` is not accepted")
    if sep and backend not in ("HEOS", "INCOMP"):
        return refuse(f"the CoolProp backend is written `{upper}::`, not `{backend}::`",
                      f"write `{upper}::{rest[:40]}`")
    if upper == "INCOMP":
        m = _INCOMP.match(rest)
        if m is None:
            return refuse(f"`{shown}` is not an incompressible fluid name",
                          "write `INCOMP::NAME` or `INCOMP::NAME[fraction]`, e.g. "
                          "`INCOMP::MPG[0.25]`")
        return _fractions_ok(shown, [m.group(2)] if m.group(2) is not None else [])
    if _PURE.match(rest):
        return None
    parts = rest.split("&")
    if len(parts) > MAX_COMPONENTS:
        return refuse(f"the mixture `{shown}` has more than {MAX_COMPONENTS} components")
    matches = [_PART.match(p) for p in parts]
    if len(parts) < 2 or not all(matches):
        return refuse(f"`{shown}` is not a CoolProp fluid name astral accepts")
    return _fractions_ok(shown, [m.group(2) for m in matches])


def _fractions_ok(shown: str, fractions) -> Optional[Tuple[str, str, str]]:
    for text in fractions:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 < value <= 1.0:
            return ("E649", f"the fraction `[{text}]` of `{shown}` is not between 0 and 1",
                    "fractions are written as numbers, e.g. `[0.25]` for 25 %")
    return None
