"""The `astral` command line as a tool in CI: what it does with streams that cannot hold a
design's text, an interrupt, outputs it cannot write and a design named `-`."""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from astral_dsl import cli
from clirun import astral

REPO = Path(__file__).resolve().parents[1]

# the tutorial's rack with a fifth server (51 kW on its 45 kW busway: E500), its check's message
# in UTF-8 beyond ASCII: an em dash, a micro sign, a degree sign and an astral-plane character
MESSAGE = "busway \u2014 45 kW, 40 \u00b0C, 3 \u00b5s \U0001f525"


def _design(tmp_path: Path) -> Path:
    text = (REPO / "examples" / "tutorial_rack.astral").read_text(encoding="utf-8")
    old = "\"the rack's busway is rated 45 kW\""
    assert old in text
    path = tmp_path / "rack.astral"
    path.write_text(text.replace(old, json.dumps(MESSAGE, ensure_ascii=False)),
                    encoding="utf-8")
    return path


@contextlib.contextmanager
def _ascii_streams():
    """Standard output and error as a C locale without UTF-8 gives them: ASCII, strict."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved


def test_an_ascii_stdout_gets_escapes_not_an_internal_error(tmp_path):
    path = _design(tmp_path)
    with _ascii_streams() as (out, err):
        human = cli.main(["check", str(path), "--set", "servers=5"])
        text = out.buffer.getvalue().decode("ascii")
        out.buffer.seek(0)
        out.buffer.truncate()
        as_json = cli.main(["check", str(path), "--set", "servers=5", "--format", "json"])
        doc = out.buffer.getvalue().decode("ascii")
        # the streams are left as they were found
        assert out.errors == "strict" and err.errors == "strict"
    assert err.buffer.getvalue() == b""
    assert (human, as_json) == (1, 1)          # the design's error, not E000's 3
    # U+1F525 is past U+FFFF: the pair of escapes JSON writes for it
    assert "busway \\u2014 45 kW, 40 \\u00b0C, 3 \\u00b5s \\ud83d\\udd25" in text
    assert "E000" not in text
    # the same escapes are JSON's own: the document reads back as the message itself
    message = json.loads(doc)["diagnostics"][0]["message"]
    assert message == MESSAGE


def test_plot_into_a_missing_folder_or_an_unknown_format_is_a_usage_error(tmp_path):
    pod = REPO / "examples" / "single_pod.astral"
    rack = _design(tmp_path)
    sweep = ["sweep", str(rack), "--grid", "servers=3..4", "--workers", "1", "--x", "gpus",
             "--y", "pue"]
    missing = tmp_path / "no such folder" / "it.png"
    for args in (["forecast", str(pod)], sweep):
        p = astral(*args, "--plot", str(missing))
        assert p.returncode == 2, p.stderr
        # refused before any work: the folder is not there
        assert p.stderr == (f"astral: error: --plot: cannot write `{missing}`: there is no "
                            f"folder `{missing.parent}`\n")
        assert "E000" not in p.stderr and "Traceback" not in p.stderr
        p = astral(*args, "--plot", str(tmp_path / "it.txt"))
        assert p.returncode == 2 and "Format 'txt' is not supported" in p.stderr, p.stderr


def test_an_output_with_no_folder_or_that_is_a_folder_is_refused_before_any_work(tmp_path,
                                                                                  monkeypatch):
    """`calibrate ... -o fits/new.json` with no folder `fits` fitted for two minutes, then said
    it could not write the fit; diagnose and search alike after their work."""
    from astral_dsl.runs import accuracy

    def fitted(*args, **kwargs):
        raise AssertionError("the runs were fitted before the output was checked")

    monkeypatch.setattr(accuracy, "calibrate", fitted)
    table = str(REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv")
    pod = str(REPO / "examples" / "single_pod.astral")
    nowhere = tmp_path / "fits" / "new.json"
    for args, flag, path in (
            (["calibrate", table, "-o", nowhere], "-o", nowhere),
            (["diagnose", pod, "--observed", "run", "-o", nowhere], "-o", nowhere),
            (["search", pod, "-o", tmp_path / "no" / "top.csv"], "-o", tmp_path / "no" / "top.csv"),
            (["forecast", pod, "--trace", tmp_path], "--trace", tmp_path),
            (["synth", pod, "-o", tmp_path / "no" / "drill.csv"], "-o",
             tmp_path / "no" / "drill.csv"),
            (["check", pod, "--write-baseline", tmp_path], "--write-baseline", tmp_path)):
        p = astral(*args)
        said = (f"it is a folder (name a file in it)" if path == tmp_path else
                f"there is no folder `{path.parent}`")
        assert (p.returncode, p.stdout) == (2, ""), args
        assert p.stderr == f"astral: error: {flag}: cannot write `{path}`: {said}\n", args
    assert list(tmp_path.iterdir()) == []


def test_plot_without_an_extension_names_the_file_matplotlib_writes(tmp_path):
    # matplotlib appends its savefig.format (png) to a path without an extension
    p = astral("forecast", REPO / "examples" / "single_pod.astral", "--plot", tmp_path / "it")
    assert p.returncode == 0, p.stderr
    assert f"timeline drawn to {tmp_path / 'it.png'}" in p.stderr
    assert (tmp_path / "it.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_interrupt_a_library_turned_into_another_error_exits_130_quietly(monkeypatch):
    import os
    import signal
    import time

    from astral_dsl.cli import check

    def interrupted_in_an_import(args, overrides):
        # what numpy does when Ctrl-C lands in the import of its C extension
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            raise ImportError("Importing the numpy C-extensions failed") from None
        raise AssertionError("SIGINT did not interrupt")

    monkeypatch.setattr(check, "run", interrupted_in_an_import)
    p = astral("check", "examples/tutorial_rack.astral")
    assert (p.returncode, p.stdout, p.stderr) == (130, "", "")
    # Python's own handler is back once the command returns
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_design_named_dash_is_a_usage_error_saying_only_fmt_reads_stdin():
    source = (REPO / "examples" / "tutorial_rack.astral").read_text(encoding="utf-8")
    for args in (["check", "-"], ["check", "examples/tutorial_rack.astral", "-"],
                 ["size", "-", "--format", "json"], ["diff", "examples/tutorial_rack.astral", "-"],
                 ["sweep", "-", "--grid", "servers=3..4"], ["runs", "-"],
                 ["render", "-", "-o", "x.dot"]):
        p = astral(*args, input=source)
        reason = ("`-` (standard input): only `astral fmt` reads it; give the file of the "
                  "design or runs table (`./-` for a file named `-`)")
        # with --format json, the usage error's one-line document (section 19.4)
        usage_doc = json.loads(p.stdout)["usage_error"] if "json" in args else p.stdout
        assert (p.returncode, usage_doc) == (2, reason if "json" in args else ""), args
        assert p.stderr == f"astral: error: {reason}\n", args
    p = astral("fmt", "-", input=source)          # which does read it
    assert (p.returncode, p.stdout) == (0, source)


def test_an_output_named_dash_is_a_usage_error_and_writes_no_file_named_dash(tmp_path):
    """Every command wrote its file, or --netbox its folder, under the name `-` in the
    working directory: `astral forecast x --trace - | jq` left a 16 MB file `-` there and
    nothing on the pipe; `report -o -`, `synth -o -`, `check --write-baseline -` alike."""
    design = str(REPO / "examples" / "tutorial_rack.astral")
    table = str(REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv")
    for args, flag in ((["forecast", design, "--trace", "-"], "--trace"),
                       (["forecast", design, "--ranks=-"], "--ranks"),
                       (["forecast", design, "--plot", "-", "--format", "json"], "--plot"),
                       (["report", design, "-o", "-"], "-o"),
                       (["render", design, "--output", "-"], "-o"),
                       (["synth", design, "-o", "-"], "-o"),
                       (["diagnose", design, "--observed", "x", "-o", "-"], "-o"),
                       (["check", design, "--write-baseline", "-"], "--write-baseline"),
                       (["export", design, "--netbox", "-"], "--netbox"),
                       (["search", design, "-o", "-"], "-o"),
                       (["sweep", design, "--grid", "servers=3", "-o", "-"], "-o"),
                       (["calibrate", table, "-o", "-"], "-o"),
                       (["calibrate", table, "--docs", "-"], "--docs")):
        p = astral(*args, cwd=tmp_path)
        what = "folder" if flag == "--netbox" else "file"
        reason = (f"{flag} -: {flag} names the {what} it writes, and `-` is not standard "
                  f"output: name the {what} (`./-` for one named `-`)")
        assert (p.returncode, p.stderr) == (2, f"astral: error: {reason}\n"), (args, p.stderr)
        assert list(tmp_path.iterdir()) == [], args
        if "json" in args:
            assert json.loads(p.stdout)["usage_error"] == reason


def test_diff_json_is_the_common_envelope_with_either_sides_errors_once(tmp_path):
    rack = _design(tmp_path)
    # both sides with a fifth server: the same errors on each side, listed once
    p = astral("diff", rack, rack, "--set", "servers=5", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and not p.stderr
    assert list(doc)[:4] == ["version", "format", "valid", "diagnostics"]
    assert doc["valid"] is False and doc["identical"] is True
    checked = json.loads(astral("check", rack, "--set", "servers=5", "--format", "json").stdout)
    errors = [d for d in checked["diagnostics"] if d["severity"] == "error"]
    assert errors and doc["diagnostics"] == errors
    # A as it is, B with the fifth server: B's errors, and the warning among the changes only
    p = astral("diff", rack, rack, "--set-b", "servers=5", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["valid"] is False and doc["diagnostics"] == errors
    assert doc["a"]["valid"] is True and doc["b"]["valid"] is False


def test_diff_json_of_an_unreadable_side_is_the_envelope_with_e100(tmp_path):
    missing = tmp_path / "missing.astral"
    p = astral("diff", "examples/tutorial_rack.astral", missing, "--format", "json")
    assert (p.returncode, p.stderr) == (2, "")
    doc = json.loads(p.stdout)
    assert (doc["valid"], doc["file"]) == (False, str(missing))
    assert [d["code"] for d in doc["diagnostics"]] == ["E100"]


def test_synth_json_is_the_common_envelope_and_a_design_with_errors_exits_1(tmp_path):
    pod = "examples/single_pod.astral"
    p = astral("synth", pod, "-o", tmp_path / "run.csv", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and list(doc)[:4] == ["version", "format", "valid", "diagnostics"]
    assert doc["valid"] is True and doc["file"] == pod
    # single_pod's job: 1,024 GPUs (tp 8 x pp 4 x dp 32), a rank each; 3 iterations by default
    assert (doc["job"], doc["ranks"], doc["written"]) == ("llama70b", 1024,
                                                          str(tmp_path / "run.csv"))
    assert len(doc["iterations"]) == 3 and doc["fault"] is None
    # a design with errors (a fifth server: 51 kW on the 45 kW busway): exit 1 as every
    # command's, its diagnostics in the envelope, nothing written
    rack = _design(tmp_path)
    p = astral("synth", rack, "--set", "servers=5", "-o", tmp_path / "bad.csv", "--format", "json")
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["valid"]) == (1, False)
    assert "E500" in [d["code"] for d in doc["diagnostics"]]
    assert not (tmp_path / "bad.csv").exists()
    p = astral("synth", tmp_path / "missing.astral", "-o", tmp_path / "x.csv", "--format", "json")
    assert p.returncode == 2 and json.loads(p.stdout)["diagnostics"][0]["code"] == "E100"


def test_synth_says_one_iteration_in_the_singular(tmp_path):
    """docs/api.md's drill of one iteration printed "1,024 ranks x 1 iterations written"."""
    p = astral("synth", "examples/single_pod.astral", "-o", tmp_path / "run.csv",
               "--iterations", "1", "--seed", "5")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"synth: job `llama70b`, 1,024 ranks x 1 iteration written to "
                               f"{tmp_path / 'run.csv'}; injected: no fault")


