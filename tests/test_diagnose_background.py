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


def test_explained_instances_leave_everyones_background():
    """The example above, channel 1's three instances (two slowed) then explained by a named
    suspect: S = 3 of N = 2,002 remain. On channel 0: (3 - 1) / (2,002 - 2) = 0.001; on 0
    and 1: the same (channel 1 holds nothing left); on 1 and 2: 1 / 2, kept at 5 %; on all
    three: the whole 3 / 2,002; on 1: nothing of its own left, 3 / 2,002; on 2: 1 / 2, 5 %.
    Before, channel 1's slowed pair had counted in unit 0's background (4 / 2,003). Only the
    groups whose e changed are evaluated again: the 5 % group (units 2 and 5, before and after)
    is kept as it was."""
    chan = np.repeat([0, 1, 2], [2, 3, 2000])
    slowed = np.zeros(chan.size, dtype=bool)
    slowed[[0, 2, 3, 5, 6]] = True
    x = np.where(slowed, np.log(1.5), 0.0)
    inc = _incidence([[0], [0, 1], [1, 2], [0, 1, 2], [1], [2]], 3)
    factors = Factors(inc, np.zeros(6, dtype=bool), chan, log_slowed(x, 0.02, 1.2, 20.0),
                      log_healthy(x, 0.02), slowed)
    top = next(g for g in factors.groups if g.eps == 0.05)
    assert top.units.tolist() == [2, 5]
    factors.explain(chan == 1)
    assert factors.eps.tolist() == pytest.approx([0.001, 0.001, 0.05, 3 / 2002, 3 / 2002,
                                                  0.05], rel=1e-15)
    assert next(g for g in factors.groups if g.eps == 0.05) is top
    assert [g.units.tolist() for g in factors.groups] == [[0, 1], [3, 4], [2, 5]]


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
        # e measured again without the explained instances, in S and in N
        assert factors.eps.tolist() == leave_out(slowed[~explained], chan[~explained],
                                                 inc).tolist()


def _two_slow_channels(n_chan=30, n_units=40):
    """Random channels and units (some ECMP), channel 3 slowed and a fifth of channel 11:
    (chan, rows, ecmp, ln g, ln h, slowed)."""
    chan = RNG.integers(0, n_chan, 2000)
    s = 0.03
    x = np.where(RNG.random(chan.size) < 0.01, np.log(RNG.uniform(1.3, 3, chan.size)),
                 RNG.normal(0, s, chan.size))
    x[chan == 3] = np.log(1.6)
    x[(chan == 11) & (RNG.random(chan.size) < 0.2)] = np.log(1.4)
    rows = [sorted(set(RNG.integers(0, n_chan, int(RNG.integers(1, 5))).tolist()))
            for _ in range(n_units)]
    return (chan, rows, RNG.random(n_units) < 0.3, log_slowed(x, s, 1.2, 20.0),
            log_healthy(x, s), looks_slowed(x, s, 1.2))


def test_the_same_numbers_whatever_the_order_of_the_units():
    """Units listed in another order get the same e and ln Bayes factors, bit for bit, before
    and after instances are explained (groups in the order of their e, np.unique's)."""
    n_chan, n_units = 30, 40
    chan, rows, ecmp, log_g, log_h, slowed = _two_slow_channels(n_chan, n_units)
    perm = RNG.permutation(n_units)
    a = Factors(_incidence(rows, n_chan), ecmp, chan, log_g, log_h, slowed)
    b = Factors(_incidence([rows[i] for i in perm], n_chan), ecmp[perm], chan, log_g, log_h,
                slowed)
    for explained in (chan == 3, (chan == 11) & slowed):
        assert a.eps[perm].tobytes() == b.eps.tobytes()
        assert a.log_bayes()[perm].tobytes() == b.log_bayes().tobytes()
        a.explain(explained)
        b.explain(explained)
    assert a.log_bayes()[perm].tobytes() == b.log_bayes().tobytes()


def test_instances_explained_from_the_start_give_the_rounds_numbers():
    """Factors(..., explained=mask), the round localise.py weighs a named suspect by with
    every other named one explained, gives bit for bit the e and ln Bayes factors of
    explaining the same instances one suspect after the other (explain, twice): the last named
    suspect's round is the rounds' own, the others' are this one evaluation."""
    chan, rows, ecmp, log_g, log_h, slowed = _two_slow_channels()
    data = (_incidence(rows, 30), ecmp, chan, log_g, log_h, slowed)
    first, second = (chan == 3) & slowed, (chan == 11) & slowed
    one_by_one = Factors(*data)
    one_by_one.explain(first)
    one_by_one.explain(second)
    at_once = Factors(*data, explained=first | second)
    assert at_once.eps.tobytes() == one_by_one.eps.tobytes()
    assert at_once.log_bayes().tobytes() == one_by_one.log_bayes().tobytes()
    assert Factors(*data, explained=np.zeros(chan.size, dtype=bool)).log_bayes().tobytes() \
        == Factors(*data).log_bayes().tobytes()
