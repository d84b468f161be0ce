"""`astral sweep`: one row per point in grid order, each equal to checking that point alone; a
failing point is a row with its diagnostics; CSV / JSON Lines / table outputs; the Pareto plot;
usage errors for bad grids; the local pool gives the same rows as one process."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from astral_dsl import seer

from astral_dsl.cli import main
from astral_dsl.cli.common import checked as cli_checked
from astral_dsl.explore import point, sweep
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.outputs.pareto import front
from astral_dsl.outputs.size_report import size_summary
from jobtext import TIGHT

REPO = Path(__file__).resolve().parents[2]


def _run(project, *grids, **kw):
    return sweep.run(str(project), list(grids), engine=LocalEngine(1), **kw)


def test_rows_in_grid_order_equal_checking_each_point_alone(project):
    result = _run(project, "hosts_per_rack=3..5", "rack_limit=40kW,50kW", job="train")
    assert [tuple(r["params"].values()) for r in result.rows] == [
        ("3", "40 kW"), ("3", "50 kW"), ("4", "40 kW"), ("4", "50 kW"), ("5", "40 kW"),
        ("5", "50 kW")]
    for row in result.rows:
        checked = cli_checked(str(project), row["params"])
        assert row["valid"] == checked.valid
        expected = size_summary(checked.design, checked.engineering)
        for key in point.SUMMARY:
            assert row["metrics"][key] == expected[key]
        if not checked.design.valid:        # a failed `check` (E500): not forecast, as
            assert [d["code"] for d in row["diagnostics"]] == [   # `astral forecast` refuses
                d.code for d in checked.diagnostics]
            assert all(row["metrics"][key] is None for key in point.FORECAST)
            continue
        fc = seer.forecast(checked.design, job="train")
        # the check's diagnostics, then the forecast's W753 (outside the calibrated envelope)
        assert [d["code"] for d in row["diagnostics"]] == [d.code for d in checked.diagnostics] \
            + [d.code for d in fc.diagnostics if d.code == "W753"]
        assert row["metrics"]["tokens_per_s"] == round(fc.tokens_per_s, 1)
    # 4 x 10.2 kW = 40.8 kW: over 40 kW, under 50 kW; 5 x 10.2 kW = 51 kW is over both and
    # 4 racks of 51 kW overload the 200 kW feeder
    codes = [sorted({d["code"] for d in r["diagnostics"] if d["severity"] == "error"})
             for r in result.rows]
    assert codes == [[], [], ["E500"], [], ["E500", "E620"], ["E500", "E620"]]
    assert result.rows[2]["metrics"]["gpus"] == 4 * 4 * 2 * 8


def test_a_sweep_without_job_of_a_design_with_jobs_names_job(project, capsys):
    # `astral search` takes the first job unasked; a sweep forecast none, unsaid
    result = _run(project, "hosts_per_rack=3,4")
    note = ("the design declares job `train`: `--job train` forecasts it at every point "
            "(iteration time, tokens/s, MFU, memory per GPU)")
    assert result.notes == [note]
    assert _run(project, "hosts_per_rack=3,4", job="train").notes == []
    assert main(["sweep", str(project), "--grid", "hosts_per_rack=3,4", "--workers", "1",
                 "--color", "never"]) in (0, 1)
    assert f"note: {note}" in capsys.readouterr().err
    assert main(["sweep", str(project), "--grid", "hosts_per_rack=3,4", "--workers", "1",
                 "--format", "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["notes"] == [note]


def test_a_failing_point_is_a_row_with_its_diagnostics(project, monkeypatch):
    real = point._evaluate

    def flaky(entry, overrides, options):
        if overrides["hosts_per_rack"] == "4":
            raise RuntimeError("boom")
        return real(entry, overrides, options)

    monkeypatch.setattr(point, "_evaluate", flaky)
    result = _run(project, "hosts_per_rack=3..5")
    assert [r["valid"] for r in result.rows] == [True, False, False]
    crashed = result.rows[1]["diagnostics"]
    assert crashed[0]["code"] == "E000" and "RuntimeError: boom" in crashed[0]["message"]
    # a value the parameter cannot take is that point's error, not the sweep's
    result = _run(project, "hosts_per_rack=2,2.5")
    assert result.rows[0]["valid"] and not result.rows[1]["valid"]
    assert result.rows[1]["metrics"] == {}


def test_the_local_pool_gives_the_rows_of_one_process(project):
    one = _run(project, "hosts_per_rack=1..6", job="train")
    pool = sweep.run(str(project), ["hosts_per_rack=1..6"], job="train", engine=LocalEngine(2))
    assert pool.rows == one.rows


def test_the_same_text_in_two_projects_names_each_its_own_file(project, tmp_path):
    """A worker lays out a project's files once per content, but names them as each client
    does: a second project with the same text must not get the first one's file names."""
    import shutil

    other = tmp_path / "copy"
    shutil.copytree(project.parent, other, ignore=shutil.ignore_patterns("copy"))
    for entry in (project, other / project.name):
        rows = _run(entry, "hosts_per_rack=1..2").rows
        assert {d["file"] for r in rows for d in r["diagnostics"]} == {str(entry)}