def test_synth_refuses_a_log_that_diagnose_would_not_read(tmp_path, monkeypatch):
    """A drill's rank log of more lines than `astral diagnose` reads in one file (E781 there:
    `llama405b` on examples/gb200_nvl72.astral, 3 iterations, 9,374,208 rows against
    4,000,000; the reference design's own job, one iteration, 8.6 million) is a usage error
    naming the iterations that fit, or a smaller job when one iteration does not, nothing
    written (a CSV's header is a line too); a log within the cap is written and read. The cap
    is made small here, as the 4,000,000 lines of a real one take a minute to generate."""
    from astral_dsl.observe import ranklog

    design = "tests/fixtures/diagnose/small.astral"       # 1,792 rows an iteration
    monkeypatch.setattr(ranklog, "MAX_ROWS", 4000)
    out = tmp_path / "run.csv"
    p = astral("synth", design, "-o", out, "--seed", "1")
    assert p.returncode == 2 and not out.exists()
    assert p.stderr == ("astral: error: the rank log would hold 5,376 rows, more than the "
                        "3,999 that `astral diagnose` reads in one file (E781): --iterations 2 "
                        "or fewer; or a directory of profiler traces, one file per rank "
                        "(-o DIRECTORY)\n")
    p = astral("synth", design, "-o", tmp_path / "run.jsonl", "--iterations", "3",
               "--format", "json")
    assert p.returncode == 2 and "more than the 4,000 that" in json.loads(p.stdout)["usage_error"]
    p = astral("synth", design, "-o", out, "--seed", "1", "--iterations", "2")
    assert p.returncode == 0 and len(out.read_text().splitlines()) == 3585
    assert astral("diagnose", design, "--observed", out).returncode == 0
    monkeypatch.setattr(ranklog, "MAX_ROWS", 1791)         # one iteration is one row too many
    for name, room in (("one.csv", 1790), ("one.jsonl", 1791)):
        p = astral("synth", design, "-o", tmp_path / name, "--iterations", "1")
        assert p.returncode == 2 and not (tmp_path / name).exists()
        assert f"the rank log would hold 1,792 rows, more than the {room:,} that `astral " \
               f"diagnose` reads in one file (E781): a smaller job" in p.stderr, p.stderr
    monkeypatch.setattr(ranklog, "MAX_ROWS", 1793)         # the header and every row
    assert astral("synth", design, "-o", tmp_path / "one.csv", "--iterations", "1").returncode \
        == 0


