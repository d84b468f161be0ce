"""Each unit's Bayes factor, with the outliers' share e measured outside the unit's own channels.

A healthy instance is, now and then, an outlier of the slowed shape (NCCL's tail, a noisy
iteration): e, the share of such outliers, bounds one slowed instance's likelihood ratio at
1 / e. The hypothesis "unit u is faulty" says that u's channels are slowed and every other
channel is healthy: the healthy rate e is then estimated from the instances u does not carry,
e_u = (S - S_u) / (N - N_u), S of the N usable instances looking slowed (x above ln SLOW_MIN by
two spreads), S_u of the N_u that cross u (a leave-the-unit-out estimate: the instances a
hypothesis explains are not also counted as its background). The share of the whole data, the
fault's own included, had let a fault's own slowed instances dilute the evidence against it: a
flapping link's three slowed transfers among tests/fixtures/diagnose/small.astral's 1,632
instances set e at 0.18 % for every unit (ln BF 8.0, 9.17 needed; 9.82 with e_u:
docs/diagnose.md, "Limits"). e_u is kept within EPSILON (likelihood.py); a unit every
instance crosses has no outside to measure: the whole data's share is its e.

Counted once: S and N, and per channel its instances and its slowed-looking ones; a unit's
S_u and N_u are its incidence row times those counts (linear in the units' channels). Units
with the same e share one evaluation of the ratios of the instances their channels hold
(where no instance looks slowed, every e is at the floor: one evaluation of every instance,
as before); at most every unit's own instances are evaluated once each. The groups run in
the order of their e (np.unique): the same numbers whatever the order of the units.

Once a suspect is named (localise.py), the instances it explains are no unit's background any
longer: every e is measured again over the instances not yet explained (in S and in N), and
the groups whose e changed are evaluated again. Measured once, a first fault's slowed
instances had stayed in every other unit's background: beside a NIC port at half rate (54
slowed instances of 3,264, small.astral, 6 iterations) a flapping link's NIC had e = 1.68 %
and ln BF 4.8, short of the 9.17 needed; at the floor once they are set aside, 20.8
(tests/test_two_faults.py; docs/diagnose.md, "Limits", for the two-fault drills measured)."""
from __future__ import annotations

from typing import List

import numpy as np
from scipy.special import logsumexp

from astral_dsl.diagnose.likelihood import EPSILON, Q_GRID, log_ratio_of

P_GRID = np.array([1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 1.0])


def leave_out(slowed: np.ndarray, chan: np.ndarray, incidence) -> np.ndarray:
    """Per unit (a row of `incidence`, units x channels): the share of slowed-looking instances
    among those outside its channels, within EPSILON; the whole data's where none is outside."""
    n_chan = incidence.shape[1]
    total, n_total = float(slowed.sum()), float(slowed.size)
    own = incidence @ np.bincount(chan, weights=slowed.astype(float), minlength=n_chan)
    n_own = incidence @ np.bincount(chan, minlength=n_chan).astype(float)
    outside = n_total - n_own
    whole = total / n_total if n_total else 0.0
    share = np.divide(total - own, outside, out=np.full(outside.size, whole),
                      where=outside > 0)
    return np.clip(share, *EPSILON)


class _Terms:
    """ln(1 - q + q r) of every instance for every q of Q_GRID, kept up to date as instances
    are explained (only theirs computed again: the same numbers as computing all)."""

    def __init__(self, log_r: np.ndarray):
        self.consts = [(np.log1p(-q) if q < 1 else -np.inf, np.log(q)) for q in Q_GRID]
        self.by_q = [np.logaddexp(a, lq + log_r) for a, lq in self.consts]

    def update(self, idx: np.ndarray, log_r: np.ndarray) -> None:
        for term, (a, lq) in zip(self.by_q, self.consts):
            term[idx] = np.logaddexp(a, lq + log_r[idx])


