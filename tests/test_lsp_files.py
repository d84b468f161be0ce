"""The language server when the files a document imports change: an imported file edited in the
editor (unsaved), closed with unsaved edits, or created on disk (a file event) re-checks the open
documents that import it; and what an analysis leaves behind when a newer edit ends it (its
thread ends, its frames are freed without waiting for a full garbage collection), so that a
burst of edits of a large design does not grow the server's memory (~1 MB per edit before)."""
from __future__ import annotations

import asyncio
import gc
import multiprocessing
import threading
import time
import weakref
from pathlib import Path

import pytest

from astral_dsl.lsp import workers
from test_lsp_hardening import SMALL, Client
# One server for the three tests of a project below (a module-scoped fixture: one per module that
# imports it), as test_lsp_hardening's own: each test has a project folder of its own (the server
# finds a document's project from its astral.toml, not from the root it started in) and its
# documents are closed after it. A server's start (its imports, its fork server's and its warm
# workers') was most of each of those tests' CPU: ~1.5 of 1.6 s.
from test_lsp_hardening import shared_server  # noqa: F401  (a fixture)

LIB = "gpu LibGPU {\n  power = 700 W\n}\n"
MAIN = "import lib { LibGPU }\nhost H {\n  gpus = 8 x LibGPU\n  power = 6 kW\n}\n" \
       "site S { hosts = 1 x H }\n"


@pytest.fixture
def project(shared_server, tmp_path):
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "lib.astral").write_text(LIB)
    (tmp_path / "main.astral").write_text(MAIN)
    yield shared_server, tmp_path
    for uri in shared_server.opened:
        shared_server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    shared_server.opened.clear()


def _codes_when(client: Client, uri: str, ok, timeout: float = 60) -> list:
    """The codes of the latest publication for `uri` once `ok(codes)` holds (waits for it)."""
    end = time.monotonic() + timeout
    codes: list = []
    while time.monotonic() < end:
        codes = [d["code"] for d in client.published(uri)]
        if ok(codes):
            return codes
        time.sleep(0.05)
    raise AssertionError(f"{uri}: still {codes}")


def _change(client: Client, uri: str, version: int, text: str) -> None:
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


def test_an_edit_of_an_open_import_rechecks_its_importer(project):
    client, root = project
    main, lib = (root / "main.astral").as_uri(), (root / "lib.astral").as_uri()
    client.open(main, MAIN)
    client.open(lib, LIB)
    _codes_when(client, main, lambda c: c and "E200" not in c)
    # the GPU renamed in the editor, not saved: main's `LibGPU` is unknown now (E200)
    _change(client, lib, 2, LIB.replace("LibGPU", "OtherGPU"))
    _codes_when(client, main, lambda c: "E200" in c)
    # and the name back: main is clean of it again
    _change(client, lib, 3, LIB)
    _codes_when(client, main, lambda c: c and "E200" not in c)


def test_closing_an_edited_import_rechecks_its_importer(project):
    client, root = project
    main, lib = (root / "main.astral").as_uri(), (root / "lib.astral").as_uri()
    client.open(main, MAIN)
    client.open(lib, LIB)
    _change(client, lib, 2, LIB.replace("LibGPU", "OtherGPU"))
    _codes_when(client, main, lambda c: "E200" in c)
    # closed without saving: main reads the file on disk again, which has `LibGPU`
    client.notify("textDocument/didClose", {"textDocument": {"uri": lib}})
    _codes_when(client, main, lambda c: c and "E200" not in c)


def test_a_module_created_on_disk_is_found_after_the_file_event(project):
    client, root = project
    (root / "lib.astral").unlink()
    main = (root / "main.astral").as_uri()
    client.open(main, MAIN)
    _codes_when(client, main, lambda c: "E205" in c)
    (root / "lib.astral").write_text(LIB)
    client.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": (root / "lib.astral").as_uri(), "type": 1}]})
    _codes_when(client, main, lambda c: c and "E205" not in c and "E200" not in c)


def test_a_client_that_watches_files_is_asked_for_astral_files(tmp_path):
    (tmp_path / "astral.toml").write_text("")
    client = Client(tmp_path)
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                      "capabilities": {"workspace": {"didChangeWatchedFiles": {
                                          "dynamicRegistration": True}}}})
        client.notify("initialized", {})
        end = time.monotonic() + 60
        while not any(n.get("method") == "client/registerCapability" for n in client.notes):
            assert time.monotonic() < end, "no registration"
            time.sleep(0.05)
        note = next(n for n in client.notes if n.get("method") == "client/registerCapability")
        reg = note["params"]["registrations"][0]
        assert reg["method"] == "workspace/didChangeWatchedFiles"
        assert reg["registerOptions"]["watchers"] == [{"globPattern": "**/*.astral"}]
        client.send({"jsonrpc": "2.0", "id": note["id"], "result": None})
        # the server goes on answering
        uri = (tmp_path / "a.astral").as_uri()
        client.open(uri, SMALL)
        assert client.published(uri) is not None
    finally:
        client.close()