def test_report_writes_whole_or_nothing_and_never_touches_a_file_of_the_users(tmp_path):
    mine = tmp_path / "review.html.tmp"            # the name the page was written under before
    mine.write_text("the user's", encoding="utf-8")
    target = tmp_path / "review.html"
    p = astral("report", "examples/tutorial_rack.astral", "-o", target)
    assert p.returncode == 0, p.stderr
    assert target.read_bytes().startswith(b"<!DOCTYPE html>")
    assert mine.read_text(encoding="utf-8") == "the user's"
    folder = tmp_path / "a folder"
    folder.mkdir()
    p = astral("report", "examples/tutorial_rack.astral", "-o", folder)
    assert p.returncode == 2
    assert p.stderr == (f"astral: error: -o: cannot write `{folder}`: it is a folder (name a "
                        f"file in it)\n")
    # nothing left behind: the folder, the page and the user's file only
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a folder", "review.html",
                                                          "review.html.tmp"]


def test_an_option_a_command_does_not_take_shows_that_commands_usage():
    p = astral("fmt", "examples/tutorial_rack.astral", "--format", "json")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.startswith("usage: astral fmt [-h] [--check] [--diff]")
    assert p.stderr.endswith("astral: error: unrecognized arguments: --format json\n")


def test_forecast_under_an_unknown_scenario_is_e216_as_check_says_it():
    pod = "examples/single_pod.astral"
    for command in ("check", "forecast"):
        p = astral(command, pod, "--scenario", "tor_plane_a_rail3", "--format", "json")
        doc = json.loads(p.stdout)
        assert (p.returncode, p.stderr, doc["valid"]) == (1, "", False), command
        (d,) = [d for d in doc["diagnostics"] if d["code"] == "E216"]
        assert d["message"] == "--scenario tor_plane_a_rail3: no such scenario"
        assert d["hint"] == "did you mean `tor_plane_a_rail_3`?"


