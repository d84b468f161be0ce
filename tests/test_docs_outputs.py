"""What the docs say a command prints, or a forecast gives, is what it prints and gives.

tests/test_docs.py compiles every example of the docs; this file holds the figures and outputs
the prose quotes to the product's own, where that is cheap: the first design of
docs/language.md and its E500 display, the healthy band `astral diagnose` prints for the
single-pod job (README, docs/diagnose.md), and what Seer's rule chooses for the GB200 row the
README and docs/seer.md cite for activation offloading; and the forecasts the README and
docs/seer.md quote as figures or as a command's output (the reference job, the single-pod job
and its fp8 variants, the reference's stage shares, plain 1F1B and 4 chunks, the reference
under a failed uplink, a failed port or half its aggregation switches, `astral search`'s job as
declared), which a change to Seer moves without a word; the README's `check --format json`
document, its sweep row and the Python blocks of the README and docs/seer.md, run; and the
reference forecast's W753 and W759 as docs/diagnostics.md quotes them."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.diagnose.verdict import band_of
from astral_dsl.runs.express import express
from astral_dsl.runs.table import read_table
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
LANGUAGE = (REPO / "docs" / "language.md").read_text(encoding="utf-8")
SEER = (REPO / "docs" / "seer.md").read_text(encoding="utf-8")


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
    # Seer's outside band, -21/+26 %: 1 - 0.2068 = 0.79, 1 + 0.2554 = 1.26 (it read 1.39x, the
    # band before the leave-one-group-out groups were read as Seer reads the rows; 0.78-1.25x
    # before stop 62's refit, 0.77-1.29x before stop 63's, 0.80-1.24x before stop 68's)
    band = f"{low:.2f}-{high:.2f}x"
    assert band == "0.79-1.26x"
    assert f"healthy within {band}, {source})" in README
    diagnose = (REPO / "docs" / "diagnose.md").read_text(encoding="utf-8")
    assert f"{band} for the single-pod job" in diagnose
    assert not re.search(r"healthy within 0\.\d\d-1\.\d\dx", README.replace(band, ""))
    # the proof's `fast` runs: 1.13-3.48 times the least speed-up the band cannot explain,
    # 1 / (1 - 0.2068) = 1.261: 1.13 x 1.261 = 1.425, 3.48 x 1.261 = 4.387 -> "1.4-4.3x" (the -25 %
    # band's before stop 48: 1.5-4.6x; the -21 % band's before stop 60: 1.4-4.4x; the -22 %
    # band's before stop 62: 1.5-4.4x; the -23 % band's before stop 63: 1.5-4.5x)
    from astral_dsl.synth.inject import SEVERITY
    least, most = (f / low for f in SEVERITY["fast"])
    fast = f"{least:.1f}-{int(most * 10) / 10:.1f}x"
    assert fast == "1.4-4.3x"
    assert f"beyond what that band explains ({fast} faster than its forecast)" in README
    assert f"low edge: {fast} for the single-pod job's -{100 * (1 - low):.0f} % band" in diagnose


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
    assert chosen["offload_layers"] == int(offloaded) == 37
    assert f"{auto.tokens_per_s / auto.gpus:,.0f}" == per_gpu == "4,144"
    assert kept_chosen == {"recompute": "full", "recompute_layers": int(recomputed)}
    base = auto.iteration_time.si
    # 4.573 s / 3.953 s = 1.1567, 5.192 s / 3.953 s = 1.3134 (Transformer Engine's cross-entropy,
    # NeMo 25.09's scripts, keeps the logits alone: 37 layers offloaded, 40 recomputed)
    assert round(100 * (kept.iteration_time.si / base - 1)) == int(longer) == 16
    assert round(100 * (full.iteration_time.si / base - 1)) == int(longer_full) == 31
    seer = (REPO / "docs" / "seer.md").read_text(encoding="utf-8")
    assert f"micro-batch 2 on one stage offloads {offloaded} of its 80 layers" in seer


@pytest.fixture(scope="module")
def reference_text():
    """The reference design with the README's `one_uplink` and `one_port` scenarios and
    docs/seer.md's half of the aggregation switches failed, beside the example's own scenarios."""
    text = (REPO / "examples" / "astral.astral").read_text(encoding="utf-8")
    scenarios = _fence_after(README, "## What-if scenarios", "astral")
    at = next(i for i, line in enumerate(scenarios) if line.startswith("scenario one_uplink"))
    text += "\n".join(scenarios[at:at + 3]) + "\n"
    text += next(line for line in scenarios if line.startswith("scenario one_port")) + "\n"
    return text + "scenario half_agg { fail 50 % of Astral.fabric.agg }\n"


@pytest.fixture(scope="module")
def reference(reference_text):
    return astral_dsl.compiles(reference_text, name="astral.astral", root=REPO / "examples")


def test_the_reference_forecast_the_readme_quotes(reference):
    fc = astral_dsl.forecast(reference)
    t = fc.iteration_time.si
    said = re.search(r"It forecasts ([\d.]+) s per\s+iteration, ([\d.]+) M tokens/s, ([\d.]+) % "
                     r"MFU, (\d+) GB per GPU", README)
    assert said, "README: the reference job's forecast"
    assert said.groups() == (f"{t:.2f}", f"{fc.tokens_per_s / 1e6:.2f}",
                             f"{fc.mfu.si * 100:.1f}", f"{fc.memory_per_gpu.to('GB').magnitude:.0f}")
    assert f'"{t:.3f} s {fc.envelope.text()}" in the text' in README
    # the review's scenario matrix: the job under `plane_b_down`; docs/seer.md: under half the
    # aggregation switches
    plane_b = astral_dsl.forecast(reference, scenario="plane_b_down").iteration_time.si
    assert f"job slowing from {t:.3f} s to {plane_b:.3f} s" in README
    half = astral_dsl.forecast(reference, scenario="half_agg").iteration_time.si
    assert f"{t:.3f} s becomes {half:.3f} s" in SEER


def test_where_the_reference_jobs_time_goes_as_the_readme_says(reference):
    """The README's paragraph on the reference job past its headline figures: the busiest
    stage's shares, the recomputed forward's share of its compute, plain 1F1B and 4 chunks, and
    the memory selective recomputation would need (it said 66 % compute and 22 % TP, 1F1B
    15.7 s and 4 chunks 10.1 s, figures of an earlier fit: 66.7 %, 21.2 %, 15.9 s, 10.3 s)."""
    fc = astral_dsl.forecast(reference)
    parts, t = fc.detail.breakdown, fc.iteration_time.si
    share = {k: round(100 * v / t) for k, v in parts.items()}
    said = re.search(r"stage: (\d+) % compute \(of which a quarter is the recomputed forward\), "
                     r"(\d+) % exposed TP\s.*?(\d+) % pipeline bubble \(16 micro-batches on\s+16 "
                     r"stages: 8 chunks cut 1F1B's (\d+) % to this\), (\d+) % PP p2p.*?Plain 1F1B "
                     r"would take ([\d.]+) s, 4 chunks ([\d.]+) s", README, re.S)
    assert said, "README: where the reference job's time goes"
    compute, tp, bubble, plain_bubble, pp, plain, four = said.groups()
    assert (share["compute"], share["tp_comm"], share["bubble"], share["pp_comm"]) == (
        int(compute), int(tp), int(bubble), int(pp))
    # the recomputed forward: 1 - compute without recomputation / with it, 0.249 (a quarter)
    bare = astral_dsl.forecast(reference, recompute="none").detail.breakdown["compute"]
    assert 0.24 < 1 - bare / parts["compute"] < 0.26
    one = astral_dsl.forecast(reference, virtual_stages=1)
    assert f"{one.iteration_time.si:.1f}" == plain
    assert round(100 * one.detail.breakdown["bubble"] / one.iteration_time.si) == int(plain_bubble)
    assert f"{astral_dsl.forecast(reference, virtual_stages=4).iteration_time.si:.1f}" == four
    selective = astral_dsl.forecast(reference, recompute="selective")
    needs = re.search(r"selective\s+recompute would need (\d+) GB per GPU", README)
    assert needs and f"{selective.memory_per_gpu.to('GB').magnitude:.0f}" == needs.group(1)
    assert "W750" in {d.code for d in selective.diagnostics}


def test_a_failed_port_on_stage_0_as_docs_seer_says(reference, reference_text, tmp_path):
    """docs/seer.md, "Failures": a port of a stage-0 host's NIC failed (the README's
    `one_port`) makes the iteration X s against Y s healthy, and its `dp` note is the one
    quoted (the healthy figure said 9.235 s while the forecast was 9.352 s)."""
    healthy = astral_dsl.forecast(reference).iteration_time.si
    failed = astral_dsl.forecast(reference, scenario="one_port").iteration_time.si
    assert (f"a port of a stage-0 host's NIC failed makes the\niteration {failed:.3f} s "
            f"against {healthy:.3f} s healthy") in SEER
    (tmp_path / "astral.astral").write_text(reference_text, encoding="utf-8")
    out = astral("forecast", "astral.astral", "--scenario", "one_port", cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    shown = _fence_after(SEER, "many of the job's GPUs are behind it:", "text")
    assert len(shown) == 1 and shown[0] in out.stdout.split("\n")


def test_the_check_json_the_readme_shows():
    """The README's `astral check examples/astral.astral --set hosts_per_rack=5 --format json`:
    its keys in order, its first diagnostic, summary, scenarios, `chosen` and first accepted
    warning as shown (the other diagnostics and accepted warnings are elided there)."""
    import json

    out = astral("check", "examples/astral.astral", "--set", "hosts_per_rack=5", "--format", "json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    shown = "\n".join(_fence_after(README, "A schema admits the command's result", "json"))
    keys = ["version", "format", "valid", "diagnostics", "file", "summary", "scenarios", "chosen",
            "accepted"]
    assert list(doc) == keys
    assert sorted(keys, key=lambda k: shown.index(f'"{k}":')) == keys     # each shown, in order
    first = re.search(r'"diagnostics": \[(\{.*?\]\}),\s+\.\.\.\]', shown, re.S)
    assert first and json.loads(first.group(1)) == doc["diagnostics"][0]
    accepted = re.search(r'"accepted": \[(\{.*?\}),\s+\.\.\.\]\}', shown, re.S)
    assert accepted and json.loads(accepted.group(1)) == doc["accepted"][0]
    assert len(doc["accepted"]) > 1
    rest = json.loads("{" + shown[shown.index('"file"', first.end()):accepted.start()].rstrip()
                      .rstrip(",") + "}")
    assert rest == {k: doc[k] for k in ("file", "summary", "scenarios", "chosen")}
    assert doc["version"] == astral_dsl.__version__ and doc["valid"] is False


def test_the_python_blocks_of_the_readme_and_docs_seer_run(tmp_path, monkeypatch):
    """The README's "The Python API" block prints what its comments say, and docs/seer.md's
    "From Python" block runs (it passed `scenario=None` to `seer.forecast`, which takes a
    scenario's `failures`: a ForecastError, E203)."""
    import contextlib
    import io

    monkeypatch.chdir(REPO)
    readme = "\n".join(_fence_after(README, "## The Python API", "python")) + "\n"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme, "README.md", "exec"), {})
    lines = printed.getvalue().rstrip("\n").split("\n")
    said = [line.split("#", 1)[1].strip() for line in readme.split("\n")
            if line.startswith("print(") and "#" in line]
    assert len(lines) == len(said) == 4
    assert lines[0].startswith(said[0].rstrip(".}").rstrip(", "))        # {'gpus': 524288, ...
    assert lines[1] == said[1]                                           # rack 4
    assert said[2].startswith(f"{lines[2]} W ")                          # 716800.0 W when ...
    assert said[3].startswith(lines[3] + " ")                            # 45 degC (pods[1..7]
    seer_block = "\n".join(_fence_after(SEER, "From Python:", "python")) + "\n"
    exec(compile(seer_block, "docs/seer.md", "exec"), {})


