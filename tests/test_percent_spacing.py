"""Every output writes a percentage as the language does, a space before the sign (`67 %`,
`-22/+25 %`, `29.0 %`); the diagnosis wrote `probability 67%`, `<1%`, `overlap 16%`, the
forecast's breakdown `77.7%` and `astral diagnose`'s messages `40% slower` (Python's `:.0%`
format). A format spec ending in `%`, or a placeholder followed by the sign, is that spelling."""
from __future__ import annotations

import re
from pathlib import Path

from astral_dsl.outputs import diagnosis
from astral_dsl.units.readable import whole_percent

PACKAGE = Path(__file__).resolve().parents[1] / "astral_dsl"
# `{x:.0%}`, `{x:7.1%}`; `{x:.1f}%`, `{x}%` (not CSS: `width:{w:.3f}%`)
UNSPACED = re.compile(r"\{[^{}:]+:[<>^=+ -]?\d*(?:\.\d+)?%\}|(?<!width:)\{[^{}]+\}%")


def test_no_output_writes_a_percent_sign_without_its_space():
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if UNSPACED.search(line)]
    assert found == []


def test_the_diagnosis_shares_are_spaced_at_both_ends():
    assert [diagnosis._p(v) for v in (0.0, 0.004, 0.5, 0.6667, 0.996, 1.0)] == [
        "0 %", "<1 %", "50 %", "67 %", ">99 %", "100 %"]
    assert whole_percent(0.05000000000000004) == "5 %"
