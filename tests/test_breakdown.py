"""The per-rank breakdown (astral_dsl/diagnose/breakdown.py): hand-computed cases, and on the real
PyTorch profiler traces of tests/fixtures/traces (HolisticTraceAnalysis's own test data, MIT)
against HolisticTraceAnalysis's own numbers (its temporal breakdown and its
communication-computation overlap, over the same iterations); then in the text, the JSON and
the review page of `astral report`."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from astral_dsl import observe
from astral_dsl.diagnose import breakdown
from astral_dsl.observe.records import PHASE_INDEX, RankTrace
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "tests" / "fixtures" / "traces"
TINY = REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"


def _trace(rows, source="kineto", rank=0):
    """rows: (iteration, phase, start_s, duration_s)."""
    it, ph, st, du = (np.array(c) for c in zip(*rows))
    n = len(rows)
    return RankTrace(rank, None, "t", source, it.astype(np.int64),
                     np.array([PHASE_INDEX[p] for p in ph], dtype=np.int8), st.astype(float),
                     du.astype(float), np.full(n, -1), np.zeros(n, dtype=np.int8),
                     np.full(n, -1))


def test_union_by_hand():
    s, e = breakdown.union(np.array([5.0, 0.0, 10.0, 30.0]), np.array([12.0, 10.0, 11.0, 31.0]))
    # [0,10) and [5,12) and [10,11) merge into [0,12); [30,31) stays
    assert s.tolist() == [0.0, 30.0] and e.tolist() == [12.0, 31.0]
    assert breakdown.covered(np.array([0.0, 10.0]), np.array([10.0, 20.0])) == 20.0   # touching


def test_kineto_breakdown_by_hand():
    """Iteration 1: compute [0, 10) and [5, 15), TP [12, 20), a copy [22, 25); iteration 2:
    compute [30, 40), DP [38, 44). Window 0-44: compute 15 + 10 = 25, communication 8 + 6 = 14
    (TP 8, DP 6), memory 3, busy 20 + 3 + 14 = 37, idle 7 of which 5 between the iterations
    (25 to 30); overlap: compute during communication 3 + 2 = 5 of 14."""
    t = _trace([(1, "compute", 0, 10), (1, "compute", 5, 10), (1, "tp_comm", 12, 8),
                (1, "memory", 22, 3), (2, "compute", 30, 10), (2, "dp_comm", 38, 6)])
    b = breakdown.of_trace(t, stage=0)
    assert b.iterations == 2
    assert (b.window_s, b.compute_s, b.comm_s, b.memory_s, b.idle_s) == (22.0, 12.5, 7.0, 1.5,
                                                                      3.5)
    assert b.comm_by_kind_s == {"dp": 3.0, "tp": 4.0}
    assert b.idle_between_iterations_s == 2.5 and b.overlap == pytest.approx(5 / 14)


def test_log_breakdown_by_hand():
    """A rank log's rows are durations: summed, idle the window less their sum, no overlap."""
    t = _trace([(1, "forward", 0, 4), (1, "backward", 4, 6), (1, "dp_comm", 11, 2),
                (2, "forward", 20, 4), (2, "backward", 24, 6), (2, "dp_comm", 30, 3)],
               source="log")
    b = breakdown.of_trace(t, stage=0)
    # window 0-33; compute 20, DP 5; idle 33 - 25 = 8, of which 20 - 13 = 7 between iterations
    assert (b.window_s, b.compute_s, b.comm_s, b.idle_s) == (16.5, 10.0, 2.5, 4.0)
    assert b.idle_between_iterations_s == 3.5 and b.overlap is None