def test_export_format_human_is_what_its_help_says(tmp_path):
    helptext = " ".join(astral("export", "--help").stdout.split())
    assert ("--format {json,human} json (default): the document alone; human: the same "
            "document, and the diagnostics as text on standard error") in helptext
    rack = _design(tmp_path)
    plain = astral("export", rack, "--set", "servers=5")
    human = astral("export", rack, "--set", "servers=5", "--format", "human")
    assert plain.returncode == human.returncode == 1
    assert human.stdout == plain.stdout and json.loads(human.stdout)["valid"] is False
    assert plain.stderr == "" and human.stderr.startswith("error[E500]: " + MESSAGE)


def test_export_netbox_answers_in_json_when_asked(tmp_path):
    rack, out = _design(tmp_path), tmp_path / "netbox"
    p = astral("export", rack, "--netbox", out, "--format", "json")
    assert (p.returncode, p.stderr) == (0, "")
    doc = json.loads(p.stdout)
    assert (doc["valid"], doc["netbox"]["directory"]) == (True, str(out))
    files = {f["name"]: f["rows"] for f in doc["netbox"]["files"]}
    # the tutorial: one site, one rack, 4 servers and no switch (4 devices)
    assert (files["sites.csv"], files["racks.csv"], files["devices.csv"]) == (1, 1, 4)
    assert sorted(files) == sorted(x.relative_to(out).as_posix() for x in out.rglob("*")
                                   if x.is_file())
    # without --format: the lines it always printed
    text = astral("export", rack, "--netbox", tmp_path / "again").stdout
    assert text.startswith(f"wrote {len(files)} file(s) to {tmp_path / 'again'}")
    # a design with errors writes nothing: the envelope, `netbox` null, exit 1
    p = astral("export", rack, "--set", "servers=5", "--netbox", tmp_path / "no", "--format",
               "json")
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["valid"], doc["netbox"]) == (1, False, None)
    assert not (tmp_path / "no").exists()


def test_diagnostics_on_stderr_take_their_colour_from_stderr_not_stdout(tmp_path):
    """A terminal on standard output, standard error into a file (`2>log`): no ANSI in the log."""
    import os
    import pty
    import subprocess

    rack = _design(tmp_path)
    main, side = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    try:
        p = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "synth", str(rack),
                            "--set", "servers=5", "-o", str(tmp_path / "x.csv")],
                           cwd=REPO, env=env, stdout=side, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(side)
        os.close(main)
    assert p.returncode == 1
    assert p.stderr.startswith(b"error[E500]: ") and b"\x1b[" not in p.stderr


def test_size_under_an_unknown_scenario_reports_e216_and_no_sizing(tmp_path):
    rack = _design(tmp_path)
    p = astral("size", rack, "--scenario", "derated_busway2")
    assert p.returncode == 1
    assert p.stdout.startswith("error[E216]: --scenario derated_busway2: no such scenario")
    assert "did you mean `derated_busway`?" in p.stdout and "PUE" not in p.stdout
    doc = json.loads(astral("size", rack, "--scenario", "derated_busway2", "--format",
                            "json").stdout)
    assert (doc["valid"], doc["scenario"], doc["summary"]) == (False, None, None)
    # the scenario it does declare: its report, as before
    p = astral("size", rack, "--scenario", "derated_busway")
    assert p.returncode == 0 and "PUE" in p.stdout


def test_set_without_a_name_is_a_usage_error_as_without_an_equals_sign():
    for item in ("=5", " =5", "servers"):
        p = astral("check", "examples/tutorial_rack.astral", "--set", item)
        assert (p.returncode, p.stdout) == (2, ""), item
        assert p.stderr == f"astral: error: --set expects NAME=VALUE, got `{item}`\n"


def test_one_parameter_set_twice_is_a_usage_error_not_the_last_value_winning():
    # `--set servers=4 --set servers=5` checked servers = 5 without a word: the what-if named
    # two values for one parameter
    p = astral("check", "examples/tutorial_rack.astral", "--set", "servers=4", "--set",
               " servers = 5")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == ("astral: error: --set servers is given twice (`4` and `5`): give each "
                        "parameter one value\n")
    rack = "examples/tutorial_rack.astral"
    p = astral("diff", rack, rack, "--set-b", "servers=4", "--set-b", "servers=4")
    assert p.returncode == 2 and "--set-b servers is given twice" in p.stderr
    # --set on both sides and --set-b on B: B's own value, as documented (not a repeat)
    p = astral("diff", rack, rack, "--set", "servers=4", "--set-b", "servers=5")
    assert p.returncode in (0, 1), p.stderr


