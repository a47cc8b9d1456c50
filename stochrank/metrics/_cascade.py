"""Cascade metrics (ERR, PFound) and reciprocal rank: Numba kernels, parallel drivers, wrappers.

A cascade user scans the list top-down and stops at a satisfying document, so these metrics are
not linear in the labels and have no closed-form average over tied orders: ``ties="average"`` is
rejected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from .._validation import check_real
from ..conventions import MAX_EXP_LABEL, stop_probabilities
from ._common import empty_value, k_code, owner, prepare, reduce, ties_code
from ._ordering import cutoff, rank_order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

__all__ = ["err", "mrr", "pfound"]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def _err_query(
    labels: FloatArray, scores: FloatArray, stop: FloatArray, k: int, ties: int, empty: float
) -> float:
    """ERR@k of one query; ``stop`` holds the stopping probabilities R of its documents."""
    if stop.max() == 0.0:
        return empty
    order = rank_order(labels, scores, ties)
    look, total = 1.0, 0.0
    for p in range(cutoff(k, scores.size)):
        r = stop[order[p]]
        total += look * r / (p + 1)
        look *= 1.0 - r
    return total


@njit(cache=True)
def _pfound_query(
    labels: FloatArray, scores: FloatArray, stop: FloatArray, k: int, decay: float, ties: int, empty: float
) -> float:
    """PFound@k of one query: like ERR, with a per-position continuation ``decay`` instead of 1/(p+1)."""
    if stop.max() == 0.0:
        return empty
    order = rank_order(labels, scores, ties)
    look, total = 1.0, 0.0
    for p in range(cutoff(k, scores.size)):
        r = stop[order[p]]
        total += look * r
        look *= decay * (1.0 - r)
    return total


@njit(cache=True)
def _rr_query(
    labels: FloatArray, scores: FloatArray, threshold: float, k: int, ties: int, empty: float
) -> float:
    """Reciprocal rank of the first document with label > threshold within the top k (0 if none)."""
    if labels.max() <= threshold:
        return empty
    order = rank_order(labels, scores, ties)
    for p in range(cutoff(k, scores.size)):
        if labels[order[p]] > threshold:
            return 1.0 / (p + 1)
    return 0.0


@njit(cache=True, parallel=True)
def _err_parallel(
    labels: FloatArray,
    scores: FloatArray,
    stop: FloatArray,
    offsets: IntArray,
    k: int,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _err_query(labels[a:b], scores[a:b], stop[a:b], k, ties, empty)
    return out


@njit(cache=True, parallel=True)
def _pfound_parallel(
    labels: FloatArray,
    scores: FloatArray,
    stop: FloatArray,
    offsets: IntArray,
    k: int,
    decay: float,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _pfound_query(labels[a:b], scores[a:b], stop[a:b], k, decay, ties, empty)
    return out


@njit(cache=True, parallel=True)
def _rr_parallel(
    labels: FloatArray,
    scores: FloatArray,
    offsets: IntArray,
    threshold: float,
    k: int,
    ties: int,
    empty: float,
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _rr_query(labels[a:b], scores[a:b], threshold, k, ties, empty)
    return out


# HIGH LEVEL FUNCTIONS =========================================================================


def _stop_probabilities(
    name: str, labels: Any, scores: Any, group: Any, weight: Any, max_grade: Any, ties: str, tiebreak: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate the inputs and add the stopping probability R of every document."""
    if max_grade is not None:
        max_grade = check_real(
            max_grade, "max_grade", owner(name), low=0.0, high=MAX_EXP_LABEL, low_open=True
        )
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, name, ties=ties, tiebreak=tiebreak
    )
    return labels, scores, stop_probabilities(labels, max_grade, owner(name)), offsets, qweights


