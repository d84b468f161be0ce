"""`astral report` in a real browser: Debian's headless Chromium loads the page from a file,
runs its scripts, and the DOM it dumps is checked (sections, key numbers, no script error,
sorting by a click on a header, zooming the timeline). The set-up (`make system-deps`, run by
`make test`) installs chromium; without it these tests fail, saying so."""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "examples" / "astral.astral"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Chromium is needed for the browser tests of `astral report` and was not found "
                "on PATH: run `make system-deps` as root (apt-get install chromium), or install "
                "Debian's `chromium` package", pytrace=False)


def browse(page: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run headless Chromium on `page` with a profile of its own."""
    with tempfile.TemporaryDirectory(prefix="astral-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args,
                               page.resolve().as_uri()], capture_output=True, timeout=timeout)


def dump_dom(page: Path) -> str:
    proc = browse(page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    dom = proc.stdout.decode("utf-8")
    assert dom.startswith("<!DOCTYPE html>") or "<html" in dom[:200], dom[:500]
    return dom


def with_script(page: Path, script: str, out: Path, allowed: bool = True) -> Path:
    """A copy of the page with a test script after the page's own (the page is not changed).
    The page's Content-Security-Policy runs only the scripts whose hashes it lists: `allowed`
    adds the test script's hash to the copy's policy, as the page does for its own scripts."""
    from astral_dsl.outputs.report.page import script_hash

    text = page.read_text(encoding="utf-8")
    assert text.rstrip().endswith("</body></html>")
    if allowed:
        assert text.count("script-src ") == 1
        text = text.replace("script-src ", f"script-src {script_hash(script)} ", 1)
    out.write_text(text.replace("</body></html>", f"<script>{script}</script></body></html>"),
                   encoding="utf-8")
    return out


def result(dom: str) -> dict:
    m = re.search(r'<body[^>]*\sdata-test="([^"]*)"', dom)
    assert m, "the test script left no result in the DOM"
    return json.loads(html.unescape(m.group(1)))


def no_script_error(dom: str) -> None:
    m = re.search(r'<html[^>]*\sdata-script-errors="(\d+)"', dom)
    errors = re.search(r'<pre id="script-errors">(.*?)</pre>', dom, re.S)
    assert m is None, f"script errors in the page: {errors.group(1) if errors else m.group(1)}"
    assert re.search(r'<html[^>]*\sdata-ready="1"', dom), "the page's script did not finish"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    # `astral report` in this process (tests/clirun.py; test_report.py runs it as a process)
    out = tmp_path_factory.mktemp("report") / "review.html"
    proc = astral("report", REFERENCE, "-o", out, "--scenario", "hvdc_lost")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def reference_dom(reference) -> str:
    return dump_dom(reference)


class _ById(HTMLParser):
    """The text of the element with a given id, nested elements included."""

    VOID = {"meta", "br", "input", "img", "link", "hr", "col", "wbr"}

    def __init__(self, ident: str):
        super().__init__(convert_charrefs=True)
        self.ident, self.depth, self.parts, self.found = ident, 0, [], False

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in self.VOID
        elif dict(attrs).get("id") == self.ident and not self.found:
            self.found, self.depth = True, 1

    def handle_endtag(self, tag):
        if self.depth and tag not in self.VOID:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.parts.append(data)


def _text(dom: str, ident: str) -> str:
    """The element's text. The parser starts at its start tag and stops at its end: the DOM of
    the reference is 2.3 MB, 0.4 s of parsing each time it was read whole."""
    p = _ById(ident)
    m = re.search(rf'<[A-Za-z][^<>]*\sid="{re.escape(ident)}"', dom)
    at = m.start() if m else 0
    while at < len(dom) and not (p.found and not p.depth):
        end = dom.find(">", at + (1 << 16)) + 1 or len(dom)     # pieces end with a tag
        p.feed(dom[at:end])
        at = end
    assert p.found, f"no element {ident} in the DOM"
    return re.sub(r"\s+", " ", " ".join(p.parts)).strip()


def test_page_runs_without_script_errors(reference_dom):
    no_script_error(reference_dom)


def test_sections_and_key_numbers_in_the_browser(reference_dom):
    for sid in ("summary", "diagnostics", "scenarios", "views", "sizing", "pue", "bom", "jobs"):
        assert f'<section id="{sid}">' in reference_dom
    # hand-computed in test_report.py: 8 x 128 x 16 x 4 x 8 GPUs; 668,467.2 kW of hosts plus
    # 40,140.8 kW of network; facility / IT average
    assert _text(reference_dom, "k-gpus") == "524,288 GPUs"
    assert _text(reference_dom, "k-it-power") == "708,608.0 kW IT power, peak"
    # PUE and the forecast as the analyses compute them (hand-checked elsewhere)
    from test_report import _reference_forecast, _reference_pue

    fc = _reference_forecast()
    assert _text(reference_dom, "k-pue") == f"{_reference_pue():.4f} PUE (annualised)"
    assert _text(reference_dom, "k-job-llama405b") == (f"{fc.iteration_time:.3f} s llama405b: "
                                                       "iteration time, -21/+26 % (outside "
                                                       "the calibrated envelope) (extrapolated: "
                                                       "gpus 16,384 (checked 8-1,024))")
    table = _text(reference_dom, "fc-llama405b")
    assert (f"iteration time (s) {fc.iteration_time:.6g}" in table
            and f"MFU (%) {round(fc.mfu * 100, 2):.6g}" in table)   # 29.0 is shown as 29
    # five views, each beside its hvdc_lost twin, and the matrix with every scenario
    assert reference_dom.count('<figure class="view"') == 10
    for name in ("plane_b_down", "hvdc_lost", "hot_day"):
        assert f'data-scenario="{name}"' in reference_dom


def test_error_hook_marks_script_errors(reference, tmp_path):
    """The check above means something: a failing script is caught and marked in the DOM."""
    page = with_script(reference, "undefinedFunctionOfTheTest();", tmp_path / "broken.html")
    dom = dump_dom(page)
    assert re.search(r'<html[^>]*\sdata-script-errors="1"', dom)
    assert "undefinedFunctionOfTheTest" in _text(dom, "script-errors")


PWN = "document.documentElement.setAttribute('data-pwned','1');"


def test_a_script_the_policy_does_not_list_does_not_run(reference, listed_dom, tmp_path):
    """The policy names the page's own scripts by their hashes (no 'unsafe-inline' for
    scripts): a script that found its way into the page, as an escaping slip would let one,
    does not run, while the page's own still do."""
    text = reference.read_text(encoding="utf-8")
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', text).group(1)
    scripts = re.findall(r"script-src ([^;]*);", policy)[0].split()
    assert "'unsafe-inline'" not in scripts and len(scripts) == 2
    assert all(s.startswith("'sha256-") for s in scripts)
    dom = dump_dom(with_script(reference, PWN, tmp_path / "slip.html", allowed=False))
    no_script_error(dom)                                    # the page's scripts ran
    assert "data-pwned" not in dom.split(">", 2)[1]
    assert 'data-pwned="1"' in listed_dom.split("<head", 1)[0]   # the same script, listed, runs


