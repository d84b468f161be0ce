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
