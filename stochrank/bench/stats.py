"""Paired significance tests on per-query metrics (method against the baseline, same test queries).

* :func:`paired_t` — two-sided paired t-test, :func:`scipy.stats.ttest_rel`.
* :func:`paired_randomization` — two-sided paired randomization (sign-flip) test of the mean difference:
  under the null hypothesis each per-query difference is equally likely to have either sign, and the
  p-value is the share of sign patterns whose |mean| reaches the observed one. Exact (all 2^n patterns)
  when 2^n <= ``n_resamples`` (:func:`randomization_is_exact`), otherwise Monte Carlo with ``n_resamples``
  random patterns (default 100,000, the number rankeval uses; seed 42) and p = (count + 1) /
  (n_resamples + 1), which never reports 0.
  Equivalent to ``scipy.stats.permutation_test(..., permutation_type='samples')`` on the pairs, computed
  as one matrix-vector product per batch of sign patterns instead of SciPy's resampled copies of both arrays.
* :func:`holm` — Holm-Bonferroni adjusted p-values for a family of tests (a run compares every method with
  the baseline: without a correction one of six ties "wins" at p < 0.05 about a quarter of the time).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .._validation import check_int

__all__ = [
    "ALPHA",
    "N_RESAMPLES",
    "holm",
    "minimum_detectable_difference",
    "paired_arrays",
    "paired_randomization",
    "paired_t",
    "randomization_is_exact",
]

N_RESAMPLES = 100_000
ALPHA = 0.05  # significance level of every verdict


def paired_arrays(a: Any, b: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Return the pairs where both values exist (NaN marks a query a metric skips); refuse infinite values."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired tests need two 1-D arrays of equal length; got shapes {a.shape} and {b.shape}."
        )
    for name, values in (("a", a), ("b", b)):
        if np.isinf(values).any():
            row = int(np.flatnonzero(np.isinf(values))[0])
            raise ValueError(
                f"paired tests got an infinite value in '{name}' (first at index {row}: {values[row]}); "
                "per-query metrics are finite, with NaN marking a skipped query. Check the metric values."
            )
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def randomization_is_exact(n_pairs: int, n_resamples: int) -> bool:
    """Return whether :func:`paired_randomization` enumerates all 2^n_pairs sign patterns (or samples)."""
    return n_pairs < 63 and 2**n_pairs <= n_resamples


def paired_t(a: Any, b: Any) -> float:
    """Return the two-sided p-value of the paired t-test of mean(a - b) = 0.

    1.0 when all differences are 0.
    """
    from scipy import stats

    a, b = paired_arrays(a, b)
    if a.size < 2 or np.all(a == b):
        return 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def minimum_detectable_difference(a: Any, b: Any, alpha: float = 0.05, power: float = 0.8) -> float:
    r"""Return the smallest true mean difference the paired t-test detects with this power (two-sided).

    .. math:: \mathrm{MDD} = (t_{1-\alpha/2,\,n-1} + t_{\mathrm{power},\,n-1})\, s_d / \sqrt{n}

    with :math:`s_d` the standard deviation of the n paired differences (NaN pairs dropped), the usual
    normal-approximation power formula with t quantiles. At alpha = 0.05, power = 0.8 and large n the
    factor is 2.80. NaN with fewer than 2 pairs.
    """
    from scipy import stats

    a, b = paired_arrays(a, b)
    n = a.size
    if n < 2:
        return float("nan")
    sd = float(np.std(a - b, ddof=1))
    factor = float(stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1))
    return factor * sd / float(np.sqrt(n))


def paired_randomization(a: Any, b: Any, n_resamples: int = N_RESAMPLES, seed: int = 42) -> float:
    """Return the two-sided p-value of the paired sign-flip test of mean(a - b) = 0 (see the module doc).

    ``n_resamples`` (>= 1) random sign patterns, or all 2^n of them when that is no more; NaN pairs are
    dropped, infinite values raise ``ValueError``.
    """
    check_int(n_resamples, "n_resamples", "paired_randomization", low=1)
    check_int(seed, "seed", "paired_randomization", low=0)
    a, b = paired_arrays(a, b)
    d = a - b
    n = d.size
    if n == 0 or np.all(d == 0):
        return 1.0
    observed = abs(d.sum())
    tolerance = 1e-12 * np.abs(d).sum()  # equal sums computed in another order still count as reaching it
    if randomization_is_exact(n, n_resamples):
        count = 0
        for signs in _all_sign_patterns(n):
            count += int(np.count_nonzero(np.abs(signs @ d) >= observed - tolerance))
        return float(count / 2**n)
    rng = np.random.default_rng(seed)
    batch = max(1, min(n_resamples, 4_000_000 // n))
    count, done = 0, 0
    while done < n_resamples:
        m = min(batch, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        count += int(np.count_nonzero(np.abs(signs @ d) >= observed - tolerance))
        done += m
    return (count + 1) / (n_resamples + 1)


def holm(pvalues: Any) -> npt.NDArray[np.float64]:
    r"""Return Holm's step-down adjusted p-values of a family of tests (NaN entries stay NaN, not counted).

    With the m finite p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`, the adjusted value of
    :math:`p_{(i)}` is :math:`\min(1, \max_{j \le i} (m - j + 1)\, p_{(j)})`. Rejecting where the adjusted
    value is below alpha is Holm's procedure (reject :math:`H_{(1)}, H_{(2)}, \dots` while
    :math:`p_{(i)} \le \alpha / (m - i + 1)`), which keeps the family-wise error rate at alpha under any
    dependence between the tests and rejects at least what Bonferroni rejects.

    References
    ----------
    S. Holm. A simple sequentially rejective multiple test procedure. Scand. J. Statist. 6(2), 1979.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    finite = ~np.isnan(p)
    if p.ndim != 1 or np.any((p[finite] < 0.0) | (p[finite] > 1.0)):
        raise ValueError(f"holm needs a 1-D array of p-values in [0, 1] (NaN allowed); got {p!r}.")
    out = np.full(p.shape, np.nan)
    m = int(finite.sum())
    if m == 0:
        return out
    order = np.argsort(p[finite], kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[finite][order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, stepped)
    out[finite] = adjusted
    return out


def _all_sign_patterns(n: int, batch_bits: int = 16) -> Iterator[npt.NDArray[np.float64]]:
    """All 2^n vectors of +-1, in blocks of at most 2^batch_bits rows."""
    low = min(n, batch_bits)
    codes = np.arange(2**low, dtype=np.int64)
    low_bits = ((codes[:, None] >> np.arange(low)) & 1).astype(np.float64) * 2.0 - 1.0
    for high in range(2 ** (n - low)):
        high_bits = ((high >> np.arange(n - low)) & 1).astype(np.float64) * 2.0 - 1.0
        yield np.hstack([low_bits, np.broadcast_to(high_bits, (low_bits.shape[0], n - low))])