def err(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    max_grade: float | None = None,
    ties: str = "worst",
    empty: str = "zero",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Compute the expected reciprocal rank at ``k`` (Chapelle et al. 2009).

    .. math::
        \mathrm{ERR@}k = \sum_{p=0}^{K-1} \frac{R_{\pi(p)}}{p+1} \prod_{q<p} \bigl(1 - R_{\pi(q)}\bigr),
        \qquad K = \min(k, n)

    with ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score and
    :math:`R` the probability that a document satisfies the user.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        With ``max_grade=None``: the probabilities :math:`R` themselves, in ``[0, 1]`` (CatBoost
        ``ERR``). Otherwise grades :math:`r \in [0, G]`, mapped to :math:`R = (2^r - 1)/2^G`.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list and ``k > n`` truncates to ``n``.
    max_grade : float in (0, 50] or None, default None
        Highest relevance grade :math:`G`; None reads labels as probabilities.
    ties : {"worst", "input", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost, StochasticRank paper); ``"input"``: row order (stable sort); ``"key_*"``: by the
        ``tiebreak`` key. ``"average"`` is not supported (ERR is not linear in the labels).
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query where every :math:`R` is 0 (ERR is 0 there by the formula, as in
        CatBoost). ``"skip"`` leaves it out of the mean; with ``per_query=True`` it is NaN.
    tiebreak : array-like of shape (n_documents,) or None, default None
        Keys (numbers or strings, e.g. the docno) for the ``"key_*"`` ties; equal ones keep row order.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query values instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q` over non-skipped queries (NaN if all are skipped), or
        the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores, or labels outside
        ``[0, 1]`` (``[0, max_grade]``).

    Notes
    -----
    CatBoost parity: ``ERR:top=k`` = ``err(..., k=k, ties="worst")`` with probability labels.

    Examples
    --------
    >>> from stochrank.metrics import err
    >>> err([0.5, 1.0], [2.0, 1.0], group=[2])  # 0.5/1 + (1 - 0.5) * 1.0/2
    0.75
    """
    empty_score = empty_value(empty, "err")
    tie_code = ties_code(ties, "err", average_ok=False)
    k = k_code(k, "err")
    labels, scores, stop, offsets, qweights = _stop_probabilities(
        "err", labels, scores, group, weight, max_grade, ties, tiebreak
    )
    values = run_parallel(_err_parallel, scores.size, labels, scores, stop, offsets, k, tie_code, empty_score)
    return reduce(values, qweights, per_query)


def pfound(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    decay: float = 0.85,
    max_grade: float | None = None,
    ties: str = "worst",
    empty: str = "zero",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""PFound at ``k``: probability that the user finds a relevant document (Yandex, Segalovich 2010).

    .. math::
        \mathrm{PFound@}k = \sum_{p=0}^{K-1} R_{\pi(p)}\, \mathrm{pLook}_p, \qquad
        \mathrm{pLook}_0 = 1, \quad
        \mathrm{pLook}_p = \mathrm{pLook}_{p-1} \cdot \mathrm{decay} \cdot \bigl(1 - R_{\pi(p-1)}\bigr)

    with ``K = min(k, n)`` and ``pi(p)`` the document at 0-based position ``p``.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        With ``max_grade=None``: probabilities :math:`R` in ``[0, 1]`` (CatBoost ``PFound``).
        Otherwise grades :math:`r \in [0, G]`, mapped to :math:`R = (2^r - 1)/2^G`.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list and ``k > n`` truncates to ``n``.
    decay : float in [0, 1], default 0.85
        Probability of looking further after an unsatisfying document (CatBoost default 0.85).
    max_grade : float in (0, 50] or None, default None
        Highest relevance grade :math:`G`; None reads labels as probabilities.
    ties : {"worst", "input", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order
        (CatBoost); ``"input"``: row order (stable sort); ``"key_*"``: by the ``tiebreak`` key.
        ``"average"`` is not supported.
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query where every :math:`R` is 0 (0 by the formula, as in CatBoost).
        ``"skip"`` leaves it out of the mean; with ``per_query=True`` it is NaN.
    tiebreak : array-like of shape (n_documents,) or None, default None
        Keys (numbers or strings, e.g. the docno) for the ``"key_*"`` ties; equal ones keep row order.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query values instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q` over non-skipped queries (NaN if all are skipped), or
        the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores, or labels outside
        ``[0, 1]`` (``[0, max_grade]``).

    Notes
    -----
    CatBoost parity: ``PFound:top=k;decay=d`` = ``pfound(..., k=k, decay=d, ties="worst")``.

    Examples
    --------
    >>> from stochrank.metrics import pfound
    >>> round(pfound([0.0, 1.0], [2.0, 1.0], group=[2]), 4)  # 0 + 1 * 0.85 * (1 - 0) * 1.0
    0.85
    """
    empty_score = empty_value(empty, "pfound")
    tie_code = ties_code(ties, "pfound", average_ok=False)
    k = k_code(k, "pfound")
    decay = check_real(decay, "decay", owner("pfound"), low=0.0, high=1.0)
    labels, scores, stop, offsets, qweights = _stop_probabilities(
        "pfound", labels, scores, group, weight, max_grade, ties, tiebreak
    )
    values = run_parallel(
        _pfound_parallel, scores.size, labels, scores, stop, offsets, k, decay, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)


def mrr(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    k: int | None = None,
    threshold: float = 0.0,
    ties: str = "worst",
    empty: str = "zero",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Mean reciprocal rank of the first relevant document, cut at ``k``.

    .. math::
        \mathrm{RR@}k = \begin{cases} 1/(p^* + 1) & p^* < k \\ 0 & \text{otherwise} \end{cases},
        \qquad p^* = \min\{p : r_{\pi(p)} > \text{threshold}\}

    with ``pi(p)`` the document at 0-based position ``p`` of the ranking by descending score.

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance labels, finite and ``>= 0``; relevant means ``label > threshold``.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    k : int >= 1 or None, default None
        Cutoff; None scores the whole list and ``k > n`` truncates to ``n``.
    threshold : float, default 0.0
        Relevance border. 0 is the rule of CatBoost's ranking objectives; CatBoost's ``MRR``
        *eval metric* uses ``border=0.5``, so pass ``threshold=0.5`` to reproduce it.
    ties : {"worst", "input", "key_descending", "key_ascending"}, default "worst"
        Order of documents with equal scores. ``"worst"``: lower label first, then row order, so a
        relevant document comes after every tied non-relevant one (CatBoost); ``"input"``: row
        order; ``"key_*"``: by the ``tiebreak`` key. ``"average"`` is not supported.
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query without relevant documents (CatBoost: 0). ``"skip"`` leaves it out of
        the mean; with ``per_query=True`` it is NaN.
    tiebreak : array-like of shape (n_documents,) or None, default None
        Keys (numbers or strings, e.g. the docno) for the ``"key_*"`` ties; equal ones keep row order.
    weight : array-like or None, default None
        Query weights: one per query, or one per row constant within each query. Non-negative.
    per_query : bool, default False
        Return the per-query reciprocal ranks instead of their weighted mean.

    Returns
    -------
    float or ndarray of shape (n_queries,)
        :math:`\sum_q w_q m_q / \sum_q w_q` over non-skipped queries (NaN if all are skipped), or
        the float64 per-query values ``m_q``.

    Raises
    ------
    ValueError
        For invalid parameters, mismatched lengths, non-finite scores or negative labels.

    Notes
    -----
    CatBoost parity: ``MRR:top=k`` = ``mrr(..., k=k, threshold=0.5, ties="worst", empty="zero")``;
    trec_eval ``recip_rank`` (pytrec_eval) = ``mrr(..., threshold=0.5, ties="key_descending",
    tiebreak=docno, empty="zero")`` for integer grades; ranx ``mrr@k`` = ``mrr(..., k=k,
    empty="zero")`` on scores without ties (ranx orders ties by an unstable sort).

    Examples
    --------
    >>> from stochrank.metrics import mrr
    >>> mrr([0, 1, 1], [3.0, 2.0, 1.0], group=[3])
    0.5
    """
    empty_score = empty_value(empty, "mrr")
    tie_code = ties_code(ties, "mrr", average_ok=False)
    k = k_code(k, "mrr")
    threshold = check_real(threshold, "threshold", owner("mrr"))
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, "mrr", ties=ties, tiebreak=tiebreak
    )
    values = run_parallel(
        _rr_parallel, scores.size, labels, scores, offsets, threshold, k, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)