def _process(args, **kwargs):
    import subprocess

    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *map(str, args)], cwd=REPO,
                          stderr=subprocess.PIPE, timeout=120, **kwargs)


def test_a_closed_pipe_keeps_the_verdict_and_says_nothing(tmp_path):
    import os

    rack = _design(tmp_path)
    for servers, verdict in (("4", 0), ("5", 1)):       # 51 kW on the 45 kW busway: E500
        read, write = os.pipe()
        os.close(read)                                  # `| head -0`: the reader is gone
        try:
            p = _process(["check", rack, "--set", f"servers={servers}"], stdout=write)
        finally:
            os.close(write)
        assert (p.returncode, p.stderr) == (verdict, b""), servers


def test_a_closed_stdout_is_dropped_and_a_full_disk_is_a_usage_error(tmp_path):
    import os

    import pytest

    rack = _design(tmp_path)
    # `astral check ... >&-`: Python's sys.stdout is None
    p = _process(["check", rack, "--set", "servers=5"], preexec_fn=lambda: os.close(1))
    assert (p.returncode, p.stderr) == (1, b"")
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        p = _process(["check", rack], stdout=full)
    assert p.returncode == 2
    assert p.stderr == b"astral: error: cannot write the output: No space left on device\n"


def test_fmt_interrupted_while_writing_leaves_the_whole_formatted_file(tmp_path, monkeypatch):
    import os
    import signal
    import threading

    from astral_dsl.fmt import format_text

    original = (REPO / "examples" / "tutorial_rack.astral").read_text(encoding="utf-8")
    messy = original.replace("\n  power = 700 W", "\n      power   =   700 W")
    assert messy != original
    path = tmp_path / "rack.astral"
    path.write_text(messy, encoding="utf-8")
    expected = format_text(messy, str(path))
    real_write, real_pwrite, calls = os.write, os.pwrite, []

    def slow(fd, data, *offset):
        # Ctrl-C at the first write to the file, and 100 bytes a call: the write under way
        if fd > 2:
            if not calls:
                os.kill(os.getpid(), signal.SIGINT)
            calls.append(offset)
            data = bytes(data[:100])
        return real_pwrite(fd, data, *offset) if offset else real_write(fd, data)

    monkeypatch.setattr(os, "pwrite", slow)
    monkeypatch.setattr(os, "write", slow)
    # another thread alive (a pool's, a progress line's): the kernel may hand it the SIGINT
    done = threading.Event()
    other = threading.Thread(target=done.wait, daemon=True)
    other.start()
    try:
        p = astral("fmt", path)
    finally:
        done.set()
    assert p.returncode == 130
    assert path.read_text(encoding="utf-8") == expected      # not a truncated file
    assert len(calls) > 1                                    # written in several calls


def test_report_interrupted_while_writing_leaves_no_temporary_file(tmp_path, monkeypatch):
    import os
    import signal
    import time

    real_replace = os.replace

    def interrupted(src, dst, *args, **kwargs):
        if str(dst).endswith("review.html"):
            os.kill(os.getpid(), signal.SIGINT)      # Ctrl-C as the page is put in place
            time.sleep(5)
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", interrupted)
    p = astral("report", "examples/tutorial_rack.astral", "-o", tmp_path / "review.html")
    assert p.returncode == 130
    assert list(tmp_path.iterdir()) == []


def test_forecast_interrupted_while_writing_its_trace_leaves_the_trace_there_was(tmp_path,
                                                                                 monkeypatch):
    """The trace is written as its events are made (megabytes, seconds): Ctrl-C then left half a
    trace, JSON cut in the middle, over the whole one the last run had written. Now the old
    trace stays, and nothing else is left."""
    from astral_dsl.outputs.forecast import trace

    out = tmp_path / "trace.json"
    out.write_text('{"traceEvents":[]}', encoding="utf-8")

    def interrupted(*args, **kwargs):       # Ctrl-C once the events are written
        raise KeyboardInterrupt

    monkeypatch.setattr(trace, "_head", interrupted)
    p = astral("forecast", "tests/fixtures/diagnose/tiny.astral", "--trace", out)
    assert p.returncode == 130, p.stdout + p.stderr
    assert out.read_text(encoding="utf-8") == '{"traceEvents":[]}'
    assert list(tmp_path.iterdir()) == [out]
    monkeypatch.undo()
    p = astral("forecast", "tests/fixtures/diagnose/tiny.astral", "--trace", out)
    assert p.returncode == 0 and json.loads(out.read_text(encoding="utf-8"))["traceEvents"]
    assert list(tmp_path.iterdir()) == [out]


