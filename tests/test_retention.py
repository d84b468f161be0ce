"""What a long-lived process (the language server, a design tool embedding the package) keeps
after its work returns: no Lowering (a job's operator templates) outlives the forecast that made
it, and a search keeps only figures in its State, at most work.KEEP_STATES of them, the most
recently used (benchmarks/bench_retention.py measures the memory; this asserts the structure)."""
from __future__ import annotations

import gc
import textwrap
import weakref

import pytest

from astral_dsl import seer
from astral_dsl.explore import search
from astral_dsl.explore.bundle import load_with_bundle
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.kept import Kept
from astral_dsl.explore.search import work
from astral_dsl.explore.search.work import Setup
from astral_dsl.explore.search.bounds import Tail
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from explore.test_search import SMALL     # 32 H100s; its `dense` job: a 6-layer model on 16


@pytest.fixture
def lowerings(monkeypatch) -> "weakref.WeakSet[Lowering]":
    """Every Lowering made from here on, held weakly (a stage's view is a copy that holds its
    root: while a view lives, so does the Lowering it came from)."""
    made: "weakref.WeakSet[Lowering]" = weakref.WeakSet()
    init = Lowering.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.add(self)

    monkeypatch.setattr(Lowering, "__init__", recording)
    return made


def test_no_lowering_outlives_its_forecast(own_heap, lowerings):
    # a 4-layer model on 16 H100s whose micro-batch the rule chooses: several candidates, each
    # a Lowering, one of them the forecast's
    model = ModelSpec("Tiny", 4, 1024, 8, 4, 4096, 32000, 2048, "swiglu")
    job = JobSpec("tiny", model, ParallelSpec(tp=2, pp=2, dp=4), 64, None, 2048, "none", "bf16")
    gpu = GpuSpec("H100_SXM", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
    net = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                          Tier("core", 10**6, False, 1.0)))
    fc = seer.run(job, gpu, net)
    assert len(fc.chosen) == 1 and fc.chosen[0][0] == "micro"
    assert len(lowerings) >= 1 and fc.lowering in lowerings   # the Forecast holds its own
    del fc
    gc.collect()
    assert len(lowerings) == 0


def test_searches_keep_figures_for_the_most_recent_states(own_heap, tmp_path, lowerings,
                                                         monkeypatch):
    path = tmp_path / "small.astral"
    path.write_text(textwrap.dedent(SMALL), encoding="utf-8")
    keep = work.KEEP_STATES
    monkeypatch.setattr(work, "_STATES", Kept(keep))
    # as many distinct searches as are kept, and one more: each GPU count is a Setup of its own
    counts = (16, 8, 4, 2, 1)[:keep + 1]
    assert len(counts) == keep + 1
    for gpus in counts:
        engine = LocalEngine(1)
        try:
            result = search.run(str(path), job="dense", gpus=(gpus,), top=3, engine=engine)
        finally:
            engine.close()
        assert result.rows
    gc.collect()
    assert len(lowerings) == 0              # no Lowering outlives the searches that made them
    kept = list(work._STATES.items())       # least recently used first
    assert len(kept) == keep                # the first search's State was let go
    assert [setup.gpus for (_, setup), _ in kept] == [(n,) for n in counts[1:]]
    for _, state in kept:
        assert state.tails and all(isinstance(layout, work.Layout) and isinstance(tail, Tail)
                                   for layout, tail in state.tails.values())
    # a kept State serves the next task of its search (the speed the cache is for), and using it
    # makes it the most recent: the next new State lets the least recent go
    _, bundle = load_with_bundle(str(path), {})
    (first, state), second = kept[0], kept[1][0]
    assert work.state_of(bundle, first[1]) is state
    assert [k for k, _ in work._STATES.items()][-1] == first
    work.state_of(bundle, Setup((), "dense", (32,)))
    assert [k for k, _ in work._STATES.items()][0] == kept[2][0]
    assert second not in [k for k, _ in work._STATES.items()] and len(work._STATES) == keep


def test_kept_keeps_the_most_recently_used():
    kept = Kept(2)
    assert kept.put("a", 1) == 1 and kept.put("b", 2) == 2
    assert kept.get("a") == 1                  # a is now the most recent
    assert kept.put("c", 3) == 3               # b, the least recent, goes
    assert kept.get("b") is None and [k for k, _ in kept.items()] == ["a", "c"]
    assert kept.put("a", 10) == 1              # a value already kept is the one returned
    assert len(kept) == 2