def test_a_dead_worker_costs_its_points_only():
    engine = LocalEngine(2)
    results = engine.run([(os._exit, (3,)), (sum, ([1, 2],))],
                         lost=lambda i, why: f"lost: {why}")
    assert results[1] == 3 or results[1].startswith("lost")
    assert results[0].startswith("lost: the local worker process died")


def _sigint_handler():
    import signal

    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


_TESTS = os.getpid()         # the test process (a forked worker inherits the number)


def _interrupt_the_parent():
    import signal

    if os.getpid() == _TESTS:           # never here: its parent is not ours to signal
        raise AssertionError("run in the test process, not in a worker")
    os.kill(os.getppid(), signal.SIGINT)     # Ctrl-C, as it reaches the process that waits


def test_ctrl_c_stops_the_workers_at_once_and_never_hangs():
    """A terminal's Ctrl-C reaches every process of the group: a worker interrupted inside the
    result queue's lock kept it, and the pool's shutdown waited for ever (a sweep hung after
    Ctrl-C). The workers ignore SIGINT; the interrupted parent terminates them, without waiting
    for their chunks (here one that would sleep for 60 s)."""
    import multiprocessing
    import time

    engine = LocalEngine(2)
    try:
        assert engine.run([(_sigint_handler, ()), (_sigint_handler, ())]) == [True, True]
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            engine.run([(time.sleep, (60,)), (_interrupt_the_parent, ())])
        assert time.monotonic() - start < 20
        # none left running (the pool's own thread may be reaping them meanwhile: a moment)
        while multiprocessing.active_children() and time.monotonic() - start < 30:
            time.sleep(0.05)
        assert multiprocessing.active_children() == []
    finally:
        engine.close()


def test_the_pool_holds_no_more_processes_than_tasks():
    """A forked pool starts every process at once: 20 workers asked, 2 tasks, 2 processes;
    a later, larger run gets a pool of its size (up to the workers asked)."""
    import multiprocessing

    engine = LocalEngine(20)
    try:
        assert engine.run([(sum, ([1, 2],)), (sum, ([3],))]) == [3, 3]
        assert len(multiprocessing.active_children()) == 2
        assert engine.run([(sum, ([k],)) for k in range(3)]) == [0, 1, 2]
        assert len(multiprocessing.active_children()) == 3
    finally:
        engine.close()


def test_scenario_columns_come_from_the_scenario(tmp_path):
    design = tmp_path / "d.astral"
    design.write_text(REPO.joinpath("examples/tutorial_rack.astral").read_text())
    result = sweep.run(str(design), ["servers=3..5"], scenario="derated_busway",
                       engine=LocalEngine(1))
    # the scenario derates the busway to 42 kW: 5 x 10.2 kW breaks it (E624), 4 x 10.2 does not
    assert [r["metrics"]["scenario_broken"] for r in result.rows] == [[], [], ["E624"]]
    assert [r["metrics"]["it_power_kw"] for r in result.rows] == [30.6, 40.8, 51.0]


def _cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", ["sweep", "search"])
def test_cluster_without_dask_is_a_usage_error(project, capsys, monkeypatch, command):
    """Dask is an extra (`astral-dsl[cluster]`): without it, --cluster says how to install it
    and exits 2, before any work."""
    monkeypatch.setitem(sys.modules, "distributed", None)      # import distributed fails
    args = [command, str(project), "--cluster", "tcp://127.0.0.1:1"]
    args += ["--grid", "hosts_per_rack=3..5"] if command == "sweep" else []
    code, out, err = _cli(args, capsys)
    assert code == 2 and err == ""
    assert "error[E801]: --cluster needs Dask distributed" in out
    assert "pip install astral-dsl[cluster]" in out and "Traceback" not in out


