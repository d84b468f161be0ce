"""Aligning the hosts' clocks on collective boundaries: an offset and a drift rate per host.

Every member of a collective (and both ends of a transfer) finishes it at the same moment, give
or take microseconds; each host reads that moment on its own clock. A free-running or poorly
disciplined clock also runs at its own rate: a host drifting 8 ppm is 0.2 ms off after 25 s,
as long as a pipeline transfer lasts, so one constant offset per host is not enough. The model:
host h reads t + o_h + d_h (t - t0) for the true moment t (o_h its offset at t0, d_h its drift,
dimensionless: 1e-6 is 1 ppm). With end_r = t_i + o_h + d_h tau_r for record r of instance i on
host h (tau_r = end_r - t0), the least-squares fit eliminates the instance times t_i: the
normal equations are (X'X - S' W S) beta = X'e - S' W (sum of e per instance), X the records'
design (a 1 in host h's offset column, tau_r in its drift column), S the same summed per
instance, W = diag(1 / members). It is the graph Laplacian of the offset-only fit with a
drift block beside it: sparse, 2 unknowns per host. Offsets and drifts are relative within
each set of hosts that share collectives (a connected component); the host with the most
records of each reads 0 and 0. A drift is held towards 0 by a ridge (DRIFT_RIDGE) so that a host
seen at one moment only still has a fit (drift 0).

Robustly: the host that fits worst is set aside while its residual (root mean square) is above
RESIDUAL_S, or its drift beyond MAX_DRIFT from its set's median drift, and the rest fitted
again, so one bad clock (a jump, records of another run) cannot bend its peers'. Those hosts
cannot be aligned. The median, not the reference host's: where the reference is the bad clock,
every other host reads its drift, and a healthy one had been set aside for it (of a set of
three hosts or more: of two, the reference's)."""
from __future__ import annotations

from typing import List, Tuple


from astral_dsl import records
import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve

RESIDUAL_S = 1e-3        # 1 ms: NCCL members finish within microseconds of each other
# RFC 5905 (NTPv4), section 7.2: a clock's frequency tolerance is at most 500 ppm (PHI's
# MAXFREQ); a host "drifting" faster than NTP could ever discipline is not a drifting clock
MAX_DRIFT = 500e-6
DRIFT_RIDGE = 1e-9       # relative weight holding a drift towards 0 (s^2 of tau per record)