def test_a_stopped_job_frees_its_frames_without_the_collector():
    """The frames of an analysis that a newer edit ended hold the document's text: they must be
    freed when the job ends, not when a full garbage collection runs (with a large design's
    million objects alive, that is hundreds of edits later)."""
    class Text:
        pass

    held = []

    def analysis():
        text = Text()                 # the document's text, in the analysis's frame
        held.append(weakref.ref(text))
        raise workers.Stopped("the worker was ended")

    loop = asyncio.new_event_loop()
    gc.disable()
    try:
        job = workers.Job(loop, "the analysis", None, analysis)
        job.thread.join(10)
        loop.run_until_complete(asyncio.sleep(0))           # the result delivered
        with pytest.raises(workers.Superseded):
            loop.run_until_complete(job.future)
        del job
        assert held[0]() is None
    finally:
        gc.enable()
        loop.close()


def test_a_wait_ends_when_the_worker_is_ended_though_its_pipe_stays_open():
    """`kill` ends the wait for the answer within a slice, even when the other end of the pipe
    stays open (a process that still holds it): before, the thread waited for the deadline."""
    ours, theirs = multiprocessing.Pipe()

    class Ended:
        pid = None

        def is_alive(self):
            return False

    worker = workers._Worker.__new__(workers._Worker)
    worker.conn, worker.process, worker.ready = ours, Ended(), True
    outcome = []

    def wait():
        try:
            worker.call(("request",), 60)
        except workers.Stopped as exc:
            outcome.append(exc)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    assert theirs.poll(10) and theirs.recv() == ("request",)
    worker.kill()
    thread.join(10)                    # a guard, not a speed assertion: one slice is 0.1 s
    assert not thread.is_alive() and isinstance(outcome[0], workers.Stopped)
    assert not ours.closed             # closed by the thread that uses it (test_lsp_stall.py)
    theirs.close()


def test_a_job_stopped_after_its_answer_leaves_its_worker_to_the_next():
    """A job whose worker answered, cancelled later (during the in-process compile that
    follows: an edit, a didClose), kept its worker in its stopper: `stop` ended it although the
    worker was idle again, or already analysing another document, which then failed with "the
    analysis worker ended" (E000). Fake workers: no process is started."""
    from astral_dsl.lsp import workers

    class Fake:
        def __init__(self):
            self.killed, self.calls = False, 0

        def call(self, request, timeout):
            if self.killed:
                raise workers.Stopped("the worker was ended")
            self.calls += 1
            if request == "stop meanwhile":
                stopped.stop()            # the job cancelled while the answer was on its way
                self.killed = False       # (the fake goes on to answer)
            return ("ok", request)

        def kill(self):
            self.killed = True

        close = kill

        @property
        def alive(self):
            return not self.killed

    checker = workers.Checker.__new__(workers.Checker)
    checker._lock, checker.warm = threading.Lock(), lambda: None
    worker = Fake()
    checker._idle = [worker]
    first = workers.Stopper()
    assert checker.check(first, "a") == ("ok", "a")
    assert checker._idle == [worker]
    first.stop()                                   # cancelled after its answer came
    assert not worker.killed
    assert checker.check(workers.Stopper(), "b") == ("ok", "b") and worker.calls == 2
    # a job stopped before its answer came back does not give its worker back
    stopped = workers.Stopper()
    assert checker.check(stopped, "stop meanwhile") == ("ok", "stop meanwhile")
    assert worker.killed and checker._idle == []


def test_a_job_done_by_its_deadline_is_not_timed_out():
    """The deadline's timer and the delivery of a result that came in time can run in either
    order on a loop starved of CPU: a job whose work had ended answered RequestFailed (its
    timer first). Here the timer runs after the work ended, before the delivery."""
    from astral_dsl.lsp import workers

    async def scenario():
        loop = asyncio.get_running_loop()
        job = workers.Job(loop, "the outline", 3600, lambda: "done")
        job.thread.join(10)                     # a guard: the work is a return
        assert job.running is False and not job.future.done()
        job._expire()                           # the timer's callback, before the delivery
        return await job.future

    assert asyncio.run(scenario()) == "done"