@pytest.mark.parametrize("command", ["sweep", "search"])
def test_a_cluster_that_cannot_be_used_is_e801(project, capsys, command):
    """A --cluster address without a protocol is refused before any work, and no cluster is
    started: E801 with its hint and no span (the command line is at fault, not the design),
    exit 2 as for an unreadable file, in the envelope under --format json (it was a bare
    `astral: error:` line, with no code)."""
    grid = ["--grid", "hosts_per_rack=3..5"] if command == "sweep" else []
    args = [command, str(project), *grid, "--cluster", "scheduler:8786"]
    code, out, err = _cli(args, capsys)
    assert code == 2 and err == ""
    assert out.startswith("error[E801]: --cluster scheduler:8786: name the protocol: "
                          "tls://scheduler:8786"), out
    assert "= hint: a scheduler's address is tls://HOST:PORT" in out and "-->" not in out
    code, out, err = _cli(args + ["--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 2 and err == "" and doc["valid"] is False and doc["rows"] == []
    [d] = doc["diagnostics"]
    assert (d["code"], d["severity"], d["range"], d["file"]) == ("E801", "error", None, None)
    assert "Where it runs" in d["hint"]
    # an option that needs --cluster, given without it, stays a usage error as other options'
    code, out, err = _cli([command, str(project), *grid, "--tls-cert", "me.pem"], capsys)
    assert code == 2 and out == "" and "astral: error: --tls-cert needs --cluster" in err


def test_cli_outputs(project, tmp_path, capsys):
    args = ["sweep", str(project), "--grid", "hosts_per_rack=3..5", "--grid",
            "rack_limit=40kW,50kW", "--workers", "1"]
    code, out, _ = _cli(args + ["--format", "json"], capsys)
    assert code == 1                            # some points have errors
    doc = json.loads(out)                       # one document, every command's envelope
    assert list(doc)[:5] == ["version", "format", "valid", "diagnostics", "file"]
    assert (doc["valid"], doc["diagnostics"], doc["scenario"], doc["job"]) == (
        False, [], None, None)
    assert doc["grid"] == [{"name": "hosts_per_rack", "values": [3, 4, 5]},
                           {"name": "rack_limit", "values": ["40 kW", "50 kW"]}]
    rows = doc["rows"]
    assert list(rows[0])[:3] == ["hosts_per_rack", "rack_limit", "valid"]
    assert rows[0]["hosts_per_rack"] == 3 and rows[0]["rack_limit"] == "40 kW"
    assert rows[2]["errors"] == ["E500"] and rows[2]["diagnostics"][0]["code"] == "E500"
    code, out, _ = _cli(args + ["-o", str(tmp_path / "rows.csv")], capsys)
    assert "6 points (3 valid) written to" in out
    with open(tmp_path / "rows.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0])[:3] == ["hosts_per_rack", "rack_limit", "valid"]
    assert [r["errors"] for r in table] == ["", "", "E500", "", "E500 E620", "E500 E620"]
    assert "rack exceeds its busway rating" in table[2]["diagnostics"]
    code, _, _ = _cli(args + ["-o", str(tmp_path / "rows.jsonl")], capsys)
    jsonl = (tmp_path / "rows.jsonl").read_text()
    code, again, _ = _cli(args + ["--format", "jsonl"], capsys)
    assert jsonl == again                       # same rows, byte for byte
    assert [json.loads(line) for line in again.splitlines()] == rows
    code, out, _ = _cli(args, capsys)
    assert "hosts_per_rack" in out and "E500 E620" in out and "rack exceeds" in out


def test_a_text_parameter_reads_alike_in_csv_and_json(tmp_path, capsys):
    """A string literal of the grid is its text in both outputs: `"a,b"` is a,b in JSON and in
    the CSV's cell (the CSV had kept the quotes: `"a,b"` read back as "a,b" with its quotes);
    the escapes replaced as the language replaces them (`\\t` a tab)."""
    from astral_dsl.outputs.sweep import unquoted

    design = tmp_path / "t.astral"
    design.write_text('param label = "a"\nhost H { power = 1 kW }\nrack R { hosts = 2 x H }\n'
                      'site S { racks = 1 x R }\n')
    args = ["sweep", str(design), "--grid", 'label="a,b","c"', "--workers", "1"]
    _cli(args + ["-o", str(tmp_path / "rows.csv")], capsys)
    with open(tmp_path / "rows.csv", newline="") as fh:
        assert [r["label"] for r in csv.DictReader(fh)] == ["a,b", "c"]
    _, out, _ = _cli(args + ["--format", "jsonl"], capsys)
    assert [json.loads(line)["label"] for line in out.splitlines()] == ["a,b", "c"]
    assert (unquoted('"x\\ty"'), unquoted("45 kW")) == ("x\ty", "45 kW")


def test_cli_plot_marks_the_pareto_front(project, tmp_path, capsys):
    png = tmp_path / "p.png"
    code, _, err = _cli(["sweep", str(project), "--grid", "hosts_per_rack=1..4", "--workers",
                         "1", "--plot", str(png), "--x", "it_power_kw", "--y", "gpus"], capsys)
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "4 points drawn" in err and "4 on the Pareto front" in err


def test_pareto_front():
    pts = [(1, 1), (2, 3), (3, 2), (0.5, 0.5), (3, 3), (2, 3)]
    assert front(pts, ("min", "max")) == [3, 0, 1, 5]          # ties stay on the front
    assert front(pts, ("min", "min")) == [3]
    assert front(pts, ("max", "max")) == [4]


@pytest.mark.parametrize("extra, message", [
    (["--grid", "hosts_per_rack=6..2"], "the range is empty"),
    (["--grid", "rack_limit=4kW..5GB"], "measure different things"),
    (["--grid", "rack_limit=4GB,5GB"], "is not a power like `rack_limit`"),
    (["--grid", "hosts_per_rack=1..2", "--set", "hosts_per_rack=3"], "both by --grid and by"),
    (["--grid", "hosts_per_rack=1..2", "-o", "rows.txt"], "the extension chooses the format"),
    (["--grid", "hosts_per_rack=1..2", "--plot", "p.png"], "--plot needs --x COLUMN and --y"),
    (["--grid", "hosts_per_rack=1..2", "--plot", "p.png", "--x", "gpus", "--y", "nope"],
     "`nope` is not a column"),
    (["--grid", "hosts_per_rack=1..2", "--plot", "p.png", "--x", "gpus", "--y",
      "hosts_per_rack"], "say which way `hosts_per_rack` is better"),
    (["--grid", "hosts_per_rack=1..2", "--cluster", "tcp://127.0.0.1:9"],   # beside --workers
     "with --cluster the cluster's workers run the work: give one or the other"),
    ([], "sweep needs at least one --grid"),
    # a forked process per point on 2 cores (was accepted: 115 s for a search against 4.6 s)
    (["--grid", "hosts_per_rack=1..2", "--workers", "100000"],
     "--workers 100,000: more than 1,024 local worker processes"),
])
def test_usage_errors(project, capsys, extra, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["sweep", str(project), "--workers", "1"] + extra, capsys)
    assert code == 2, err
    # a grid that cannot be used is E802 on standard output (exit 2, as E801); the others
    # are argparse's usage errors on standard error
    grid = message in ("the range is empty", "measure different things",
                       "is not a power like `rack_limit`", "both by --grid and by")
    assert message in (out if grid else err)
    assert ("error[E802]" in out) == grid


def test_a_grid_that_does_not_fit_its_parameter_is_e802_at_the_param(project, capsys):
    """`--grid rack_limit=4GB,5GB` was a usage error with no code: now E802, exit 2, at the
    `param rack_limit` it does not fit (the envelope under json); the API raises it."""
    code, out, _ = _cli(["sweep", str(project), "--workers", "1", "--grid",
                         "rack_limit=4GB,5GB", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["rows"] == []
    (d,) = doc["diagnostics"]
    line = project.read_text().splitlines().index(
        [x for x in project.read_text().splitlines() if x.startswith("param rack_limit")][0])
    assert d["code"] == "E802" and d["range"]["start"] == {"line": line + 1, "column": 1}
    assert d["message"] == "--grid rack_limit: `4 GB` is not a power like `rack_limit` (45 kW)"
    assert d["hint"].startswith("`rack_limit` is declared here")
    import astral_dsl
    with pytest.raises(sweep.SweepError) as info:
        astral_dsl.sweep(project, {"hosts_per_rack": "6..2"})
    (d,) = info.value.diagnostics
    assert d.code == "E802" and d.span is None and d.hint.startswith("a grid is a range")


def test_an_unknown_grid_parameter_is_e213_as_for_set(project, capsys):
    """`--grid host_per_rack=...` was a usage error (exit 2) where `--set host_per_rack=3` is
    E213 (exit 1): now the same diagnostic, its did-you-mean, and the envelope under json."""
    code, out, _ = _cli(["sweep", str(project), "--workers", "1", "--grid",
                         "host_per_rack=1..2"], capsys)
    assert code == 1
    assert "error[E213]: --grid host_per_rack: the design has no parameter `host_per_rack`" in out
    assert "did you mean `hosts_per_rack`?" in out
    code, out, _ = _cli(["sweep", str(project), "--workers", "1", "--grid",
                         "host_per_rack=1..2", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False and doc["rows"] == []
    assert [(d["code"], d["hint"]) for d in doc["diagnostics"]] == [
        ("E213", "did you mean `hosts_per_rack`?")]


def test_a_file_that_does_not_parse_is_reported_once(tmp_path, capsys):
    bad = tmp_path / "bad.astral"
    bad.write_text("param n = 1\nsite S { power = = 5 kW }\n")
    code, out, _ = _cli(["sweep", str(bad), "--grid", "n=1..3", "--workers", "1"], capsys)
    assert code == 1 and out.count("error[E103]") == 1


def test_subprocess_run_with_the_default_pool(project):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "sweep", str(project),
                           "--grid", "hosts_per_rack=2..5", "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["hosts_per_rack"] for r in rows] == [2, 3, 4, 5]
    assert proc.stderr == ""              # no progress bar when stderr is not a terminal


def test_cost_column_only_with_prices_and_w800_names_the_unpriced(project):
    assert "cost_usd" not in _run(project, "hosts_per_rack=1..2").columns
    parts = project.parent / "lib" / "parts.astral"
    parts.write_text(parts.read_text().replace(
        "liquid_share = 75 %)", "liquid_share = 75 %) { price = 300000 USD }"))
    result = _run(project, "hosts_per_rack=1..2")
    assert "cost_usd" in result.columns
    # 4 racks per row x 2 rows x hosts_per_rack hosts at 300,000 USD; the feeders have no price
    assert [r["metrics"]["cost_usd"] for r in result.rows] == [8 * 300000.0, 16 * 300000.0]
    w800 = [d for d in result.rows[0]["diagnostics"] if d["code"] == "W800"]
    assert w800 and w800[0]["notes"] == ["no price: feeder main"]


def test_the_table_shows_each_rows_warnings_as_json_and_csv_do(project, capsys):
    """README ("Sweeps"): a row holds its error and warning codes, and W800 names the unpriced
    equipment; on a terminal too, not only in JSON and CSV."""
    parts = project.parent / "lib" / "parts.astral"
    parts.write_text(parts.read_text().replace(
        "liquid_share = 75 %)", "liquid_share = 75 %) { price = 300000 USD }"))
    args = ["sweep", str(project), "--grid", "hosts_per_rack=1,5", "--workers", "1"]
    _, out, _ = _cli(args + ["--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    # 5 hosts x 10.2 kW = 51 kW: over the 45 kW check (E500) and the 200 kW feeder (E620);
    # both points draw W800 (the feeder has no price) and the project's own warnings
    assert [r["errors"] for r in rows] == [[], ["E500", "E620"]]
    assert all("W800" in r["warnings"] for r in rows)
    _, table, _ = _cli(args, capsys)
    for r, point in zip(rows, ("1", "5")):
        cells = next(line for line in table.splitlines() if line.split()[:1] == [point])
        codes = " ".join(r["errors"] + r["warnings"])
        assert cells.split(None, 1)[1].startswith(codes + " "), (codes, table)
    assert " ok " not in table
    # the warning once, with the points that have it and the equipment without a price
    text = " ".join(table.split())                 # the lines are wrapped to the width
    assert (f"2 points (hosts_per_rack=1; hosts_per_rack=5): W800 the cost counts only the "
            f"equipment with a declared price ({project}); no price: feeder main") in text


def test_huge_grid_values_are_usage_errors_or_rows_never_a_crash(project, tmp_path, capsys):
    base = ["sweep", str(project), "--workers", "1"]
    for extra in (["--format", "json"], ["-o", str(tmp_path / "x.jsonl")], []):
        code, out, err = _cli(base + ["--grid", "hosts_per_rack=1e400"] + extra, capsys)
        assert code == 2 and "`1e400` is beyond the range of a number" in out, err
        assert "E802" in out
    # 1e300 is a number: the point is a row with the compiler's diagnostic (E401), in valid JSON
    code, out, err = _cli(base + ["--grid", "hosts_per_rack=1e300,2", "--format", "json"],
                          capsys)
    assert code == 1 and "E000" not in err
    rows = json.loads(out)["rows"]
    assert rows[0]["hosts_per_rack"] == 1e300 and "E401" in rows[0]["errors"]
    assert rows[1]["hosts_per_rack"] == 2 and rows[1]["valid"]
    code, _, _ = _cli(base + ["--grid", "hosts_per_rack=1e300", "-o", str(tmp_path / "y.jsonl")],
                      capsys)
    assert json.loads((tmp_path / "y.jsonl").read_text())["hosts_per_rack"] == 1e300


def test_the_table_never_cuts_a_number_and_fits_the_width(project, capsys, monkeypatch):
    args = ["sweep", str(project), "--grid", "hosts_per_rack=2..3", "--job", "train",
            "--workers", "1"]
    _, out, _ = _cli(args + ["--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    for width in ("100", "60"):
        monkeypatch.setenv("COLUMNS", width)
        _, table, _ = _cli(args, capsys)
        assert "…" not in table
        # (the title line names the file, whatever its length)
        assert max(len(line) for line in table.splitlines()[1:]) <= int(width), table
        for r in rows:                       # every figure is there whole
            # tokens/s whole (it had a tenth of a token/s beside a band of +-10 % or more)
            assert f"{r['tokens_per_s']:,.0f}" in table and f"{r['tokens_per_s']:,.1f}" \
                not in table
            assert f"{r['it_power_kw']:,.1f}" in table and f"{r['gpus']:,}" in table
        # stacked: each part begins with the parameter
        parts = [line for line in table.splitlines() if line.startswith("hosts_per_rack")]
        assert len(parts) >= (2 if width == "60" else 1)


def test_table_width_comes_from_columns_then_the_terminal_then_100(monkeypatch):
    import io

    from astral_dsl.outputs.table import terminal_width

    monkeypatch.setenv("COLUMNS", "123")
    assert terminal_width(io.StringIO()) == 123
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) == 100          # not a terminal: 100


def test_stacked_parts_repeat_the_key_columns():
    from astral_dsl.outputs.table import Column, parts, render

    cols = [Column("n", ("1", "2"), key=True)] + [
        Column(f"metric {i}", (f"{10 ** 6 * i:,}", "7")) for i in range(1, 6)]
    stacked = parts(cols, 30)
    assert all(p[0][0].label == "n" for p in stacked) and len(stacked) > 1
    assert [c.label for p in stacked for c in p[0][1:]] == [f"metric {i}" for i in range(1, 6)]
    text = render(cols, 30)
    assert all(f"{10 ** 6 * i:,}" in text for i in range(1, 6))
    assert max(len(line) for line in text.splitlines()) <= 30
    # a cell wider than the width widens its part rather than being cut
    wide = render([Column("n", ("1" * 50,), key=True)], 20)
    assert "1" * 50 in wide


CHOICES = """
param big = true
param label = "a"
gpu G { power = 500 W }
host H { gpus = 4 x G, power = 2 kW }
rack R {
  hosts = (if big then 4 else 2) x H
  check power <= 6 kW else error "six"
}
site S { racks = 1 x R, note = label }
"""


def test_yes_no_and_text_grids(tmp_path, capsys):
    design = tmp_path / "c.astral"
    design.write_text(CHOICES)
    # big: 4 hosts x 2 kW = 8 kW > 6 kW (E500); not big: 2 x 2 kW = 4 kW
    rows = _run(design, "big=true,false", 'label="x","y"').rows
    assert [(r["params"]["big"], r["params"]["label"], r["valid"]) for r in rows] == [
        ("true", '"x"', False), ("true", '"y"', False),
        ("false", '"x"', True), ("false", '"y"', True)]
    assert rows[0]["metrics"]["it_power_kw"] == 8.0 and rows[0]["metrics"]["gpus"] == 16
    assert rows[2]["metrics"]["it_power_kw"] == 4.0 and rows[2]["metrics"]["gpus"] == 8
    assert {d["code"] for d in rows[0]["diagnostics"] if d["severity"] == "error"} == {"E500"}
    for spec, message in (("big=1,0", "`1` is not `true` or `false`"),
                          ("label=a,b", "`a` is not a quoted string")):
        code, out, _ = _cli(["sweep", str(design), "--grid", spec, "--workers", "1"], capsys)
        assert code == 2 and message in out and "error[E802]" in out


def test_progress_bar_draws_and_erases_itself(capsys):
    """The progress of `astral sweep` / `search` on a terminal: the count, a bar, the time
    left; a new label starts a new bar; at the end the line is erased."""
    from astral_dsl.cli.sweep import progress_bar

    update, stop = progress_bar(True, "sweep")
    update(0, 4)
    update(2, 4)
    update(5, None, "forecasts")
    stop()
    err = capsys.readouterr().err
    frames = err.split("\r")
    assert frames[1].startswith("sweep 0/4 [" + "." * 30 + "]")
    assert frames[2].startswith("sweep 2/4 [" + "#" * 15 + "." * 15 + "] ~")
    assert frames[3].rstrip() == "forecasts 5"
    assert frames[-2].strip() == "" and frames[-1] == ""


def test_off_a_terminal_a_long_run_says_what_it_does_at_a_bounded_rate(capsys):
    """A search of the 524,288-GPU job printed nothing on a pipe for 10 minutes: off a terminal
    a line after `first` seconds, then every `every` seconds, with the latest state; a run
    that ends sooner writes nothing (its stderr as before, byte for byte)."""
    import time
    from astral_dsl.cli.sweep import FIRST_LINE, EVERY_LINE, progress_bar

    assert (FIRST_LINE, EVERY_LINE) == (10.0, 30.0)     # at most 120 lines an hour
    update, stop = progress_bar(False, "search")
    update(3, 8, "screening")
    stop()
    assert capsys.readouterr().err == ""
    update, stop = progress_bar(False, "search", first=0.0, every=60.0)
    time.sleep(0.05)                 # the first line: before any update
    update(3, 8, "screening")
    update(5, None, "forecasting")
    stop()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("search: preparing (") and line.endswith(" s)")
    update, stop = progress_bar(False, "search", first=0.02, every=60.0)
    update(1_024, 2_048, "screening")
    time.sleep(0.1)
    stop()
    assert capsys.readouterr().err.startswith("search: screening 1,024/2,048 (0 s)\n")


def test_rows_of_another_shape_are_refused(project):
    # what a DaskEngine accepts from a worker (engines.py): the rows of the chunk's points, as
    # evaluate_point makes them; plain data of another shape stopped the outputs or was shown
    result = _run(project, "hosts_per_rack=4..5", job="train")
    rows = [{k: v for k, v in r.items() if k != "params"} for r in result.rows]
    assert point.are_rows(rows, 2) and not point.are_rows(rows, 3)
    assert any(r["diagnostics"] for r in rows) and rows[0]["metrics"]["calibration"]
    first, diag = rows[0], rows[0]["diagnostics"][0]
    for bad in ({**first, "valid": 1}, {**first, "metrics": {"gpus": "64"}},
                {**first, "metrics": {"calibration": {"band": [0, 1]}}},
                {**first, "diagnostics": [{**diag, "severity": "fatal"}]},
                {**first, "diagnostics": [{**diag, "range": {"start": 1, "end": 2}}]},
                {**first, "diagnostics": [{**diag, "notes": [3]}]}, {**first, "extra": 1}):
        assert not point.are_rows([bad, rows[1]], 2)


def test_an_import_outside_the_project_is_refused_as_check_refuses_it(project, tmp_path):
    # lib/ a link to a folder outside the project: `astral check` gives E207; every point of a
    # sweep read E205 (module not found) instead, from the worker's copy, which never gets it
    import shutil

    root = tmp_path / "linked"
    (root / "lib").parent.mkdir()
    shutil.copy(project, root / "main.astral")
    (root / "lib").symlink_to(project.parent / "lib", target_is_directory=True)
    result = _run(root / "main.astral", "hosts_per_rack=1..2")
    assert result.rows == ()
    codes = [d.code for d in result.base.diagnostics if d.is_error]
    assert codes == [d.code for d in cli_checked(str(root / "main.astral"), {}).diagnostics
                     if d.is_error] == ["E207"]


def test_a_point_that_may_not_fit_says_so_as_forecast_and_search_do(tmp_path, capsys):
    """At 8,192 tokens the job's memory estimate (81.1 GB) is under the H100's 85.9 GB, so no
    W750, but the estimate plus its uncertainty (+/- 6 GB) is over it: `astral forecast` says
    "may not fit" and `astral search` marks such a row `may not`; a sweep's point said nothing
    (its tokens/s ranked on the Pareto front as if it fitted)."""
    design = tmp_path / "tight.astral"
    design.write_text(TIGHT, encoding="utf-8")
    args = ["sweep", str(design), "--grid", "seq=4096,8192", "--job", "tight", "--workers", "1"]
    code, out, _ = _cli(args + ["--format", "json"], capsys)
    rows = json.loads(out)["rows"]
    fcs = [json.loads(_cli(["forecast", str(design), "--set", f"seq={s}", "--format", "json"],
                           capsys)[1]) for s in (4096, 8192)]
    assert [r["may_not_fit"] for r in rows] == [f["may_not_fit"] for f in fcs] == [False, True]
    assert [r["memory_gb"] for r in rows] == [round(f["memory_gb"]["total"], 3) for f in fcs]
    assert all("W750" not in r["warnings"] for r in rows)      # the estimate alone fits
    code, out, _ = _cli(args + ["-o", str(tmp_path / "rows.csv")], capsys)
    with open(tmp_path / "rows.csv", newline="") as fh:
        assert [r["may_not_fit"] for r in csv.DictReader(fh)] == ["false", "true"]
    code, out, _ = _cli(args, capsys)          # the table: a `fits` column, as search's
    assert any(line.split()[-2:] == ["fits", "band"] for line in out.splitlines())
    fits = [re.search(r"%\s+[\d.]+\s+(yes|may not)\s", line) for line in out.splitlines()
            if line.split()[:1] in (["4096"], ["8192"])]
    assert [m.group(1) for m in fits if m] == ["yes", "may not"]


def test_the_pareto_plot_says_which_points_of_its_front_may_not_fit(tmp_path, capsys):
    """Both points of this grid are on the front of tokens/s against memory; the one at 8,192
    tokens may not fit (its estimate plus its uncertainty over the GPU's memory). The plot and
    its note said nothing of it: a front to buy on that the table, CSV and JSON mark `may not`."""
    design = tmp_path / "tight.astral"
    design.write_text(TIGHT, encoding="utf-8")
    png = tmp_path / "p.png"
    code, _, err = _cli(["sweep", str(design), "--grid", "seq=4096,8192", "--job", "tight",
                         "--workers", "1", "--plot", str(png), "--x", "tokens_per_s", "--y",
                         "min:memory_gb"], capsys)
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "2 points drawn" in err and "2 on the Pareto front" in err
    assert "1 of them may not fit in GPU memory (seq=8192)" in err


def test_a_point_whose_design_has_errors_is_not_forecast_as_forecast_refuses_it(project,
                                                                                  capsys):
    """At 4 hosts a rack draws 40.8 kW, over a 40 kW `check` (E500): `astral forecast` and
    `astral search` refuse that design, but its sweep point showed tokens/s and MFU as a valid
    point's (only `status` said E500). Its forecast columns are now empty (null in JSON, `-`
    in the table, `not forecast` beside its first error); the valid point keeps its forecast."""
    args = ["sweep", str(project), "--grid", "hosts_per_rack=3,4", "--set", "rack_limit=40kW",
            "--job", "train", "--workers", "1"]
    code, out, _ = _cli(args + ["--format", "json"], capsys)
    ok, bad = json.loads(out)["rows"]
    assert code == 1 and ok["valid"] and bad["errors"] == ["E500"]
    assert ok["tokens_per_s"] > 0 and ok["calibration"] is not None
    assert all(bad[key] is None for key in point.FORECAST)
    code, out, _ = _cli(["forecast", str(project), "--set", "hosts_per_rack=4", "--set",
                         "rack_limit=40kW", "--format", "json"], capsys)
    refused = json.loads(out)
    assert code == 1 and "iteration_time_s" not in refused
    assert [d["code"] for d in refused["diagnostics"] if d["severity"] == "error"] == ["E500"]
    code, out, _ = _cli(["search", str(project), "--set", "hosts_per_rack=4", "--set",
                         "rack_limit=40kW", "--format", "json"], capsys)
    assert code == 1 and [d["code"] for d in json.loads(out)["diagnostics"]] == ["E500"]
    code, out, _ = _cli(args, capsys)
    assert "hosts_per_rack=4: E500 rack exceeds its busway rating" in out
    assert out.count("; not forecast") == 1