def _hta(files, iterations, monkeypatch):
    """HolisticTraceAnalysis's temporal breakdown and overlap per rank, over `iterations`
    (its own iteration of each kernel, from its launch), timestamps as the trace has them."""
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")     # HTA rounds ns traces to whole us
    logging.disable(logging.WARNING)
    try:
        from hta.analyzers.breakdown_analysis import BreakdownAnalysis
        from hta.analyzers.communication_analysis import CommunicationAnalysis
        from hta.trace_analysis import TraceAnalysis

        a = TraceAnalysis(trace_files=files, include_last_profiler_step=True)
        for r, df in list(a.t.traces.items()):
            a.t.traces[r] = df[df["iteration"].isin(iterations[r]) & df["stream"].ne(-1)]
        temporal = BreakdownAnalysis.get_temporal_breakdown(a.t, visualize=False)
        overlap = CommunicationAnalysis.get_comm_comp_overlap(a.t, visualize=False)
    finally:
        logging.disable(logging.NOTSET)
    return temporal.set_index("rank"), overlap.set_index("rank")


@pytest.mark.parametrize("names", [("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"),
                                   ("nccl_data_rank-0.json.gz",)])
def test_against_holistic_trace_analysis(names, monkeypatch):
    """Our compute, idle, non-compute time, window and overlap of every rank against HTA's,
    in microseconds over the iterations read: equal within 20 us of a window of a second (our
    times are seconds since the epoch in doubles, about 0.2 us each) and 0.05 % of overlap
    (HTA's percentage has two decimals)."""
    obs = observe.load([str(TRACES / n) for n in names])
    ours = {t.rank: (t, breakdown.of_trace(t, 0)) for t in obs.traces}
    files = {t.rank: t.file for t in obs.traces}
    temporal, overlap = _hta(files, {r: list(t.iterations) for r, (t, _) in ours.items()},
                             monkeypatch)
    for rank, (t, b) in ours.items():
        n = b.iterations * 1e6                      # per iteration, seconds -> the window, us
        row = temporal.loc[rank]
        print(rank, t.iterations, dict(row), b)
        assert b.window_s * n == pytest.approx(row["kernel_time(us)"], abs=20)
        assert b.compute_s * n == pytest.approx(row["compute_time(us)"], abs=20)
        assert b.idle_s * n == pytest.approx(row["idle_time(us)"], abs=20)
        assert (b.window_s - b.idle_s - b.compute_s) * n == \
            pytest.approx(row["non_compute_time(us)"], abs=20)
        assert b.overlap * 100 == pytest.approx(overlap.loc[rank, "comp_comm_overlap_pctg"],
                                                abs=0.006)


def _cli(*args):
    return _astral_cli(*args, cwd=REPO)


def test_breakdown_in_text_json_and_report(tmp_path, monkeypatch):
    """The real 2-rank trace (rank 0 read, rank 1 missing) diagnosed against the 2-rank job:
    its breakdown in the text, in the JSON (HTA's numbers) and on the review page."""
    trace = TRACES / "nccl_data_rank-0.json.gz"
    out = tmp_path / "d.json"
    proc = _cli("diagnose", str(TINY), "--observed", str(trace), "-o", str(out))
    assert "per rank   (median over ranks of each rank's mean per iteration, kineto)" in \
        proc.stdout, proc.stdout
    assert "overlap 16 % of communication" in proc.stdout
    assert "spread     " in proc.stdout
    doc = json.loads(out.read_text())
    b = doc["breakdown"]
    assert b["source"] == "kineto" and [r["rank"] for r in b["ranks"]] == [0]
    temporal, overlap = _hta({0: str(trace)}, {0: doc["iterations"]}, monkeypatch)
    r = b["ranks"][0]
    n = r["iterations"] * 1e6
    assert r["compute_s"] * n == pytest.approx(temporal.loc[0, "compute_time(us)"], abs=20)
    assert r["idle_s"] * n == pytest.approx(temporal.loc[0, "idle_time(us)"], abs=20)
    assert r["comm_by_kind_s"] and r["idle_by_cause_s"]["between_iterations"] >= 0
    page = tmp_path / "review.html"
    proc = _cli("report", str(TINY), "-o", str(page), "--diagnosis", str(out))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert 'id="dx-ranks"' in html and 'id="dx-spread"' in html and "Diagnosis" in html
    assert "Per rank: the median over ranks of each rank&#x27;s mean per iteration" in html \
        or "Per rank: the median over ranks of each rank's mean per iteration" in html
    assert f"{r['compute_s'] * 1e3:.3f}".rstrip("0") in html
    bad = tmp_path / "bad.json"
    bad.write_text('{"suspects": []}')
    proc = _cli("report", str(TINY), "-o", str(page), "--diagnosis", str(bad))
    assert proc.returncode == 2 and "is not a diagnosis" in proc.stderr