def test_synth_refuses_a_part_or_a_severity_it_would_drop(tmp_path):
    """`--severity 2` (or a --part) without a --fault drilled a healthy run without a word, and
    `--part ''` a part drawn at random: each is a usage error, nothing written (an empty
    --part, as every empty name: test_an_empty_job_or_scenario_name_is_a_usage_error)."""
    design = "tests/fixtures/diagnose/tiny.astral"
    out = tmp_path / "drill.csv"
    for args, said in ((["--severity", "2"], "--severity with no fault to drill"),
                       (["--fault", "none", "--part", "Tiny.racks[0]"],
                        "--part with no fault to drill"),
                       (["--fault", "gpu", "--part", ""],
                        "--part: the name is empty: it names no part\n")):
        p = astral("synth", design, "-o", out, *args)
        assert p.returncode == 2 and p.stderr.startswith(f"astral: error: {said}"), p.stderr
    assert list(tmp_path.iterdir()) == []
    p = astral("synth", design, "-o", out, "--fault", "gpu", "--severity", "1.5")
    assert p.returncode == 0 and "(severity 1.5)" in p.stdout, p.stdout + p.stderr


def test_synth_interrupted_while_writing_leaves_no_drill_of_some_ranks(tmp_path, monkeypatch):
    """A drill's traces (one per rank) and its rank log are written for seconds: Ctrl-C left
    some ranks' traces, which `astral diagnose` read as a job with ranks missing (or beside an
    earlier drill's as one job), or half a log. Now all or nothing: the folder it made goes,
    a folder of the user's keeps what it held."""
    from astral_dsl.synth import write

    real = write._trace

    def interrupted(s, rank, *args):        # Ctrl-C with the first rank's trace written
        if rank == 1:
            raise KeyboardInterrupt
        return real(s, rank, *args)

    monkeypatch.setattr(write, "_trace", interrupted)
    design = "tests/fixtures/diagnose/tiny.astral"
    p = astral("synth", design, "-o", tmp_path / "drill")
    assert p.returncode == 130 and list(tmp_path.iterdir()) == [], p.stdout + p.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "rank-0.json.gz").write_bytes(b"an earlier drill's")
    (mine / "notes.txt").write_text("mine")
    p = astral("synth", design, "-o", mine)
    assert p.returncode == 130
    assert sorted(f.name for f in mine.iterdir()) == ["notes.txt", "rank-0.json.gz"]
    assert (mine / "rank-0.json.gz").read_bytes() == b"an earlier drill's"
    log = tmp_path / "drill.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n")
    monkeypatch.setattr(write, "_formatted", lambda *args: (_ for _ in ()).throw(
        KeyboardInterrupt))
    p = astral("synth", design, "-o", log)
    assert p.returncode == 130
    assert log.read_text() == "rank,iteration,phase,start_s,duration_s,peer,op\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["drill.csv", "mine"]
    monkeypatch.undo()
    p = astral("synth", design, "-o", mine)
    assert p.returncode == 0, p.stdout + p.stderr
    ranks = sorted(f.name for f in mine.iterdir() if f.name.startswith("rank-"))
    assert len(ranks) == int(p.stdout.split(" ranks x ")[0].split()[-1].replace(",", ""))
    assert (mine / "notes.txt").read_text() == "mine" and len(list(mine.iterdir())) == \
        len(ranks) + 1


def test_render_dpi_outside_its_range_or_for_another_format_is_a_usage_error(tmp_path):
    for dpi in ("0", "-5", "601"):           # -5 made a 32,766 x 32,767 picture
        p = astral("render", "examples/tutorial_rack.astral", "-o", tmp_path / "r.png", "--dpi",
                   dpi)
        assert p.returncode == 2
        assert p.stderr == (f"astral: error: --dpi {dpi}: a PNG's resolution is from 1 to 600 "
                            "dots per inch\n")
    p = astral("render", "examples/tutorial_rack.astral", "-o", tmp_path / "r.dot", "--dpi", "300")
    assert (p.returncode, p.stderr) == (2, "astral: error: --dpi sets the resolution of a PNG, "
                                           "not of a .dot picture\n")
    assert list(tmp_path.iterdir()) == []


def test_fmt_reads_no_more_of_stdin_than_of_a_file():
    """`astral fmt -` read standard input whole: `< /dev/zero` filled the memory (E000), 300 MB
    of text took 0.9 GB; a file past 16 MiB is refused unread, and so is stdin past it now."""
    from astral_dsl.cli.fmt import MAX_FILE_BYTES

    p = astral("fmt", "-", input=b"x" * (MAX_FILE_BYTES + 1))
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "error[E100]: cannot read `-`: larger than 16 MiB\n"
    p = astral("fmt", "-", input=b"param x =   1\n" + b" " * (MAX_FILE_BYTES - 14))
    assert (p.returncode, p.stdout) == (0, "param x = 1\n"), p.stderr


def test_lsp_takes_a_debounce_and_a_timeout_it_can_keep():
    """The server took any float: `--timeout -5` or `0` timed every analysis out (an editor got
    no diagnostics), `--debounce 1e308` never checked a change, `nan` stood for 0 or no limit."""
    for flag, value, said in (("--debounce", "-1", "-1: seconds from 0 to 60"),
                              ("--debounce", "1e308", "1e+308: seconds from 0 to 60"),
                              ("--debounce", "nan", "nan: seconds from 0 to 60"),
                              ("--timeout", "0", "0: a finite time in seconds, more than 0"),
                              ("--timeout", "-5", "-5: a finite time in seconds, more than 0"),
                              ("--timeout", "nan", "nan: a finite time in seconds, more than 0"),
                              ("--timeout", "inf", "inf: a finite time in seconds, more than 0")):
        p = astral("lsp", "--stdio", flag, value, input=b"")
        assert (p.returncode, p.stdout) == (2, ""), (flag, value)
        assert p.stderr.startswith(f"astral: error: {flag} {said}"), p.stderr


