"""The period of a kernel sequence (astral_dsl/observe/period.py): the same answer as checking
every shift directly, found without the direct search's O(n^2) work."""
import numpy as np
import pytest

from astral_dsl.observe import period


def direct(seq):
    """The definition: the shortest p <= n/2 with matches(p) >= 90 % of n - p."""
    n = len(seq)
    for p in range(1, n // 2 + 1):
        if np.count_nonzero(seq[:-p] == seq[p:]) >= 0.9 * (n - p):
            return p
    return None


def test_hand_worked_sequences():
    # a b c a b c a b c: period 3 (6 of 6 shifted names match)
    assert period.find(np.array([0, 1, 2] * 3)) == 3
    # a b a b a c: p=2 matches 3 of 4 (a-a, b-b, a-a; b-c not) = 75 % < 90 %; p=1 none;
    # p=3 matches 0 of 3: no period
    assert period.find(np.array([0, 1, 0, 1, 0, 2])) is None
    assert period.find(np.array([5])) is None and period.find(np.array([], dtype=int)) is None
    assert period.find(np.array([7, 7])) == 1


@pytest.mark.parametrize("direct_budget", [0, 300, period.DIRECT])
def test_agrees_with_the_direct_search(monkeypatch, direct_budget):
    """Random patterns (1-80 kernels, periods 1-60, cut anywhere, 0-30 % of names replaced),
    with the bound taking over at once, after a few shifts, or never (FFT_COST 0: the bound
    is used even where the direct search would be cheaper)."""
    monkeypatch.setattr(period, "DIRECT", direct_budget)
    monkeypatch.setattr(period, "FFT_COST", 0)
    rng = np.random.default_rng(12)
    for _ in range(150):
        k, per, reps = int(rng.integers(1, 80)), int(rng.integers(1, 60)), int(rng.integers(1, 8))
        seq = np.tile(rng.integers(0, k, per), reps)[: int(rng.integers(1, per * reps + 1))]
        noise = rng.random(seq.size) < rng.choice([0, 0.02, 0.05, 0.1, 0.3])
        seq = np.where(noise, rng.integers(0, k, seq.size), seq)
        seq = np.unique(seq, return_inverse=True)[1].reshape(-1)
        assert period.find(seq) == direct(seq)


def test_more_kernels_than_the_bound_counts_exactly(monkeypatch):
    """200 distinct kernels in a period of 400, 3 % of them replaced (about 94 % of the shifted
    names still match: 0.97^2): 48 kernels have a bucket each, 152 share 16; the answer is
    still the direct one."""
    monkeypatch.setattr(period, "DIRECT", 0)
    monkeypatch.setattr(period, "FFT_COST", 0)
    rng = np.random.default_rng(3)
    seq = np.tile(rng.integers(0, 200, 400), 6)
    seq = np.where(rng.random(seq.size) < 0.03, rng.integers(0, 200, seq.size), seq)
    assert period.find(seq) == direct(seq) == 400


def test_a_long_sequence_that_does_not_repeat_ends():
    """60,000 random kernels: the direct search would compare 9e8 names; the bound rejects
    almost every shift (what it costs is measured in benchmarks/, not asserted here)."""
    seq = np.random.default_rng(0).integers(0, 40, 60_000)
    assert period.find(seq) is None


def test_the_bound_bounds():
    """The buckets' autocorrelation is at least the exact match count at every shift."""
    rng = np.random.default_rng(5)
    seq = rng.integers(0, 150, 3000)
    b = period._buckets(seq)
    upper = period._upper_bound(b[seq], seq.size, 8192)
    exact = np.array([period._matches(seq, p) for p in range(1, 1500)])
    assert np.all(upper[1:1500] + 0.5 >= exact)
    assert np.allclose(upper, np.rint(upper), atol=1e-6)     # integers, up to rounding


# ---- where the repetitions are cut (kineto._by_pattern) ---------------------------------------
def _trace(gaps_us):
    """Kernels a b c d repeated, each 10 us long, the gap before each given (us): a profiler
    trace without ProfilerStep annotations, as the reader's columns see it."""
    names = ["a", "b", "c", "d"] * (len(gaps_us) // 4)
    ts, t = [], 0.0
    for g in gaps_us:
        t += g
        ts.append(t)
        t += 10.0
    return names, np.array(ts), np.full(len(ts), 10.0)


def test_the_cut_is_the_largest_gap_over_the_repetitions():
    """Four repetitions of a b c d; 100 us before every `c` (the step boundary), 1 us
    elsewhere, but 300 us before the first `b` (a GC pause in the first repetition). The first
    repetition alone had decided: its largest gap is before b (position 1). Summed over the
    repetitions, per phase: a 0 + 1 + 1 + 1 = 3, b 300 + 1 + 1 + 1 = 303, c 4 x 100 = 400,
    d 4 x 1 = 4: the cut is before c, position 2."""
    from astral_dsl.observe.kineto import _by_pattern

    gaps = [0, 300, 100, 1] + [1, 1, 100, 1] * 3
    out = _by_pattern(*_trace(gaps))
    # positions 0-1 before the cut; then c d a b, c d a b, ... from position 2
    assert out.tolist() == [-1, -1] + [0] * 4 + [1] * 4 + [2] * 4 + [3] * 2


def test_the_cut_is_never_after_the_first_collective():
    """The same trace with `b` a collective (an NCCL kernel): the largest gap on average is
    still before c (400 us summed against 303 before b and 3 before a), but a cut there would
    leave the trace's first collective out of iteration 0 on this rank and not on a rank whose
    gaps differ. Cuts at positions 0-1 only (at or before the collective at 1): b's 303 > a's
    3, the cut is before b; every rank so cut starts its iteration 0 at its first collective."""
    from astral_dsl.observe.kineto import _by_pattern

    gaps = [0, 300, 100, 1] + [1, 1, 100, 1] * 3
    comm = np.array([False, True, False, False] * 4)
    out = _by_pattern(*_trace(gaps), comm)
    assert out.tolist() == [-1] + [0] * 4 + [1] * 4 + [2] * 4 + [3] * 3


def test_a_cut_no_gap_marks_is_anchored_on_the_first_collective():
    """Kernels back to back (1 us before each, 2 us before one kernel of a different phase in
    each repetition): summed per phase a 1+1+1+2 = 5, b 2+1+1+1 = 5, c 1+2+1+1 = 5, d 1+1+2+1
    = 5 (the first kernel's gap is 0, so a's is 4 + ... : a 0+1+1+2 = 4): no gap marks the
    step. With `c` a collective the cut is among positions 0-2, the first largest: b (5).
    The reader says nothing: the cut is the same on every rank whose trace starts at the same
    step, whatever its gaps."""
    from astral_dsl.observe import kineto

    gaps = [1, 2, 1, 1] + [1, 1, 2, 1] + [1, 1, 1, 2] + [2, 1, 1, 1]
    names, ts, dur = _trace(gaps)
    out = kineto._by_pattern(names, ts, dur, np.array([n == "c" for n in names]))
    assert out.tolist() == [-1] + [0] * 4 + [1] * 4 + [2] * 4 + [3] * 3
    events = [{"ph": "X", "cat": "kernel", "name": "nccl_" + n if n == "c" else n,
               "ts": float(t), "dur": 10.0} for n, t in zip(names, ts)]
    trace, diags = kineto.read("rank-0.json", {"traceEvents": events,
                                               "distributedInfo": {"rank": 0,
                                                                   "world_size": 2}})
    assert diags == [] and trace.iterations == (0, 1, 2, 3)


@pytest.fixture(scope="module")
def small():
    from pathlib import Path

    import astral_dsl
    from astral_dsl import diagnose, seer

    design = astral_dsl.load(str(Path(__file__).resolve().parent / "fixtures" / "diagnose" /
                                 "small.astral"))
    return design, seer.forecast(design), diagnose.rank_map(design)


def test_traces_without_steps_or_gaps_are_cut_alike_on_every_rank(small, tmp_path):
    """The small design's 128 ranks (TP 8, PP 2, DP 8), a healthy run (seed 3) written as
    profiler traces and stripped of their ProfilerStep annotations. The ranks' kernels run
    nearly back to back: cut each at its own largest gap on average, 93 of the 128 had no gap
    marking the step and 9 hosts' collective ends could not be aligned (E789: a rank's k-th
    collective of an iteration matched with another iteration's on its peers). Anchored on the
    first collective, every host aligns, the DP collectives and pipeline transfers are matched
    as with the annotations (48 and 1,536), and nothing is said."""
    import gzip
    import json

    from astral_dsl import diagnose, observe
    from astral_dsl.synth import generate, write

    design, fc, rm = small
    src, dst = tmp_path / "steps", tmp_path / "nosteps"
    write.write_traces(generate(fc, rm, seed=3), str(src))
    dst.mkdir()
    for f in src.iterdir():
        doc = json.loads(gzip.decompress(f.read_bytes()))
        doc["traceEvents"] = [e for e in doc["traceEvents"]
                              if not e["name"].startswith("ProfilerStep")]
        (dst / f.name[:-3]).write_text(json.dumps(doc))
    with_steps = diagnose.diagnose(design, observe.load([str(src)]))
    result = diagnose.diagnose(design, observe.load([str(dst)]))
    assert [d.code for d in result.diagnostics] == []
    assert result.verdict == with_steps.verdict == "healthy"
    assert len(result.clocks.aligned) == len(with_steps.clocks.aligned) == 16
    assert result.clocks.unaligned == ()
    assert result.instances == with_steps.instances


def test_a_real_trace_without_its_annotations_is_cut_alike():
    """The real 2-rank trace (tests/fixtures/traces/nccl_data_rank-0, 3 ProfilerSteps of 1,258
    kernels) with its ProfilerStep annotations removed: the same 1,258-kernel repetitions. Its
    largest gap (15.5-15.7 ms in all three) follows the step's first 4 kernels, but the
    second of them is a collective (DDP's broadcast): the cut is at or before it, at the step's
    first kernel, so the iterations are the ProfilerSteps' kernel for kernel (cut at the gap,
    they had been 4 kernels later, the broadcast in the iteration before)."""
    import gzip
    import json
    from pathlib import Path

    from astral_dsl.observe import kineto

    path = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "traces" / \
        "nccl_data_rank-0.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    annotated, _ = kineto.read(str(path), doc)
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if not str(e.get("name", "")).startswith("ProfilerStep")]
    trace, diags = kineto.read(str(path), doc)
    assert diags == [] and trace.iterations == (0, 1, 2)
    assert annotated.iterations == (4, 5, 6)
    for i, step in zip(trace.iterations, annotated.iterations):
        assert (trace.start[trace.iteration == i] ==
                annotated.start[annotated.iteration == step]).all()
    assert [int((trace.iteration == i).sum()) for i in (0, 1, 2)] == [1258, 1258, 1258]