@records.frozen(eq=False)
class Clocks:
    """The fitted clocks: host h reads t + offsets[h] + drifts[h] (t - t0)."""
    offsets: np.ndarray      # seconds, per host, at t0
    drifts: np.ndarray       # dimensionless, per host (1e-6: 1 ppm)
    t0: float                # the moment the offsets hold (seconds, the reference host's clock)
    bad: Tuple[int, ...]     # hosts that cannot be aligned
    aligned: Tuple[int, ...]  # hosts whose clocks the collectives fitted (not bad)
    residual: np.ndarray     # per record given, seconds

    def correct(self, host: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The true moments of readings `t` taken on `host`."""
        return t - self.offsets[host] - self.drifts[host] * (t - self.t0)


def align(host: np.ndarray, instance: np.ndarray, end: np.ndarray, n_hosts: int) -> Clocks:
    """Fit, set aside the host that fits worst while it is beyond RESIDUAL_S or MAX_DRIFT (one
    bad clock must not bend its peers'), fit again."""
    bad: List[int] = []
    keep = np.ones(end.size, dtype=bool)
    t0 = float(0.5 * (end.min() + end.max())) if end.size else 0.0
    rounds = max(1, min(64, n_hosts // 2 + 1))
    for n in range(rounds + 1):
        offsets, drifts, rms, residual, seen, comp = _fit(host[keep], instance[keep],
                                                          end[keep] - t0, n_hosts)
        worse = np.maximum(rms / RESIDUAL_S, np.abs(drifts - _medians(drifts, seen, comp))
                           / MAX_DRIFT)
        worst = int(np.argmax(worse))
        if worse[worst] <= 1.0 or n == rounds:
            break
        bad.append(worst)
        keep &= host != worst
    full = np.zeros(end.size)
    full[keep] = residual
    aligned = tuple(int(h) for h in np.flatnonzero(seen) if int(h) not in bad)
    return Clocks(offsets, drifts, t0, tuple(sorted(bad)), aligned, full)


MEDIAN_FROM = 3          # hosts in a set before its median drift is the reference


def _medians(drifts: np.ndarray, seen: np.ndarray, comp: np.ndarray) -> np.ndarray:
    """Per host, the median drift of the hosts seen in its set (connected component); 0, the
    reference host's, in a set of fewer than MEDIAN_FROM: the median of two is their mean,
    which halved the drift between them, and two hosts 800 ppm apart had been aligned (no
    median tells which of two is wrong; the one with fewer records is set aside, as before)."""
    out = np.zeros(drifts.size)
    for c in np.unique(comp[seen]):
        mine = comp == c
        if int((mine & seen).sum()) >= MEDIAN_FROM:
            out[mine] = float(np.median(drifts[mine & seen]))
    return out


def _fit(host: np.ndarray, instance: np.ndarray, tau: np.ndarray, n_hosts: int):
    """(offset per host, drift per host, residual rms per host, per-record residual, hosts
    seen in an instance with another host, each host's set of hosts sharing collectives: a
    connected component's label). `tau`: each record's end, seconds from t0;
    `instance` the instance of each record (records of instances with one host are
    ignored)."""
    offsets, drifts = np.zeros(n_hosts), np.zeros(n_hosts)
    residual = np.zeros(tau.size)
    if tau.size == 0:
        return (offsets, drifts, np.zeros(n_hosts), residual, np.zeros(n_hosts, dtype=bool),
                np.arange(n_hosts))
    H = n_hosts
    n_inst = int(instance.max()) + 1
    count = sparse.coo_matrix((np.ones(tau.size), (instance, host)), shape=(n_inst, H)).tocsr()
    multi = np.diff(count.indptr) > 1            # canonical CSR: hosts per instance
    m = multi[instance]
    w_r = m.astype(np.float64)
    n_i = np.bincount(instance, weights=w_r, minlength=n_inst)
    inv_n = np.where(multi, 1.0 / np.maximum(n_i, 1), 0.0)
    # S: per instance, the sums of the records' design rows (offset columns, drift columns)
    rows = np.r_[instance[m], instance[m]]
    cols = np.r_[host[m], H + host[m]]
    vals = np.r_[np.ones(int(m.sum())), tau[m]]
    S = sparse.coo_matrix((vals, (rows, cols)), shape=(n_inst, 2 * H)).tocsr()
    weight = np.bincount(host, weights=w_r, minlength=H)
    s_tau = np.bincount(host, weights=w_r * tau, minlength=H)
    s_tau2 = np.bincount(host, weights=w_r * tau * tau, minlength=H)
    idx = np.arange(H)
    XtX = sparse.coo_matrix((np.r_[weight, s_tau, s_tau, s_tau2],
                             (np.r_[idx, idx, H + idx, H + idx],
                              np.r_[idx, H + idx, idx, H + idx])), shape=(2 * H, 2 * H))
    M = (XtX - S.T @ sparse.diags(inv_n) @ S).tocsr()
    e_sum = np.bincount(instance, weights=w_r * tau, minlength=n_inst)
    b = np.r_[s_tau, s_tau2] - S.T @ (inv_n * e_sum)      # X'e: e is tau itself
    ridge = DRIFT_RIDGE * max(1.0, float(s_tau2.sum()))
    M = M + sparse.diags(np.r_[np.zeros(H), np.full(H, ridge)])
    adjacency = (count[multi].T @ count[multi]).tocsr()
    n_comp, comp = connected_components(adjacency, directed=False)
    pinned = [int(np.flatnonzero(comp == c)[np.argmax(weight[comp == c])]) for c in range(n_comp)]
    free = (weight > 0)
    free[pinned] = False
    f = np.flatnonzero(np.r_[free, free])
    if f.size:
        sub = M[f][:, f].tocsc()
        sol = spsolve(sub, b[f]) if f.size > 1 else np.array([b[f][0] / sub[0, 0]])
        beta = np.zeros(2 * H)
        beta[f] = sol
        offsets, drifts = beta[:H], beta[H:]
    model = offsets[host] + drifts[host] * tau
    t_i = np.bincount(instance, weights=w_r * (tau - model), minlength=n_inst) * inv_n
    residual = np.where(m, tau - t_i[instance] - model, 0.0)
    rms = np.sqrt(np.bincount(host, weights=residual ** 2, minlength=H) / np.maximum(weight, 1))
    return offsets, drifts, rms, residual, weight > 0, comp


__all__ = ["Clocks", "MAX_DRIFT", "RESIDUAL_S", "align"]