def test_fmt_stdin_to_an_ascii_stdout_writes_the_source_in_utf8():
    source = 'param x = 4 // caf\u00e9 \u2014 40 \u00b5s\nsite S {  }\n'
    from astral_dsl.fmt import format_text

    expected = format_text(source, "<stdin>").encode("utf-8")
    assert "caf\u00e9 \u2014 40 \u00b5s".encode("utf-8") in expected
    with _ascii_streams() as (out, err):
        saved = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(source.encode("utf-8")), encoding="utf-8")
        try:
            code = cli.main(["fmt", "-"])
        finally:
            sys.stdin = saved
        data = out.buffer.getvalue()
    assert (code, data, err.buffer.getvalue()) == (0, expected, b"")


def test_plot_without_an_extension_beside_a_folder_of_that_name_is_drawn(tmp_path):
    # `--plot out` with a folder `out` there: matplotlib writes out.png beside it, which the
    # check before any work refused as `out` being a folder
    (tmp_path / "it").mkdir()
    p = astral("forecast", REPO / "examples" / "single_pod.astral", "--plot", tmp_path / "it")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "it.png").is_file()
    (tmp_path / "it.png").unlink()
    (tmp_path / "it.png").mkdir()           # the file it would write is the folder: refused
    p = astral("forecast", REPO / "examples" / "single_pod.astral", "--plot", tmp_path / "it")
    assert p.returncode == 2
    assert p.stderr == (f"astral: error: --plot: cannot write `{tmp_path / 'it.png'}`: it is a "
                        f"folder (name a file in it)\n")


def test_a_whole_write_asks_the_kernel_before_renaming_over_a_file(tmp_path, monkeypatch):
    """outputs/whole.py renames the finished file over the output; it first opens the output as
    open() would (without truncating), so a file its user may not write, or a link that Linux's
    `fs.protected_symlinks` forbids following (a link planted in /tmp pointing at another's
    file), is refused as open() refuses it, not replaced: the kernel's refusal is simulated
    here (tests run as root, and this container's sysctl is 0). A dangling link's target the
    probe made is removed when the writing fails."""
    import os

    import pytest

    from astral_dsl.outputs import whole as whole_mod

    mine = tmp_path / "theirs.txt"
    mine.write_text("keep", encoding="utf-8")
    planted = tmp_path / "trace.json"
    planted.symlink_to(mine)
    real_open = os.open

    def kernel(path, flags, *args):
        if os.fspath(path) == os.fspath(planted):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(whole_mod.os, "open", kernel)
    with pytest.raises(PermissionError):
        with whole_mod.whole(str(planted), "utf-8") as fh:
            fh.write("new")
    assert mine.read_text(encoding="utf-8") == "keep" and planted.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.txt", "trace.json"]
    monkeypatch.setattr(whole_mod.os, "open", real_open)
    dangling = tmp_path / "out.json"
    dangling.symlink_to(tmp_path / "target.json")
    with pytest.raises(RuntimeError):
        with whole_mod.whole(str(dangling), "utf-8") as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert not (tmp_path / "target.json").exists() and dangling.is_symlink()
    with whole_mod.whole(str(dangling), "utf-8") as fh:
        fh.write("whole")
    assert (tmp_path / "target.json").read_text(encoding="utf-8") == "whole"


