"""The stable diagnostic codes. A code never changes meaning once released; docs/diagnostics.md
lists them (a test keeps that file and this table in step)."""
from __future__ import annotations

CODES: dict[str, str] = {
    "E000": "internal compiler error (a bug in astral_dsl)",
    # E1xx: reading and syntax
    "E100": "file cannot be read",
    "E101": "file is not UTF-8 text",
    "E102": "file is binary",
    "E103": "syntax error: unexpected token",
    "E104": "syntax error: unexpected character",
    "E105": "syntax error: unexpected end of file",
    "E106": "invalid number literal",
    "E107": "invalid string literal",
    "W100": "file is empty",
    # E2xx: names, imports and declarations
    "E200": "unknown name",
    "E201": "unknown kind of declaration",
    "E202": "duplicate name",
    "E203": "unknown field for this kind",
    "E204": "missing required field",
    "E205": "module not found",
    "E206": "import cycle",
    "E207": "import outside the project and the stdlib",
    "E208": "name not exported by the module",
    "E209": "unknown member",
    "E210": "statement not allowed here",
    "E211": "unknown parameter",
    "E212": "missing argument",
    "E213": "unknown --set parameter",
    "E214": "index out of range",
    "E215": "declaration refers to itself",
    # E3xx: units, types and values
    "E300": "unknown unit",
    "E301": "incompatible units",
    "E302": "temperature points cannot be added",
    "E303": "wrong type",
    "E304": "wrong dimension for this field",
    "E305": "division by zero",
    "E306": "not callable",
    "E307": "wrong arguments",
    "E308": "value is not a whole number",
    "E309": "value out of range",
    "E310": "invalid --set value",
    "E311": "invalid enumeration value",
    "E312": "unknown value needs `astral size`",
    # E4xx: templates, replication and structure
    "E400": "count must be a positive whole number",
    "E401": "count too large",
    "E402": "nesting too deep",
    "E403": "invalid containment",
    "E404": "cycle between definitions",
    "E405": "design too large",
    "W400": "no site declared",
    # E5xx / W5xx: user constraints
    "E500": "check failed",
    "W500": "check failed (warning)",
    "E501": "check is not a yes/no condition",
    "E502": "invalid severity",
}


def describe(code: str) -> str:
    return CODES.get(code, "")