def test_hta_idle_by_cause(tmp_path):
    """--hta: HolisticTraceAnalysis's idle time by cause per rank (summed over its streams) in
    the breakdown; the same figures as HTA's own get_idle_time_breakdown."""
    out = tmp_path / "d.json"
    proc = _cli("diagnose", str(TINY), "--observed", str(TRACES / "nccl_data_rank-0.json.gz"),
                "--hta", "-o", str(out))
    # a ResNet's trace against a Llama job's forecast: 47x faster (the forecast suspect)
    assert proc.returncode == 1 and "x faster than the forecast" in proc.stdout, proc.stdout
    # one rank read: its kernels' spread is "across 1 rank" (it had said "1 ranks")
    assert " across 1 rank (median " in proc.stdout and "1 ranks" not in proc.stdout
    assert ("idle by cause (HolisticTraceAnalysis, summed over streams; median over ranks of "
            "each rank's mean per iteration): host wait") in proc.stdout
    doc = json.loads(out.read_text())
    causes = doc["breakdown"]["ranks"][0]["streams_idle_by_cause_s"]
    from astral_dsl.observe import hta
    again = hta.idle_by_cause({0: str(TRACES / "nccl_data_rank-0.json.gz")},
                              {0: doc["iterations"]})[0]
    assert causes == again and set(causes) == {"host_wait", "kernel_wait", "other"}
    assert causes["host_wait"] > causes["kernel_wait"] > 0


def test_hta_reads_a_trace_named_by_a_relative_path():
    """HTA joins a relative file name to its own folder (/tmp/trace): `--observed
    tests/fixtures/traces/...` was W793, HTA "could not read the traces", and printed that the
    file did not exist."""
    proc = _cli("diagnose", str(TINY), "--observed",
                "tests/fixtures/traces/nccl_data_rank-0.json.gz", "--hta")
    assert "W793" not in proc.stdout and "/tmp/trace" not in proc.stdout + proc.stderr
    assert "idle by cause (HolisticTraceAnalysis" in proc.stdout, proc.stdout


def test_a_trace_and_a_log_are_labelled_both(tmp_path):
    """Rank 0 from the real profiler trace, rank 1 from a rank log of the same iterations (4-6):
    the breakdown says it read both (it had said `log`, as if no trace had been read), in the
    JSON (valid against the schema) and in the text."""
    import jsonschema

    import astral_dsl
    from astral_dsl import diagnose
    from astral_dsl.outputs import diagnosis as text

    log = tmp_path / "rank1.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s,peer,op\n" + "".join(
        f"1,{it},forward,{4458676.4 + it},0.2,,\n1,{it},backward,{4458676.6 + it},0.4,,\n"
        for it in (4, 5, 6)))
    trace = str(TRACES / "nccl_data_rank-0.json.gz")
    result = diagnose.diagnose(astral_dsl.load(str(TINY)), observe.load([trace, str(log)]))
    assert result.breakdown.source == "both"
    assert [r.rank for r in result.breakdown.ranks] == [0, 1]
    doc = text.to_json(result)
    assert doc["breakdown"]["source"] == "both"
    schema = json.loads((REPO / "schema" / "diagnosis.schema.json").read_text())
    jsonschema.validate(doc["breakdown"], {"$defs": schema["$defs"],
                                           "$ref": "#/$defs/breakdown"})
    assert "mean per iteration, kineto and log) window" in text.render(result)
    # one kind alone keeps its own name
    alone = diagnose.diagnose(astral_dsl.load(str(TINY)), observe.load([str(log)]))
    assert alone.breakdown.source == "log"