def test_an_option_of_a_file_given_an_empty_path_is_a_usage_error(tmp_path):
    """An empty path was taken as no option at all, in silence (`runs --calibration "$FIT"`
    with FIT unset scored with the shipped fit; `check --write-baseline ""` and `calibrate -o
    ""` wrote nothing), or as `.` (`report -o ""`: "cannot write ``: Is a directory")."""
    design = str(REPO / "examples" / "tutorial_rack.astral")
    table = str(REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv")
    for args, flag in ((["runs", table, "--calibration", ""], "--calibration"),
                       (["check", design, "--baseline", ""], "--baseline"),
                       (["check", design, "--write-baseline", ""], "--write-baseline"),
                       (["render", design, "-o", "x.svg", "--highlight", ""], "--highlight"),
                       (["report", design, "-o", ""], "-o"),
                       (["report", design, "-o", "x.html", "--diagnosis", ""], "--diagnosis"),
                       (["forecast", design, "--operator-table", ""], "--operator-table"),
                       (["forecast", design, "--trace="], "--trace"),
                       (["calibrate", table, "-o", ""], "-o"),
                       (["export", design, "--netbox", ""], "--netbox")):
        p = astral(*args, cwd=tmp_path)
        assert (p.returncode, p.stderr) == (
            2, f"astral: error: {flag}: the path is empty: it names no file\n"), (args, p.stderr)
        assert list(tmp_path.iterdir()) == [], args


def test_an_empty_job_or_scenario_name_is_a_usage_error(tmp_path):
    """`--job ""` (`--job "$JOB"` with JOB unset) was looked up as a name: "--job : no such
    job" (E221), the name shown as nothing; an empty --scenario alike (E216), and synth's
    --part ("--part with no fault to drill", or "--part ``: name the part")."""
    design = str(REPO / "examples" / "explore.astral")
    observed = tmp_path / "log.csv"
    observed.write_text("rank,iteration,phase,start_s,duration_s\n0,1,forward,0,1\n")
    for args, flag, what in ((["forecast", design, "--job", ""], "--job", "job"),
                             (["search", design, "--job="], "--job", "job"),
                             (["diagnose", design, "--job", "", "--observed", observed],
                              "--job", "job"),
                             (["report", design, "-o", "x.html", "--job", "llama70b",
                               "--job", ""], "--job", "job"),
                             (["forecast", design, "--scenario", ""], "--scenario", "scenario"),
                             (["check", design, "--scenario="], "--scenario", "scenario"),
                             # synth's --part: it was refused as a --part with no --fault
                             (["synth", design, "-o", "x.csv", "--part", ""], "--part", "part"),
                             (["synth", design, "-o", "x.csv", "--fault", "gpu", "--part", "",
                               "--fault", "tor", "--part", "x"], "--part", "part")):
        p = astral(*args, cwd=tmp_path)
        assert (p.returncode, p.stderr) == (
            2, f"astral: error: {flag}: the name is empty: it names no {what}\n"), \
            (args, p.stderr)
        assert sorted(f.name for f in tmp_path.iterdir()) == ["log.csv"], args


def test_a_broken_pipe_that_is_not_standard_outputs_is_an_internal_error(tmp_path, monkeypatch,
                                                                          capfd):
    """Every BrokenPipeError that reached the command line was taken for its output's reader
    gone (`astral export x | head`): exit 0, silently. One of another pipe (`astral render`
    writing its DOT text to a `dot` that stopped reading) left no picture, no word and exit 0.
    Now only standard output's is (its reader gone: a pipe that polls POLLERR); any other is an
    internal error (E000, exit 3)."""
    import os

    import astral_dsl.cli as cli
    import astral_dsl.cli.check as check

    def broken(args, overrides):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(check, "run", broken)
    assert cli.main(["check", str(REPO / "examples" / "tutorial_rack.astral")]) == 3
    assert "error[E000]: internal compiler error: BrokenPipeError" in capfd.readouterr().err
    # standard output's own: a pipe whose reader is gone, still the verdict (as above)
    read, write = os.pipe()
    os.close(read)
    try:
        p = _process(["export", _design(tmp_path)], stdout=write)
    finally:
        os.close(write)
    assert (p.returncode, p.stderr) == (0, b"")
    assert not cli._reader_gone(open(os.devnull, "w"))


def test_a_dot_that_stops_reading_its_input_is_said(monkeypatch):
    """graphviz's pipe raises BrokenPipeError when `dot` exits before reading all of the DOT
    text: the refusal of what astral drew (an internal error), as a syntax error `dot` names."""
    import graphviz
    import pytest

    from astral_dsl.outputs import render

    def stopped(self, *args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(render, "dot_available", lambda: True)
    monkeypatch.setattr(graphviz.Digraph, "pipe", stopped)
    monkeypatch.setattr(render.laid, "_KEPT", render.laid.kept())
    with pytest.raises(RuntimeError, match="`dot` stopped reading the DOT text astral drew"):
        render.layout(graphviz.Digraph(), "svg")


def test_an_option_given_an_empty_value_is_a_usage_error(tmp_path):
    """`--cluster "$SCHEDULER"` with SCHEDULER unset ran the search on this machine's cores, in
    silence; an empty --gpus split the job's own count, --life took 4 years, --order the
    job's, --window every micro-batch, --x a plot "needs --x COLUMN", and --by-source was
    looked up as a table (`--by-source : no table of that name`). Each says its value is
    empty now, as an empty --job or path does, before any work."""
    design = str(REPO / "examples" / "explore.astral")
    observed = tmp_path / "log.csv"
    observed.write_text("rank,iteration,phase,start_s,duration_s\n0,1,forward,0,1\n")
    table = str(REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv")
    for args, said in (
            (["search", design, "--cluster", ""], "--cluster: the value is empty: it names no "
             "scheduler (leave --cluster out to run on this machine)"),
            (["search", design, "--gpus="], "--gpus: the value is empty: it gives no GPU count"),
            (["search", design, "--life", ""],
             "--life: the value is empty: it gives no write-off period"),
            (["diagnose", design, "--observed", observed, "--order", ""],
             "--order: the value is empty: it gives no rank order"),
            (["forecast", design, "--trace", "t.json", "--window", ""],
             "--window: the value is empty: it gives no micro-batches"),
            (["sweep", design, "--grid", "n=1,2", "--plot", "p.png", "--x", "", "--y", "gpus"],
             "--x: the value is empty: it names no column"),
            (["calibrate", table, "--by-source", ""],
             "--by-source: the value is empty: it names no table")):
        p = astral(*args, cwd=tmp_path)
        assert (p.returncode, p.stderr) == (2, f"astral: error: {said}\n"), (args, p.stderr)
        assert sorted(f.name for f in tmp_path.iterdir()) == ["log.csv"], args
