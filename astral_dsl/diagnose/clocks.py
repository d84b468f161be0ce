"""Aligning the hosts' clocks on collective boundaries.

Every member of a collective (and both ends of a transfer) finishes it at the same moment, give
or take microseconds; each host reads that moment on its own clock. With end_r = t_i + o_h(r)
for record r of instance i on host h, the offsets o minimise sum (end_r - t_i - o_h)^2; with the
instance times eliminated this is L o = b, L = sum_i (diag(c_i) - c_i c_i^T / n_i) over the
host counts c_i of each instance (a graph Laplacian). Offsets are relative within each set of
hosts that share collectives (a connected component); the host with the most records of each
component reads 0. A host whose ends still disagree with its peers' after the fit (residual
(root mean square) above RESIDUAL_S: a drifting clock, or records that are not what they claim) cannot be aligned."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve

RESIDUAL_S = 1e-3        # 1 ms: NCCL members finish within microseconds of each other


def align(host: np.ndarray, instance: np.ndarray, end: np.ndarray, n_hosts: int
          ) -> Tuple[np.ndarray, np.ndarray, List[int], np.ndarray]:
    """Fit, set aside the host that fits worst while it is above RESIDUAL_S (one bad clock
    must not bend its peers'), fit again."""
    bad: List[int] = []
    keep = np.ones(end.size, dtype=bool)
    for _ in range(max(1, min(64, n_hosts // 2 + 1))):
        offsets, comp, rms, residual = _fit(host[keep], instance[keep], end[keep], n_hosts)
        worst = int(np.argmax(rms))
        if rms[worst] <= RESIDUAL_S:
            break
        bad.append(worst)
        keep &= host != worst
    full = np.zeros(end.size)
    full[keep] = residual
    return offsets, comp, sorted(bad), full


def _fit(host: np.ndarray, instance: np.ndarray, end: np.ndarray, n_hosts: int):
    """(offset per host, component per host, hosts that cannot be aligned, per-record
    residual). `instance` holds the instance of each record (records of instances with one host
    are ignored)."""
    offsets = np.zeros(n_hosts)
    residual = np.zeros(end.size)
    if end.size == 0:
        return offsets, np.arange(n_hosts), np.zeros(n_hosts), residual
    ref = end.min()
    e = end - ref
    n_inst = int(instance.max()) + 1
    A = sparse.coo_matrix((np.ones(end.size), (instance, host)),
                          shape=(n_inst, n_hosts)).tocsr()          # counts c_i per host
    # counts are whole numbers: summed in any order they are the same floats
    n_i = np.bincount(instance, minlength=n_inst).astype(np.float64)
    S_i = np.bincount(instance, weights=e, minlength=n_inst)
    hosts_per = np.diff(A.indptr)             # canonical CSR (duplicates summed, no zeros)
    multi = hosts_per > 1
    W = sparse.diags(np.where(multi, 1.0 / np.maximum(n_i, 1), 0.0))
    Am = sparse.diags(multi.astype(float)) @ A
    weight = np.bincount(host, weights=multi[instance].astype(np.float64), minlength=n_hosts)
    L = sparse.diags(weight) - Am.T @ W @ Am
    E_h = np.bincount(host, weights=np.where(multi[instance], e, 0.0), minlength=n_hosts)
    b = E_h - Am.T @ (np.where(multi, S_i / np.maximum(n_i, 1), 0.0))
    adjacency = (Am.T @ Am).tocsr()
    n_comp, comp = connected_components(adjacency, directed=False)
    pinned = []
    for c in range(n_comp):
        members = np.flatnonzero(comp == c)
        pinned.append(members[np.argmax(weight[members])])
    free = np.ones(n_hosts, dtype=bool)
    free[pinned] = False
    idx = np.flatnonzero(free & (weight > 0))
    if idx.size:
        sub = L[idx][:, idx].tocsc()
        offsets[idx] = spsolve(sub, b[idx]) if idx.size > 1 else b[idx] / sub[0, 0]
    t_i = (S_i - np.bincount(instance, weights=offsets[host], minlength=n_inst)) / \
        np.maximum(n_i, 1)
    residual = np.where(multi[instance], e - t_i[instance] - offsets[host], 0.0)
    rms = np.sqrt(np.bincount(host, weights=residual ** 2, minlength=n_hosts) /
                  np.maximum(weight, 1))
    return offsets, comp, rms, residual


__all__ = ["RESIDUAL_S", "align"]