def test_the_failed_uplink_notes_are_the_forecasts(reference_text, tmp_path):
    """The README's `astral forecast --scenario one_uplink`: its two notes, as printed. The
    ToR keeps 63 of its 64 uplinks, so its hosts' port a runs at 63/64 and the dual-homed NIC,
    waiting for its slower port, at 2 x 25 GB/s x 63/64 = 49.22 GB/s instead of 50.00."""
    (tmp_path / "astral.astral").write_text(reference_text, encoding="utf-8")
    out = astral("forecast", "astral.astral", "--scenario", "one_uplink", cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    notes = [line for line in out.stdout.split("\n") if line.startswith("  note ")]
    shown = _fence_after(README, "The ToR's 64 uplinks go one to each agg", "console")
    assert shown[0].startswith("$ astral forecast examples/astral.astral --scenario one_uplink")
    assert shown[1:] == notes
    assert "at 49.22 GB/s per GPU instead of 50.00 GB/s" in notes[1]


def test_the_single_pod_forecast_docs_seer_opens_with():
    """docs/seer.md's first block is `astral forecast examples/single_pod.astral` as printed;
    the README's drill diagnosis, its fp8 variants and the ratios docs/seer.md quotes use the
    same forecast."""
    out = astral("forecast", "examples/single_pod.astral")
    shown = _fence_after(SEER, "# Seer:", "console")
    assert shown[0] == "$ astral forecast examples/single_pod.astral"
    assert shown[1:] == out.stdout.rstrip("\n").split("\n")
    design = astral_dsl.load(str(REPO / "examples" / "single_pod.astral"))
    bf16 = seer.forecast(design, job="llama70b").iteration_time
    assert f"  iteration  forecast {bf16:.3f} s, observed" in README
    delayed, current = (seer.forecast(design, job="llama70b", dtype="fp8", fp8_recipe=r)
                        for r in ("delayed", "current"))
    assert f"is inside: {current.iteration_time:.3f} s," in SEER
    said = (f"(H100, TP8 PP4, bf16 {bf16:.3f} s) {bf16 / delayed.iteration_time:.2f}x with "
            f"delayed\nscaling and {bf16 / current.iteration_time:.2f}x with current scaling")
    assert said in SEER


def test_the_gb200_band_line_docs_seer_quotes():
    """docs/seer.md, "How far to trust a forecast": `astral forecast` of
    examples/gb200_nvl72.astral's DeepSeek-V3 job prints its iteration time with its band, as
    quoted (the line wraps in the prose)."""
    out = astral("forecast", "examples/gb200_nvl72.astral", "--job", "deepseek_v3")
    assert out.returncode == 0, out.stdout
    line = next(x for x in out.stdout.split("\n") if x.startswith("  iteration time"))
    said = f"(`{' '.join(line.split())}` for examples/gb200_nvl72.astral's DeepSeek-V3 job"
    assert said in " ".join(SEER.split())


def test_the_fp8_speed_up_of_llama_3_8b_docs_seer_quotes():
    """docs/seer.md: "Llama 3 8B on 8 H100s (TP2 DP4, tests/test_seer_fp8.py) 1.42x and 1.39x"
    with delayed and current scaling: that test's job on its network."""
    from test_seer_fp8 import H100, NET, job

    bf16 = seer.run(job("bf16"), H100, NET).iteration_time
    delayed, current = (bf16 / seer.run(job("fp8").with_(fp8_recipe=r), H100, NET).iteration_time
                        for r in ("delayed", "current"))
    assert (f"Llama 3 8B on 8 H100s (TP2 DP4, tests/test_seer_fp8.py)\n{delayed:.2f}x and "
            f"{current:.2f}x;") in SEER


def test_the_search_states_the_job_as_declared_as_forecast():
    """The README's `astral search examples/explore.astral --job llama70b --top 5`: its line
    for the job as declared is that job's forecast."""
    fc = astral_dsl.forecast(REPO / "examples" / "explore.astral", job="llama70b")
    assert (f"  as declared: tp8 pp4 dp32 mb1 selective zero1: {fc.iteration_time.si:.3f} s, "
            f"{fc.tokens_per_s:,.0f} tokens/s, MFU {fc.mfu.si * 100:.1f} %") in README


def test_the_diff_of_a_fifth_host_per_rack_is_what_the_readme_shows():
    """The README's `astral diff examples/astral.astral examples/astral.astral --set-b
    hosts_per_rack=5`, line for line (its counts, power, bill of materials, checks and
    diagnostics move with every change to the analyses)."""
    out = astral("diff", "examples/astral.astral", "examples/astral.astral",
                 "--set-b", "hosts_per_rack=5")
    assert out.returncode == 1                    # side B has errors
    shown = _fence_after(README, "what a fifth host per rack does is the first command", "text")
    assert shown == out.stdout.rstrip("\n").split("\n")
    # 4 x 10.2 kW = 40.8 kW per rack, 5 x 10.2 kW = 51 kW: over the 45 kW busway
    assert "      left: 40.8 kW -> 51 kW" in shown


def test_the_review_timeline_bars_the_readme_counts(reference):
    """The README's review page: "the reference's N operators become M bars" (the block-level
    timeline with its TP lanes in 500 slices), as the page's note counts them."""
    from astral_dsl.outputs.report.timeline import count, svg

    fc = seer.forecast(reference.design)
    operators = count(fc, "op")
    bars = re.search(r"; ([\d,]+) bars on \d+ lanes; TP, CP and EP communication inside the "
                     r"blocks: each 1/500 of", svg(fc, "t")[1])
    assert bars, "the block-level timeline with its TP lanes in 500 slices"
    assert (f"(the reference's {operators:,} operators become\n  {bars.group(1)} bars: its "
            f"blocks, PP sends and DP communication, and TP lanes in 500 slices)") in README


def test_the_review_page_line_the_readme_quotes(tmp_path):
    """The README's `astral report examples/astral.astral -o review.html` prints "wrote
    review.html (N bytes): ..." (the page's bytes move with the forecast's timeline and every
    picture; it said 2,049,630 bytes while the page had 1,849,483). Run where the README runs
    it, the checkout's root, so that the page names the example as it does there
    (`examples/astral.astral`; the stdlib files its diagnostics point into are
    `stdlib/power.astral` from anywhere: tests/test_stdlib_names.py); the page itself is
    written outside."""
    page = tmp_path / "review.html"
    out = astral("report", "examples/astral.astral", "-o", str(page), cwd=REPO)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.strip().replace(f"wrote {page} ", "wrote review.html ", 1)
    size = page.stat().st_size
    assert printed.startswith(f"wrote review.html ({size:,} bytes): ")
    said = re.search(r"prints `(wrote review\.html [^`]+)`", README)
    assert said, "README: the line `astral report` prints"
    assert " ".join(said.group(1).split()) == printed


def test_the_quick_start_prints_what_the_readme_shows():
    """`make demo` runs `astral check examples/astral.astral` (Makefile) and the README quotes
    what it prints, line for line."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "\ndemo: install\n\tastral check examples/astral.astral\n" in makefile
    out = astral("check", "examples/astral.astral")
    assert out.returncode == 0, out.stderr
    shown = _fence_after(README, "`make demo` prints", "")
    assert shown == out.stdout.rstrip("\n").split("\n")


def test_the_render_call_the_readme_shows_runs():
    """README, "Pictures of the design": the Python call that draws a view (it was
    `render(design, view)`, a TypeError: a picture needs the checked design)."""
    import graphviz

    import astral_dsl.outputs.render

    said = re.search(r"`astral_dsl\.outputs\.render\.(render\([^`]*\))` returns a\s+"
                     r"`graphviz\.Digraph` \(`checked = (astral_dsl\.check\(path\))`", README)
    assert said, "README: the Python call of `astral render`"
    path, view = str(REPO / "examples" / "tutorial_rack.astral"), "cluster"
    checked = eval(said.group(2), {"astral_dsl": astral_dsl, "path": path})
    drawn = eval(said.group(1), {"render": astral_dsl.outputs.render.render, "view": view,
                                 "checked": checked})
    assert isinstance(drawn, graphviz.Digraph) and "Tutorial" in drawn.source


def test_the_reference_forecast_warnings_docs_diagnostics_quotes():
    """docs/diagnostics.md, W753 and W759: `astral forecast examples/astral.astral` prints each
    warning as quoted, line for line (the W753 hint under the shipped fit, the W759 note and
    hint with the checked range of GPUs)."""
    diagnostics = (REPO / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    out = astral("forecast", "examples/astral.astral")
    assert out.returncode == 0, out.stdout
    printed = out.stdout.split("\n")
    for code in ("W753", "W759"):
        start = diagnostics.index(f"### {code}:")
        entry = diagnostics[start:diagnostics.index("\n### ", start + 1)]
        block = _fence_after(entry, "```console", "console")
        assert block[0].split("#")[0].rstrip() == "$ astral forecast examples/astral.astral"
        shown = block[1:]
        assert shown[0].startswith(f"warning[{code}]"), code
        at = printed.index(shown[0])
        assert printed[at:at + len(shown)] == shown, code


def test_the_sweep_row_the_readme_shows():
    """README, "Sweeps": the first command's point `hosts_per_rack=5, rack_limit=45 kW` as one
    JSON line, its fields up to `gpus` as shown (the rest elided there)."""
    out = astral("sweep", "examples/astral.astral", "--grid", "hosts_per_rack=5",
                 "--grid", "rack_limit=45kW", "--format", "jsonl", "--workers", "1")
    assert out.returncode == 1, out.stderr          # the point has errors
    shown = _fence_after(README, "`hosts_per_rack=5, rack_limit=45 kW`):", "json")
    assert len(shown) == 1
    head, _, tail = shown[0].partition(",...,")
    row = out.stdout.strip()
    assert row.startswith(head + ",") and tail == '"diagnostics":[...]}'
    assert row.endswith("]}") and ',"diagnostics":[{' in row


def test_the_related_span_display_docs_diagnostics_shows(tmp_path):
    """docs/diagnostics.md's W642 of a bare RearDoor, standing on the user's line with the
    stdlib's declaration as its related note, line for line: run outside the checkout, the
    stdlib's file is named `stdlib/cooling.astral` as the page shows it (it was named by its
    absolute path, which this test replaced before comparing)."""
    diagnostics_md = (REPO / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    shown = _fence_after(diagnostics_md, "the stdlib's line is its *related* span", "text")
    (tmp_path / "design.astral").write_text(
        "import stdlib.cooling { RearDoor }\nhost H { power = 15 kW }\nrack R { hosts = 4 x H }\n"
        "site S {\n  racks = 2 x R\n  doors = RearDoor()\n}\n", encoding="utf-8")
    out = astral("check", "design.astral", cwd=tmp_path)
    assert str(REPO) not in out.stdout
    printed = out.stdout.split("\n")
    at = printed.index(shown[0])
    assert printed[at:at + len(shown)] == shown