class _Group:
    """The units sharing one e: the instances their channels hold, their ratios at that e."""

    def __init__(self, units, incidence, ecmp, chan, log_g, log_h, eps):
        self.units, self.sub, self.ecmp, self.eps = units, incidence[units], ecmp[units], eps
        self.inst = np.flatnonzero(np.isin(chan, np.unique(self.sub.indices)))
        self.chan = chan[self.inst]
        self.log_r = log_ratio_of(log_g[self.inst], log_h[self.inst], eps)
        self.terms = _Terms(self.log_r)

    def narrow(self, units, incidence, ecmp) -> None:
        """Keep only `units` (some of its own): its instances hold theirs; the others' channels
        add nothing to their factors (their incidence rows pick their own)."""
        self.units, self.sub, self.ecmp = units, incidence[units], ecmp[units]

    def explain(self, explained: np.ndarray) -> None:
        """Instances (a mask over all of them) explained by a suspect: neither for nor against
        the next."""
        local = np.flatnonzero(explained[self.inst])
        if local.size:
            self.log_r[local] = 0.0
            self.terms.update(local, self.log_r)

    def log_bayes(self, n_chan: int) -> np.ndarray:
        return _log_bayes(self.sub, self.ecmp, self.chan, self.terms, n_chan)


class Factors:
    """Every unit's ln Bayes factor against "all healthy", each with its own e, measured again
    without the instances explained so far (`explain`). `explained`: a mask of instances
    explained from the start (localise.py's round with every named suspect but one explained:
    the numbers of explaining them one after the other, in one evaluation)."""

    def __init__(self, incidence, ecmp, chan, log_g, log_h, slowed, explained=None):
        self.n_units, self.n_chan = incidence.shape
        self._data = (incidence, ecmp, chan, log_g, log_h, slowed)
        self.explained = np.zeros(chan.size, dtype=bool) if explained is None else explained
        keep = ~self.explained
        self.eps = leave_out(slowed[keep], chan[keep], incidence)
        self.groups: List[_Group] = self._regroup([])

    def _regroup(self, old: List[_Group]) -> List[_Group]:
        """The units grouped by their e (np.unique's order); a group of `old` at the same e
        that holds every unit of it is kept, narrowed to them (its instances and their ratios
        as they were), every other built anew with the instances explained so far at 0."""
        incidence, ecmp, chan, log_g, log_h, _ = self._data
        values, which = np.unique(self.eps, return_inverse=True)
        by_e = {float(g.eps): g for g in old}
        out = []
        for g, v in enumerate(values):
            units = np.flatnonzero(which == g)
            kept = by_e.get(float(v))
            if kept is not None and np.isin(units, kept.units).all():
                kept.narrow(units, incidence, ecmp)
                out.append(kept)
                continue
            group = _Group(units, incidence, ecmp, chan, log_g, log_h, v)
            group.explain(self.explained)
            out.append(group)
        return out

    def explain(self, explained: np.ndarray) -> None:
        """Instances (a mask) a named suspect explains: neither for nor against the next, and
        no longer anyone's background: every unit's e is measured again without every
        instance explained so far, in S and in N (leave_out of the rest), and only the groups
        whose e changed are evaluated again (the same numbers as building them all anew)."""
        self.explained = self.explained | explained
        for group in self.groups:
            group.explain(explained)
        incidence, _, chan, _, _, slowed = self._data
        keep = ~self.explained
        self.eps = leave_out(slowed[keep], chan[keep], incidence)
        self.groups = self._regroup(self.groups)

    def log_bayes(self) -> np.ndarray:
        out = np.zeros(self.n_units)
        for group in self.groups:
            out[group.units] = group.log_bayes(self.n_chan)
        return out


def _log_bayes(incidence, ecmp, chan, terms: _Terms, n_chan) -> np.ndarray:
    """ln Bayes factor of every unit: its channels slowed as its kind predicts, against all
    healthy; averaged over the grid of q (and p)."""
    # per channel and q: sum over its instances of ln(1 - q + q r)
    per_q = np.stack([np.bincount(chan, weights=term, minlength=n_chan) for term in terms.by_q],
                     axis=1)
    static = incidence @ per_q                                    # units x q
    out = logsumexp(static, axis=1) - np.log(Q_GRID.size)
    if ecmp.any():
        sub = incidence[np.flatnonzero(ecmp)]
        grids = []
        for p in P_GRID:
            mix = np.logaddexp(np.log1p(-p) if p < 1 else -np.inf, np.log(p) + per_q)
            grids.append(sub @ mix)
        stacked = np.concatenate(grids, axis=1)
        out[np.flatnonzero(ecmp)] = logsumexp(stacked, axis=1) - np.log(stacked.shape[1])
    return out


__all__ = ["Factors", "P_GRID", "leave_out"]