SORT_AND_ZOOM = r"""
(function(){
  var out={};
  function col(table,i){return Array.prototype.map.call(table.tBodies[0].rows,
    function(r){var c=r.cells[i];var v=c.getAttribute('data-v');
      return v===null?c.textContent.trim():parseFloat(v);});}
  var levels=document.getElementById('size-levels');
  var th=levels.querySelectorAll('thead th')[2];          // replicas
  out.before=col(levels,2);
  th.click(); out.asc=col(levels,2); out.ascSort=th.getAttribute('aria-sort');
  th.click(); out.desc=col(levels,2); out.descSort=th.getAttribute('aria-sort');
  var first=levels.querySelectorAll('thead th')[0];       // level, as text
  first.click(); out.text=col(levels,0);
  out.thSort=th.getAttribute('aria-sort');
  var bom=document.getElementById('bom-lines');
  var q=bom.querySelectorAll('thead th')[3];             // quantity
  q.dispatchEvent(new KeyboardEvent('keydown',{key:'Enter',bubbles:true}));
  out.bom=col(bom,3);
  var svg=document.querySelector('svg.timeline');
  var r=svg.getBoundingClientRect();
  out.zoom0=svg.getAttribute('data-zoom');
  svg.dispatchEvent(new WheelEvent('wheel',{deltaY:-120,clientX:r.left+r.width*0.6,
    clientY:r.top+r.height/2,bubbles:true,cancelable:true}));
  out.zoom1=svg.getAttribute('data-zoom'); out.window1=svg.getAttribute('data-window');
  out.transform=svg.querySelector('.tl-data').getAttribute('transform');
  out.ticks=Array.prototype.map.call(svg.querySelectorAll('.tl-axis text'),
    function(t){return t.textContent;});
  svg.closest('.timeline-box').querySelector('button[data-zoom="reset"]').click();
  out.zoom2=svg.getAttribute('data-zoom');
  document.body.setAttribute('data-test',JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def listed_dom(reference, tmp_path_factory) -> str:
    """The reference page with a listed test script: PWN (which the policy test shows does not
    run unlisted) then SORT_AND_ZOOM; one Chromium run for the two tests that read it (a run is
    about a second of CPU)."""
    page = tmp_path_factory.mktemp("listed") / "sort.html"
    return dump_dom(with_script(reference, PWN + SORT_AND_ZOOM, page))


def test_sorting_and_zooming_in_the_browser(listed_dom):
    dom = listed_dom
    no_script_error(dom)
    out = result(dom)
    before = out["before"]
    assert sorted(before) == out["asc"] and out["ascSort"] == "ascending"
    assert sorted(before, reverse=True) == out["desc"] and out["descSort"] == "descending"
    # numbers sort as numbers: 16384 racks come after 8 pods, which text order would not do
    assert out["asc"].index(8) < out["asc"].index(16384)
    assert out["text"] == sorted(out["text"]) and out["thSort"] is None
    assert out["bom"] == sorted(out["bom"])                       # by the keyboard too
    assert out["zoom0"] == "1.000" and out["zoom1"] == "1.250"
    lo, hi = (float(x) for x in out["window1"].split())
    # zoomed 1.25x at 60 % of the picture's width, which is the lane labels and the plot: the
    # instant under the pointer stays in place, so the window starts at u - u / 1.25
    from astral_dsl.outputs.report.timeline import LABEL_W, PLOT_W

    from test_report import _reference_forecast

    t = _reference_forecast().iteration_time
    u = (0.6 * (LABEL_W + PLOT_W + 10) - LABEL_W) / PLOT_W * t
    assert hi - lo == pytest.approx(t / 1.25, rel=1e-4)
    assert lo == pytest.approx(u - u / 1.25, rel=1e-2)
    assert "scale(1.25 1)" in out["transform"]
    assert out["ticks"] and all(x.endswith(" s") or x.endswith(" ms") for x in out["ticks"])
    assert out["zoom2"] == "1.000"


def test_design_text_stays_text_in_the_browser(tmp_path):
    """A check message with markup and control characters shows as text; no script of the
    design runs (the error hook would count it, and the alert would leave a marker)."""
    from test_report import SMALL

    src = tmp_path / "small.astral"
    src.write_text(SMALL.replace("alert(1)", "document.body.setAttribute('data-pwned','1')"),
                   encoding="utf-8")
    out = tmp_path / "r.html"
    proc = astral("report", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    dom = dump_dom(out)
    no_script_error(dom)
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    w500 = next(m for m in re.finditer(r'data-code="W500"', dom))
    shown = html.unescape(dom[w500.start():dom.find("</div>", w500.start())])
    assert "<script>document.body.setAttribute('data-pwned','1')</script>" in shown
    assert "\\x1b]52;c;AAAA\\x07" in shown and "\\u202eevil" in shown


def test_screenshot_and_pdf(reference, tmp_path):
    # one browser run writes both: headless Chromium takes --screenshot and --print-to-pdf
    # together
    png, pdf = tmp_path / "shot.png", tmp_path / "review.pdf"
    proc = browse(reference, "--window-size=1400,1000", f"--screenshot={png}",
                  "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png.read_bytes()[16:20], "big"), \
        int.from_bytes(png.read_bytes()[20:24], "big")
    assert (width, height) == (1400, 1000)
    assert pdf.read_bytes()[:5] == b"%PDF-"
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf.read_bytes()))
    # the print stylesheet starts each section on a page of its own: at least 8 pages
    assert pages >= 8


def test_timeline_lanes_and_matrix_figures_in_the_browser(reference_dom):
    """#25's pictures as the browser shows them: the reference's timeline (drawn a block at a
    time) has a TP lane under every stage, shaded by the share of the time it is busy; the
    scenario matrix's oversubscription is printed as its notes print it (four decimals)."""
    svg = re.search(r'<svg[^>]*class="timeline".*?</svg>', reference_dom, re.S).group(0)
    labels = re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', svg)
    for stage in range(16):
        assert f"stage {stage} TP comm" in labels
    assert re.search(r'<rect class="s-tp"[^>]*fill-opacity="0\.[2468]"', svg)
    assert "worst oversubscription: 1.0000:1" in _text(reference_dom, "scenarios")
    assert "1.000:1" not in _text(reference_dom, "scenarios")
