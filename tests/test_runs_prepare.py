"""`astral runs` and a fit compile and validate each configuration of a table once
(runs/evaluate.prepare, runs/configs.shape): the rows of one are its first row's check renamed
to their own job, the same Prepared, field by field, as each row prepared on its own; 2,000
rows of modern.csv repeated took 12.5 s to prepare, 0.8 s now (benchmarks/bench_runs.py).
Calls are counted here, not timed."""
from __future__ import annotations

import pytest

from astral_dsl.runs import configs, evaluate as E
from astral_dsl.runs.express import Expressed
from astral_dsl.runs.table import parse_table

from test_runs import _csv, _row

# a run that fits, one the memory estimate says may not fit (W750, naming its job), one over it
# (E757), an error of the compiler (E762) and one of the validator naming the job (E751)
BASE = [_row("r001"), _row("r131", id="longer", seq_len="5376"), _row("r208"), _row("r040"),
        _row("k22b_full", id="deep", layers="100000"),
        _row("k22b_full", id="pp100", pp="100", gpus="800")]


@pytest.fixture
def checks(monkeypatch):
    """The expressions evaluate.py compiles and validates."""
    from benchmarks.bench_runs import compiles

    return compiles(monkeypatch.setattr)


def _table(times):
    rows = [dict(r, id=f"{r['id']}_{k}") for k in range(times) for r in BASE]
    return parse_table(_csv(rows), "t.csv")


def test_a_configuration_is_compiled_once_and_its_rows_prepared_as_alone(checks):
    table = _table(3)
    shared = E.prepare(table)
    assert checks["compile"] == len(BASE)
    alone = [E.prepare_row(row) for row in table.runs]
    assert checks["compile"] == len(BASE) + len(table.runs)
    assert shared == alone
    by = {p.row.id: p for p in shared}
    assert [by[f"pp100_{k}"].reason for k in range(3)] == [
        f"E751: job `run_pp100_{k}`: pp = 100 stages for the 48 layers of `M`" for k in range(3)]
    assert by["deep_2"].reason.startswith("E762: `M` has 100,000 layers")
    assert [by[f"longer_{k}"].notes[0].startswith(f"job `run_longer_{k}` may not fit")
            for k in range(3)] == [True] * 3
    assert {by[f"r001_{k}"].spec.name for k in range(3)} == {"run_r001_0", "run_r001_1",
                                                               "run_r001_2"}
    assert [p.status for p in shared[:len(BASE)]] == ["ok", "ok", "ok", "ok",
                                                      "not_expressible", "not_expressible"]


def test_repeated_rows_give_the_same_forecasts_but_for_their_names(checks):
    """Each copy's forecast, error and notes are its first's; the JSON's rows differ in their
    ids and the names of their jobs only."""
    results = E.evaluate(E.prepare(_table(2)))
    n = len(BASE)
    for a, b in zip(results[:n], results[n:]):
        assert (a.status, a.forecast, a.error, a.iteration_time, a.memory, a.chosen) == \
               (b.status, b.forecast, b.error, b.iteration_time, b.memory, b.chosen)
        assert [t.replace(f"`{a.prepared.expressed.job}`", "`J`") for t in a.notes] == \
               [t.replace(f"`{b.prepared.expressed.job}`", "`J`") for t in b.notes]


def _expressed(source, job="run_a"):
    return Expressed(None, source, job, "S", "", ())


def test_a_shape_is_the_source_but_for_its_jobs_name():
    src = "model M {{ layers = 2 }}\njob {} {{\n  model = M\n}}\n"
    assert configs.shape(_expressed(src.format("run_a"))) == \
           configs.shape(_expressed(src.format("run_b"), "run_b")) == (
               src.replace("job {} {{", "job {{").format(), "")
    # the name anywhere else: no shape, the row is compiled on its own
    assert configs.shape(_expressed(src.replace("M {", "run_a {").format("run_a"))) is None
    assert configs.shape(_expressed("job run_a { }\n")) is None


def test_a_message_is_renamed_only_where_it_names_the_job_in_backticks():
    assert configs.renamed("job `run_a`: pp = 100", "run_a", "run_b", "<runs row a>") == \
           "job `run_b`: pp = 100"
    assert configs.renamed("no job here", "run_a", "run_b", "<runs row a>") == "no job here"
    for text in ("run_a has", "see <runs row a>:3", "`run_a` and run_a", "a \0 `run_a`"):
        assert configs.renamed(text, "run_a", "run_b", "<runs row a>") is None
