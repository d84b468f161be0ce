"""The outliers' share e measured outside each unit's own channels (diagnose/background.py):
hand-worked shares, and every unit's Bayes factor as the plain per-unit computation gives it."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from astral_dsl.diagnose.background import Factors, leave_out
from astral_dsl.diagnose.likelihood import log_bayes_rows, log_healthy, log_ratio_of, \
    log_slowed, looks_slowed

RNG = np.random.default_rng(50_050)


def _incidence(rows, n_chan):
    r = [u for u, chans in enumerate(rows) for _ in chans]
    c = [ch for chans in rows for ch in chans]
    return sparse.csr_matrix((np.ones(len(r)), (r, c)), shape=(len(rows), n_chan))


def test_each_units_share_is_that_outside_its_channels():
    """Channel 0: 2 instances, 1 slowed; channel 1: 3, 2 slowed; channel 2: 2,000, 2 slowed
    (S = 5 of N = 2,005). A unit on channel 0: (5 - 1) / (2,005 - 2) = 4 / 2,003; on 0 and 1:
    2 / 2,000 = 0.001 (the floor); on 1 and 2: 1 / 2 = 0.5, kept at the 5 % bound; on all
    three: nothing outside, the whole data's 5 / 2,005; on 1: 3 / 2,002; on 2: 3 / 5, 5 %."""
    chan = np.repeat([0, 1, 2], [2, 3, 2000])
    slowed = np.zeros(chan.size, dtype=bool)
    slowed[[0, 2, 3, 5, 6]] = True
    inc = _incidence([[0], [0, 1], [1, 2], [0, 1, 2], [1], [2]], 3)
    e = leave_out(slowed, chan, inc)
    assert e.tolist() == pytest.approx([4 / 2003, 0.001, 0.05, 5 / 2005, 3 / 2002, 0.05],
                                       rel=1e-15)


def test_factors_are_each_units_own_computation():
    """Random channels, instances and units (none of them ECMP): each unit's ln Bayes factor
    is log_bayes_rows over its own instances' ratios at its own e, before and after instances
    are explained (set to 0: neither for nor against)."""
    n_chan, n_units = 40, 60
    chan = RNG.integers(0, n_chan, 3000)
    s = 0.03
    x = np.where(RNG.random(chan.size) < 0.01, np.log(RNG.uniform(1.3, 3, chan.size)),
                 RNG.normal(0, s, chan.size))
    x[chan == 7] = np.log(1.5)                       # a slow channel: e differs by unit
    log_g, log_h = log_slowed(x, s, 1.2, 20.0), log_healthy(x, s)
    slowed = looks_slowed(x, s, 1.2)
    rows = [sorted(set(RNG.integers(0, n_chan, int(RNG.integers(1, 6))).tolist()))
            for _ in range(n_units)]
    inc = _incidence(rows, n_chan)
    factors = Factors(inc, np.zeros(n_units, dtype=bool), chan, log_g, log_h, slowed)
    assert len(factors.groups) > 2                   # several shares: several evaluations
    explained = np.zeros(chan.size, dtype=bool)
    for _ in range(2):
        got = factors.log_bayes()
        for u, chans in enumerate(rows):
            own = np.isin(chan, chans)
            r = log_ratio_of(log_g[own], log_h[own], factors.eps[u])
            r[explained[own]] = 0.0
            assert got[u] == pytest.approx(log_bayes_rows(r[None, :])[0], rel=1e-12, abs=1e-12)
        explained = chan == 7
        factors.explain(explained)
