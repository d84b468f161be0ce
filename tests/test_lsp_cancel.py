"""Cancelling analyses never poisons the language server (issue #23, item 2): edits that land at
random points of the analysis of examples/sizing.astral (its front end, the import of cvxpy,
the sizing solves) end that analysis's worker process; no publication ever says E000, and the
last text is analysed as `astral check` analyses it."""
from __future__ import annotations

import random
import time
from pathlib import Path

import astral_dsl
from test_lsp_hardening import Client

REPO = Path(__file__).resolve().parents[1]
SIZING = REPO / "examples" / "sizing.astral"
CANCELS = 50


def _shown(checked):
    """The codes the server publishes for a checked design: its diagnostics, and the warnings
    an `allow` accepts, as information (examples/sizing.astral accepts the stdlib's stated
    assumptions, W216)."""
    return sorted([d.code for d in checked.diagnostics] +
                  [a.diagnostic.code for a in checked.accepted])


def _publications(client: Client, uri: str):
    return [n["params"] for n in list(client.notes)
            if n.get("method") == "textDocument/publishDiagnostics"
            and n["params"].get("uri") == uri]


def test_random_cancels_never_leave_an_internal_error():
    text = SIZING.read_text()
    uri = SIZING.as_uri()
    # one seeded set of times, within the first analysis (~2-6 s: a worker's imports, the
    # front end, `import cvxpy`, the solves)
    times = [random.Random(23 + i).uniform(0.05, 2.5) for i in range(CANCELS)]
    client = Client(REPO)
    try:
        client.request("initialize", {"processId": None, "rootUri": REPO.as_uri(),
                                      "capabilities": {}})
        client.notify("initialized", {})
        client.open(uri, text)
        version = 1
        for i, wait in enumerate(times):
            time.sleep(wait)
            version += 1
            # a new version (the same design, a comment more or less) cancels the analysis
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text + ("// edit\n" if i % 2 == 0 else "")}]})
        final = text + ("// edit\n" if (CANCELS - 1) % 2 == 0 else "")
        end = time.monotonic() + 180
        while time.monotonic() < end:
            last = [p for p in _publications(client, uri) if p.get("version") == version]
            if last:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the last version was never analysed")
        published = _publications(client, uri)
        codes = [d.get("code") for p in published for d in p["diagnostics"]]
        assert "E000" not in codes and "E407" not in codes, codes
        expected = astral_dsl.check(astral_dsl.compiles(final, name=str(SIZING),
                                                        root=SIZING.parent))
        assert sorted(d.get("code") for d in last[-1]["diagnostics"]) == \
            _shown(expected)
        # and the server still answers: hover on the last text
        r = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 0, "character": 0}})
        assert "error" not in r, r
    finally:
        client.close()


def test_an_ended_worker_is_replaced_and_the_next_analysis_runs(monkeypatch):
    """The machinery under the server: a stopper ends the worker mid-analysis (the caller gets
    Stopped), a worker that dies by itself does too, and the next analysis runs in a fresh
    worker and answers as `astral check` does. (Sizing's result is not kept here, so that each
    analysis sizes the design again and runs long enough to be stopped mid-way.)"""
    import threading

    from astral_dsl.lsp import workers

    monkeypatch.setenv("ASTRAL_CACHE_DIR", "off")

    checker = workers.Checker()
    request = (SIZING.as_uri(), str(SIZING), SIZING.read_text(), {})

    def once_busy(stopper, then):
        """`then()` 0.1 s after the stopper's worker took the request: mid-analysis (a fresh
        worker's first analysis of the sizing example imports the solver: about a second)."""
        def wait():
            while getattr(stopper, "_worker", None) is None or not stopper._worker.ready:
                time.sleep(0.005)
            time.sleep(0.1)
            then()
        threading.Thread(target=wait, daemon=True).start()

    try:
        stopper = workers.Stopper()
        once_busy(stopper, stopper.stop)
        try:
            checker.check(stopper, request)
            raise AssertionError("the stopped analysis answered")
        except workers.Stopped:
            pass
        dying = workers.Stopper()
        once_busy(dying, lambda: dying._worker.process.kill())
        try:
            checker.check(dying, request)
            raise AssertionError("the killed worker answered")
        except workers.Stopped:
            assert not dying.stopped          # the server reports E000 for this one, once
        status, found = checker.check(workers.Stopper(), request)
        assert status == "ok"
        expected = astral_dsl.check(astral_dsl.compile(SIZING))
        assert sorted(d.code for d in found) == _shown(expected)
        assert "E000" not in {d.code for d in found}
    finally:
        checker.close()


