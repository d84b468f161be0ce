"""The one evidence model of the diagnosis: a measurement x = ln(observed / expected) is healthy,
x ~ N(0, s^2), or slowed by a factor F log-uniform between `lo` and `hi` (x = ln F + noise). Its
likelihood ratio, slowed against healthy, with healthy data's own share `eps` of outliers of
the slowed shape (NCCL's tail, a noisy iteration), is at most 1 / eps: an isolated outlier says
little, a coherent set of them says a lot. Collectives (localise.py), compute (compute.py) and
the forecast (verdict.py) are weighed by it; a unit's Bayes factor averages the product of its
measurements' ratios over a grid of q, the share of them it slows (a static fault q = 1, a
flapping link or a fault for part of the run q < 1): freedom costs."""
from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, logsumexp

EPSILON = (1e-3, 0.05)   # bounds of the share of healthy measurements that are outliers
Q_GRID = np.array([0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0])


def log_slowed(x: np.ndarray, s, lo: float, hi: float) -> np.ndarray:
    """ln g(x): x = ln F + N(0, s^2), F log-uniform between lo and hi."""
    a, b = np.log(lo), np.log(hi)
    top, bottom = log_ndtr((x - a) / s), log_ndtr((x - b) / s)
    return top + np.log(-np.expm1(np.minimum(bottom - top, -1e-12))) - np.log(b - a)


def log_healthy(x: np.ndarray, s) -> np.ndarray:
    """ln of the normal density N(0, s^2) at x."""
    return -0.5 * (x / s) ** 2 - np.log(s * np.sqrt(2 * np.pi))


def looks_slowed(x: np.ndarray, s, lo: float) -> np.ndarray:
    """The measurements that look slowed: beyond ln lo by two spreads (their share, kept
    within EPSILON, is the outliers' share of healthy data: background.py)."""
    return x > np.log(lo) + 2 * s


def log_ratio(x: np.ndarray, s, lo: float, hi: float, eps: float) -> np.ndarray:
    """ln g(x) / h(x): slowed against healthy with a share eps of outliers."""
    return log_ratio_of(log_slowed(x, s, lo, hi), log_healthy(x, s), eps)


def log_ratio_of(log_g: np.ndarray, log_h: np.ndarray, eps: float) -> np.ndarray:
    """ln g / h from ln g(x) (slowed) and ln of the normal density (healthy), with a share eps
    of outliers of the slowed shape among the healthy: at most ln 1 / eps; positive exactly
    where g > h, whatever eps."""
    return log_g - np.logaddexp(np.log1p(-eps) + log_h, np.log(eps) + log_g)


def log_bayes_rows(log_r: np.ndarray, grid: np.ndarray = Q_GRID) -> np.ndarray:
    """ln Bayes factor of each unit (a row of `log_r`: its measurements' log ratios; one a
    unit lacks is 0, neither for nor against): each measurement slowed with probability q,
    averaged over `grid`."""
    if log_r.size == 0:
        return np.zeros(log_r.shape[0])
    per_q = np.stack([np.logaddexp(np.log1p(-q) if q < 1 else -np.inf, np.log(q) + log_r)
                      .sum(axis=1) for q in grid], axis=1)
    return logsumexp(per_q, axis=1) - np.log(len(grid))


def robust_spread(x: np.ndarray, floor: float) -> float:
    """1.4826 x the median absolute deviation (the standard deviation of normal data, robust to
    the slowed ones), at least `floor`."""
    if x.size == 0:
        return floor
    return max(floor, 1.4826 * float(np.median(np.abs(x - np.median(x)))))


# the median absolute deviation of the lower half of standard normal data about its own median
# (the half-normal's: |Z| has median 0.6745, and P(|Z| within d of it) = 1/2 at d = 0.3993,
# numerically; 0.39926 from 2,000,001 draws)
LOWER_HALF_MAD = 0.3993


def lower_spread(x: np.ndarray, floor: float) -> float:
    """The standard deviation of normal data from its lower half alone (its MAD over
    LOWER_HALF_MAD), at least `floor`: a fault only slows, so the lower half is healthy while at
    most half the measurements are slowed (two groups a stage, one of them slow: the MAD of all
    of them is the fault's own size, which then hid it)."""
    low = np.sort(x)[:(x.size + 1) // 2]
    if low.size < 2:
        return robust_spread(x, floor)
    return max(floor, float(np.median(np.abs(low - np.median(low)))) / LOWER_HALF_MAD)


__all__ = ["EPSILON", "Q_GRID", "log_bayes_rows", "log_healthy", "log_ratio", "log_ratio_of",
           "log_slowed", "looks_slowed", "lower_spread", "robust_spread"]
