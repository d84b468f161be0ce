"""What the docs say a command prints, or a forecast gives, is what it prints and gives.

tests/test_docs.py compiles every example of the docs; this file holds the figures and outputs
the prose quotes to the product's own, where that is cheap: the first design of
docs/language.md and its E500 display, the healthy band `astral diagnose` prints for the
single-pod job (README, docs/diagnose.md), and what Seer's rule chooses for the GB200 row the
README and docs/seer.md cite for activation offloading."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List

import astral_dsl
from astral_dsl.diagnose.verdict import band_of
from astral_dsl.runs.express import express
from astral_dsl.runs.table import read_table
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
LANGUAGE = (REPO / "docs" / "language.md").read_text(encoding="utf-8")


def _fence_after(text: str, marker: str, lang: str) -> List[str]:
    """The lines of the first ```lang block after `marker`."""
    rest = text[text.index(marker):]
    body = rest[rest.index(f"```{lang}\n") + len(f"```{lang}\n"):]
    return body[:body.index("```")].rstrip("\n").split("\n")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    return text[start:text.index("\n## ", start + 1)]


def test_the_first_design_prints_what_section_1_says(tmp_path):
    first = _section(LANGUAGE, "## 1. A first design")
    design = "\n".join(_fence_after(first, "## 1. A first design", "astral")) + "\n"
    (tmp_path / "rack.astral").write_text(design, encoding="utf-8")
    out = astral("check", "rack.astral", cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    lines = out.stdout.rstrip("\n").split("\n")
    # the summary line the section shows, and the warnings it names (it said `[ok]`: the design
    # draws W626, W627 and W653)
    assert _fence_after(first, "`astral check` prints", "text") == [lines[-1]]
    said = set(re.findall(r"\bW\d{3}\b", first[first.index("`astral check` prints"):]))
    drawn = {m.group(1) for m in re.finditer(r"^warning\[(W\d{3})\]", out.stdout, re.M)}
    assert said == drawn == {"W626", "W627", "W653"}
    # section 11's E500 display is this design's with five hosts per rack, line for line (it
    # showed a line, a left side and a replica count that no design of the page gives)
    shown = _fence_after(_section(LANGUAGE, "## 11. Checks"), "the report shows both sides", "text")
    five = astral("check", "rack.astral", "--set", "hosts_per_rack=5", cwd=tmp_path)
    printed = five.stdout.split("\n")
    at = printed.index(shown[0])
    assert printed[at:at + len(shown)] == shown


def test_the_diagnosis_band_the_docs_quote_is_the_forecasts():
    fc = astral_dsl.forecast(REPO / "examples" / "single_pod.astral", job="llama70b")
    (low, high), source = band_of(fc.detail)
    assert source == ("the forecast's default band, not a measurement: outside the calibrated "
                      "envelope (the combination H100/BF16/flash/dense/megatron), W753")
    # Seer's outside band, -22/+32 %: 1 - 0.2212 = 0.78, 1 + 0.3192 = 1.32 (it read 1.39x, the
    # band before the leave-one-group-out groups were read as Seer reads the rows)
    band = f"{low:.2f}-{high:.2f}x"
    assert band == "0.78-1.32x"
    assert f"healthy within {band}, {source})" in README
    diagnose = (REPO / "docs" / "diagnose.md").read_text(encoding="utf-8")
    assert f"{band} for the single-pod job" in diagnose
    assert not re.search(r"healthy within 0\.\d\d-1\.\d\dx", README.replace(band, ""))


def test_the_offloading_figures_are_the_forecasts():
    table = read_table(REPO / "astral_dsl" / "seer" / "calibration" / "modern.csv")
    row = next(r for r in table.runs if r.id == "r142")
    ws = astral_dsl.compiles(express(row).source, name="r142.astral", root=REPO)
    auto = astral_dsl.forecast(ws)
    kept = astral_dsl.forecast(ws, offload_layers=0)
    full = astral_dsl.forecast(ws, recompute="full")
    chosen, kept_chosen = dict(auto.detail.chosen), dict(kept.detail.chosen)
    said = re.search(r"offloads (\d+) of its 80 layers and\s+forecasts ([\d,]+) tokens/s per GPU"
                     r".*?recomputing (\d+) of its layers is the least that fits, and the\s+"
                     r"iteration is (\d+) % longer \((\d+) % recomputing every layer\)",
                     README, re.S)
    assert said, "README: the offloading example's sentence"
    offloaded, per_gpu, recomputed, longer, longer_full = said.groups()
    assert chosen["offload_layers"] == int(offloaded) == 36
    assert f"{auto.tokens_per_s / auto.gpus:,.0f}" == per_gpu == "4,205"
    assert kept_chosen == {"recompute": "full", "recompute_layers": int(recomputed)}
    base = auto.iteration_time.si
    # 4.494 s / 3.890 s = 1.155, 5.130 s / 3.890 s = 1.319
    assert round(100 * (kept.iteration_time.si / base - 1)) == int(longer) == 16
    assert round(100 * (full.iteration_time.si / base - 1)) == int(longer_full) == 32
    seer = (REPO / "docs" / "seer.md").read_text(encoding="utf-8")
    assert f"micro-batch 2 on one stage offloads {offloaded} of its 80 layers" in seer