def _workers_of(pid: int):
    """The analysis worker processes of the server `pid`: the children of its fork server
    (lsp/workers.py), or, where workers are spawned, its own children running spawn_main."""
    import os

    procs = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        procs.append((int(entry), ppid, cmd))
    servers = {p for p, ppid, cmd in procs if ppid == pid and b"forkserver" in cmd}
    return [p for p, ppid, cmd in procs
            if ppid in servers or (ppid == pid and b"spawn_main" in cmd)]


def test_a_server_whose_analysis_died_recovers_on_the_next_edit():
    """The server end to end: the analysis's worker process is killed from outside in the
    middle of the first analysis (as the kernel's OOM killer would), the server publishes that
    internal error (E000) for that version, and the next edit is analysed afresh in a new worker
    (no E000, what `astral check` reports), and hover still answers."""
    import os
    import signal

    text = SIZING.read_text()
    uri = SIZING.as_uri()
    client = Client(REPO)
    try:
        client.request("initialize", {"processId": None, "rootUri": REPO.as_uri(),
                                      "capabilities": {}})
        client.notify("initialized", {})
        end = time.monotonic() + 120
        while len(_workers_of(client.proc.pid)) < 2 and time.monotonic() < end:
            time.sleep(0.1)                        # the warm workers have started
        version, died = 1, None
        client.open(uri, text, version)
        for _ in range(5):                         # until a kill lands inside an analysis
            time.sleep(0.3)
            for pid in _workers_of(client.proc.pid):
                os.kill(pid, signal.SIGKILL)
            found = _published(client, uri, version)
            if any(d.get("code") == "E000" for d in found):
                died = found
                break
            version += 1
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text + "// again\n" * version}]})
        assert died is not None, "no kill landed inside an analysis"
        assert "the analysis worker ended" in died[0]["message"]
        version += 1
        final = text + "// the next edit\n"
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": final}]})
        after = _published(client, uri, version)
        expected = astral_dsl.check(astral_dsl.compiles(final, name=str(SIZING),
                                                        root=SIZING.parent))
        assert sorted(d.get("code") for d in after) == \
            _shown(expected)
        assert "E000" not in {d.get("code") for d in after}
        r = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 0, "character": 0}})
        assert "error" not in r, r
    finally:
        client.close()


def _published(client: Client, uri: str, version: int, timeout: float = 180):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in _publications(client, uri) if p.get("version") == version]
        if found:
            return found[-1]["diagnostics"]
        time.sleep(0.05)
    raise AssertionError(f"version {version} was never published")


def test_the_fork_servers_preload_takes_sizings_code_stamp():
    """What lsp/warm.py loads in the fork server every worker inherits: the stamp of the code in
    sizing's cache key is among it, taken once per server, not in each worker that sizes a
    design (~70 ms each: the random cancels above start fifty of them)."""
    import importlib

    from astral_dsl.analyses import sizing_cache
    from astral_dsl.lsp import warm, workers

    assert workers.PRELOAD == ["astral_dsl.lsp.warm"]
    sizing_cache._code.cache_clear()
    importlib.reload(warm)
    assert sizing_cache._code.cache_info().currsize == 1
