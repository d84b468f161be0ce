"""The review page's two headline counts agree: the summary's warnings card counts the design's
diagnostics and the jobs' own (a forecast's W753), and the Diagnostics heading, which had
counted the design's alone ("13 warning(s) or note(s)" under a card of 14), says what it counts
and gives the card's totals too (the page's content otherwise is test_report.py's)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.api.review import collect
from astral_dsl.outputs.report import sections

REPO = Path(__file__).resolve().parents[1]


def _text(html: str) -> str:
    """The page's words: tags out (a block's as a space), spaces folded."""
    words = re.sub(r"<(?:a|/a|span|/span|mark|/mark)\b[^>]*>", "", html)
    words = re.sub(r"<[^>]+>", " ", words)
    return re.sub(r"\s+", " ", words).replace("&#x27;", "'").strip()


def _card(html: str, ident: str) -> str:
    return re.search(rf'id="{ident}"><div class="v">([^<]*)</div>', html).group(1)


@pytest.fixture(scope="module")
def warned(tmp_path_factory):
    """single_pod.astral with its rack check a warning that fails (40.8 kW > 40 kW): one design
    warning, and llama70b's forecast adds its W753 (H100s outside the calibrated envelope)."""
    text = (REPO / "examples" / "single_pod.astral").read_text(encoding="utf-8")
    old = 'check power <= 45 kW else error "rack exceeds its busway rating"'
    assert old in text
    path = tmp_path_factory.mktemp("warned") / "warned.astral"
    path.write_text(text.replace(old, 'check power <= 40 kW else warning "hot rack"'),
                    encoding="utf-8")
    return collect(astral_dsl.compile(path), views=())


def test_the_diagnostics_heading_agrees_with_the_summary(warned):
    assert [d.code for d in warned.checked.diagnostics] == ["W500"]
    assert warned.counts() == (0, 2)
    summary = sections.summary(warned)
    assert (_card(summary, "k-errors"), _card(summary, "k-warnings")) == ("0", "2")
    text = _text(sections.diagnostics(warned))
    assert text.startswith("Diagnostics The design's checks: 0 error(s), 1 warning(s), in the "
                           "order of their source. The jobs' forecasts add 0 error(s), 1 "
                           "warning(s) (W753), shown with each job under Training jobs: 0 "
                           "error(s) and 2 warning(s) in all, as the summary counts."), text


def test_no_design_diagnostic_does_not_say_every_check_holds_under_the_jobs_warnings():
    """examples/astral.astral: no diagnostic of the design's, the job's W753 and W759; the
    section had said "every check holds" above a warnings card of 2."""
    review = collect(astral_dsl.compile(REPO / "examples" / "astral.astral"), views=())
    text = _text(sections.diagnostics(review))
    assert "every check holds" not in text
    assert text.startswith("Diagnostics The design's checks raise no diagnostic. The jobs' "
                           "forecasts add 0 error(s), 2 warning(s) (W753, W759)"), text
    assert "0 error(s) and 2 warning(s) in all, as the summary counts" in text


def test_notes_are_counted_apart_from_warnings():
    from astral_dsl.diagnostics import Diagnostic, Severity

    diags = [Diagnostic("W500", Severity.WARNING, "w"), Diagnostic("I100", Severity.INFO, "n"),
             Diagnostic("E500", Severity.ERROR, "e")]
    assert sections._tally(diags) == "1 error(s), 1 warning(s), 1 note(s)"
    assert sections._tally(diags[:1]) == "0 error(s), 1 warning(s)"


WHAT_IF = "".join(f'allow {code} "the what-if alone is under test"\n' for code in
                  ("W626", "W627", "W644", "W648", "W649", "W652", "W656")) + """
gpu G { power = 700 W }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 % }
rack R { hosts = 4 x H }
fluid Water { coolprop = "Water" }
cdu C { capacity = 1 MW }
pod P {
  racks = 32 x R
  loop secondary { fluid = Water, supply = 35 degC, rise = 10 K
                   cdu = C, cdus = 2, redundancy = n }
}
site S { pods = 2 x P }
scenario cdu_down { fail S.pods[0].secondary }
"""


def test_a_what_if_that_breaks_the_design_is_counted_as_astral_check_counts_it(tmp_path):
    """A scenario that is not required and breaks the design (one CDU of two left, E640): the
    page counted its W680 among the design's warnings (`1 warning(s)`) where `astral check
    --strict` says ok, for check runs required scenarios only. The page counts what check
    gives with the same `--scenario`; the scenario matrix still shows what the what-if breaks."""
    from astral_dsl.outputs.report.matrix import matrix

    path = tmp_path / "what_if.astral"
    path.write_text(WHAT_IF, encoding="utf-8")
    ws = astral_dsl.compile(path)
    assert astral_dsl.check(ws).valid_strict
    review = collect(ws, views=())
    assert review.counts() == (0, 0) and review.checked.diagnostics == ()
    assert len(review.checked.accepted) == 7
    (row,) = matrix(review)
    assert [d.code for c in row.cells for d in c.broken] == ["E640"]
    # asked for, as `astral check --scenario cdu_down` asks: its W680, as check gives it
    asked = astral_dsl.check(ws, ["cdu_down"])
    review = collect(ws, scenario="cdu_down", views=())
    assert [d.code for d in asked.diagnostics] == ["W680"]
    assert review.checked.diagnostics == asked.diagnostics and review.counts() == (0, 1)
