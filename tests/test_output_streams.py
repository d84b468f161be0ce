"""An output named on the command line that is not a regular file: a device, a pipe (`/dev/null`,
`/dev/stdout`, a shell's `>(gzip > r.gz)`, a FIFO) is written into and left what it is. The
report's page was written to a temporary file and renamed over it: `astral report -o
/dev/null`, run as root, made /dev/null a regular file holding the page, and `-o /dev/full`
said it wrote. A FIFO that no process reads is an error, not a wait: every command's output
blocked there until a reader came (regularfile.output)."""
from __future__ import annotations

import errno
import os
import stat
import subprocess
from pathlib import Path

import pytest

from clirun import astral_runs

REPO = Path(__file__).resolve().parents[1]
TINY = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nrack R { hosts = 1 x H }\n" \
       "site S { racks = 1 x R }\n"


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_the_page_is_written_into_a_pipe_which_stays_one(fifo):
    from astral_dsl.outputs.report.written import write_whole

    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)      # a process reads it
    try:
        write_whole(str(fifo), b"<html>page</html>")
        assert os.read(reader, 1000) == b"<html>page</html>"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)       # not renamed over by a regular file
    assert [p.name for p in fifo.parent.iterdir()] == ["pipe"]     # no temporary file left


def test_a_pipe_that_no_process_reads_is_an_error_not_a_wait(fifo):
    from astral_dsl.outputs.report.written import write_whole

    with pytest.raises(OSError) as caught:
        write_whole(str(fifo), b"page")
    assert caught.value.errno == errno.ENXIO and caught.value.filename == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_every_output_on_a_pipe_no_process_reads_is_a_usage_error(tmp_path, fifo):
    design = tmp_path / "tiny.astral"
    design.write_text(TINY, encoding="utf-8")
    for name in ("pipe.svg", "pipe.csv", "pipe.json"):
        (tmp_path / name).symlink_to(fifo)
    commands = [("report", design, "-o", fifo),
                ("render", design, "-o", tmp_path / "pipe.svg"),
                ("check", design, "--write-baseline", fifo),
                ("sweep", REPO / "examples/explore.astral", "--workers", "1", "--grid",
                 "hosts_per_rack=1", "-o", tmp_path / "pipe.csv"),
                ("forecast", REPO / "tests/fixtures/diagnose/tiny.astral", "--trace",
                 tmp_path / "pipe.json")]
    try:
        results = astral_runs(commands, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("an output on a FIFO that no process reads blocked the command")
    for args, proc in zip(commands, results):
        assert proc.returncode == 2, (args, proc.stderr)
        assert b"a pipe that no process reads from" in proc.stderr + proc.stdout, \
            (args, proc.stderr)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
