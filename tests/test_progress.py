"""Progress for work that takes a while (issue #25, item 7): `astral report`, `check --margins`
and `diagnose` say on standard error what they are doing when it runs past
$ASTRAL_PROGRESS_DELAY seconds (2 by default) and standard error is a terminal; a pipe gets
nothing. The language server's first analysis shows work-done progress in a client that takes
it. (The delay is set to 0 here: these tests check what is shown, not how long anything
takes.)"""
from __future__ import annotations

import asyncio
import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from lsprotocol import types as lsp

from astral_dsl.outputs.progress import Progress

REPO = Path(__file__).resolve().parents[1]


def _env(**more):
    env = dict(os.environ, PYTHONPATH=str(REPO), **more)
    env.pop("NO_COLOR", None)
    return env


def _with_a_terminal(args, **env):
    """Run `astral ARGS` with standard error on a pseudo-terminal: (exit code, stdout, what the
    terminal received)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "astral_dsl.cli", *args], cwd=REPO,
                            env=_env(**env), stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:            # the terminal is closed: the process is done with it
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read()
    proc.wait(timeout=300)
    os.close(leader)
    return proc.returncode, out.decode(), seen.decode(errors="replace")


def test_report_says_what_it_is_doing_on_a_terminal(tmp_path):
    page = tmp_path / "review.html"
    code, out, tty = _with_a_terminal(["report", "examples/tutorial_rack.astral", "-o",
                                       str(page)], ASTRAL_PROGRESS_DELAY="0")
    assert code in (0, 1) and page.is_file(), (out, tty)
    assert "astral report: checking the design and every scenario (" in tty
    assert tty.rstrip("\r\n").endswith("\r\x1b[K")         # the line is erased at the end
    assert "astral report" not in out                       # nothing on standard output


def test_margins_and_diagnose_too():
    code, _, tty = _with_a_terminal(["check", "--margins", "examples/tutorial_rack.astral"],
                                    ASTRAL_PROGRESS_DELAY="0")
    assert code == 0 and "astral check --margins: " in tty
    code, _, tty = _with_a_terminal(["diagnose", "examples/single_pod.astral", "--observed",
                                     "nothing-here"], ASTRAL_PROGRESS_DELAY="0")
    assert "astral diagnose: compiling the design" in tty or \
        "astral diagnose: reading the observed data" in tty


def test_a_pipe_gets_no_progress(tmp_path):
    """Standard error not a terminal (in this process, tests/clirun.py: its streams are pipes,
    as a process's are, without the ~0.3 s of CPU of a new interpreter)."""
    from clirun import astral

    proc = astral("report", "examples/tutorial_rack.astral", "-o", str(tmp_path / "r.html"),
                  env=_env(ASTRAL_PROGRESS_DELAY="0"), text=False)
    assert proc.returncode in (0, 1) and (tmp_path / "r.html").is_file(), proc.stderr
    assert b"astral report:" not in proc.stderr and b"\x1b[K" not in proc.stderr


def test_quick_work_shows_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    with Progress("astral report", stream, after=5.0) as progress:
        progress.step("checking")
    assert stream.getvalue() == ""
    stream = Tty()
    with Progress("astral report", stream, after=0.0) as progress:
        progress.step("checking")
        import time

        time.sleep(0.3)
    assert "\r\x1b[Kastral report: checking (0 s)" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_the_language_servers_first_analysis_shows_progress(tmp_path, monkeypatch):
    from test_lsp import Session, TIMEOUT

    monkeypatch.setenv("ASTRAL_PROGRESS_DELAY", "0")
    (tmp_path / "main.astral").write_text((REPO / "examples" / "tutorial_rack.astral")
                                          .read_text(encoding="utf-8"), encoding="utf-8")

    class Progressive(Session):
        """A client that takes work-done progress, recording what it is told."""
        def __init__(self, root):
            super().__init__(root)
            self.created, self.told = [], []

            @self.client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
            def create(params: lsp.WorkDoneProgressCreateParams):
                self.created.append(params.token)

            @self.client.feature(lsp.PROGRESS)
            def progress(params: lsp.ProgressParams):
                self.told.append(params.value)

        async def __aenter__(self):
            await self.client.start_io(sys.executable, "-m", "astral_dsl.cli", "lsp",
                                       "--debounce", "0.05", cwd=str(self.root),
                                       env=_env(ASTRAL_PROGRESS_DELAY="0"))
            caps = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(
                work_done_progress=True))
            await asyncio.wait_for(self.client.initialize_async(lsp.InitializeParams(
                capabilities=caps, root_uri=self.root.as_uri(), process_id=None)), TIMEOUT)
            self.client.initialized(lsp.InitializedParams())
            return self

    async def scenario():
        async with Progressive(tmp_path) as s:
            uri = s.open(tmp_path / "main.astral")
            await s.diagnostics(uri, lambda ds: True)
            for _ in range(50):
                if len(s.told) >= 2:
                    break
                await asyncio.sleep(0.1)
            return s.created, s.told

    created, told = asyncio.run(scenario())
    assert len(created) == 1, created
    kinds = [getattr(v, "kind", None) or v.get("kind") for v in told]
    assert kinds[0] == "begin" and kinds[-1] == "end", told
    begin = told[0]
    message = getattr(begin, "message", None) or begin.get("message")
    assert message == "checking main.astral (the first analysis)"
