"""Templates nothing instantiates, because they need arguments, are still checked: every mistake
that does not depend on the missing arguments is reported."""
from __future__ import annotations

import astral_dsl


def _found(text):
    d = astral_dsl.loads(text, name="lint.astral")
    return [(x.code, x.span.start.line, x.span.start.column) for x in d.diagnostics]


def test_unused_template_with_required_parameters_is_checked():
    found = _found("host H(n: count) {\n"
                   "  gpus = n x Bogus\n"          # n is unknown here; Bogus is wrong anyway
                   "  power = 10 kWW\n"
                   "  pwoer = 3 kW\n"
                   "}\n"
                   "site S { }\n")
    assert ("E200", 2, 14) in found
    assert ("E300", 3, 14) in found
    assert ("E203", 4, 3) in found
    # nothing is said about `n` itself: it has no value to check
    assert all(code != "E212" for code, _, _ in found)


def test_used_template_is_not_reported_twice():
    found = _found("host H(n: count) { gpus = n x Bogus }\n"
                   "site S { hosts = 2 x H(n = 8) }\n")
    assert found.count(("E200", 1, 31)) == 1


def test_a_correct_unused_template_is_silent():
    assert _found("gpu G { power = 700 W }\n"
                  "host H(n: count, g: gpu) { gpus = n x g, power = n * 1 kW }\n"
                  "site S { }\n") == []
