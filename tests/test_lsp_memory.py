"""The language server's analysis workers have a memory limit (workers.MEMORY, checker.serve:
RLIMIT_AS beyond the worker's start); an analysis past it is E410 and its worker is replaced.
Starting idle workers holds no lock that an analysis needs (a fork server that never answers
kept every later analysis waiting for the lock)."""
from __future__ import annotations

import asyncio
import threading

from astral_dsl.lsp import workers
from astral_dsl.lsp.published import memory_analysis

from test_lsp_bounds import _server

SMALL = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"
# 25,000 declarations (0.75 MB, 225,000 tokens: under the parser's 250,000, syntax/parser.py
# MAX_TOKENS): well over 16 MiB of memory to parse and compile (under a 4 GiB limit it checks:
# about 3 s of CPU here, so not in this test)
LARGE = "".join(f"gpu G{i} {{ power = {i + 1} W }}\n" for i in range(25000))


def test_an_analysis_past_the_workers_memory_limit_answers_memory_and_is_replaced():
    checker = workers.Checker(memory=16 << 20)
    try:
        stopper = workers.Stopper()
        status, found = checker.check(stopper, ("file:///m.astral", None, LARGE, {}), 60)
        assert (status, found) == ("memory", None)
        # the worker ended after answering; the next analysis runs in another, and answers
        status, found = checker.check(workers.Stopper(), ("file:///m.astral", None, SMALL, {}),
                                      60)
        assert status == "ok"
        # the small design's own warnings (no feeder, no utilisation, no cooling)
        assert [d.code for d in found] == ["W626", "W627", "W653"]
    finally:
        checker.close()


def test_the_default_limit_is_workers_memory():
    assert workers.Checker().memory == workers.MEMORY == 4 << 30


class _OutOfMemory:
    """A worker's check that passed its memory limit."""
    memory = 4 << 30

    def check(self, stopper, request, timeout=None):
        return "memory", None

    def close(self):
        pass


def test_the_server_publishes_E410_for_an_analysis_past_the_limit(tmp_path):
    server, uri, published = _server(tmp_path, _OutOfMemory(), timeout=20)

    async def scenario():
        return await asyncio.wait_for(server.refresh(uri), 30)     # 30: a guard

    a = asyncio.run(scenario())
    assert [d.code for d in a.diagnostics] == ["E410"]
    assert a.diagnostics[0].message.startswith(
        "the analysis needed more than 4 GiB of memory beyond its start and was stopped")
    assert a.diagnostics[0].hint.startswith("run `astral check` on the file")
    assert [[d.code for d in p.diagnostics] for p in published] == [["E410"]]


def test_E410_without_a_limit_says_its_limit():
    d = memory_analysis("file:///m.astral", None, "", 1, None).diagnostics[0]
    assert d.message == "the analysis ran out of memory and was stopped: the next edit is " \
                        "analysed afresh"


class _Blocked:
    """A worker whose start never returns until released (a fork server that never answers)."""
    release = threading.Event()
    started = threading.Event()

    def __init__(self, ctx, memory=None):
        _Blocked.started.set()
        _Blocked.release.wait(30)
        self.alive = True

    def close(self):
        pass


def test_starting_idle_workers_does_not_hold_the_lock(monkeypatch):
    monkeypatch.setattr(workers, "_Worker", _Blocked)
    checker = workers.Checker()
    warming = threading.Thread(target=checker.warm, daemon=True)
    warming.start()
    try:
        assert _Blocked.started.wait(30)
        # an analysis looking for an idle worker takes the lock while the start is stuck
        assert checker._lock.acquire(timeout=5)
        checker._lock.release()
    finally:
        _Blocked.release.set()
        warming.join(30)
    assert not warming.is_alive()
    assert len(checker._idle) == workers.IDLE
