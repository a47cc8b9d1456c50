"""Per-query AUC (bipartite ranking): Numba kernel, parallel driver, typed wrapper."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from .._validation import check_real
from ._common import empty_value, owner, prepare, reduce, ties_code
from ._ordering import AVERAGE, rank_order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

__all__ = ["auc"]


# LOW LEVEL FUNCTIONS ==========================================================================


@njit(cache=True)
def _auc_query(labels: FloatArray, scores: FloatArray, threshold: float, ties: int, empty: float) -> float:
    """Share of (relevant, irrelevant) pairs ranked in order, by one pass from the bottom of the ranking."""
    n = labels.size
    n_rel = 0
    for i in range(n):
        n_rel += labels[i] > threshold
    if n_rel == 0 or n_rel == n:
        return empty
    order = rank_order(labels, scores, ties)
    below = 0.0  # irrelevant documents strictly below the current run
    wins = 0.0
    end = n
    while end > 0:
        start = end - 1
        if ties == AVERAGE:  # a run of equal scores: its pairs count 1/2
            while start > 0 and scores[order[start - 1]] == scores[order[end - 1]]:
                start -= 1
        run_rel = 0.0
        run_irr = 0.0
        for p in range(start, end):
            if labels[order[p]] > threshold:
                run_rel += 1.0
            else:
                run_irr += 1.0
        wins += run_rel * (below + 0.5 * run_irr)
        below += run_irr
        end = start
    return wins / (n_rel * (n - n_rel))


@njit(cache=True, parallel=True)
def _auc_parallel(
    labels: FloatArray, scores: FloatArray, offsets: IntArray, threshold: float, ties: int, empty: float
) -> FloatArray:
    out = np.empty(offsets.size - 1)
    for q in prange(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[q] = _auc_query(labels[a:b], scores[a:b], threshold, ties, empty)
    return out


# HIGH LEVEL FUNCTIONS =========================================================================


def auc(
    labels: Any,
    scores: Any,
    group: Any,
    *,
    threshold: float = 0.0,
    ties: str = "worst",
    empty: str = "skip",
    tiebreak: Any = None,
    weight: Any = None,
    per_query: bool = False,
) -> float | np.ndarray:
    r"""Per-query AUC: the share of (relevant, irrelevant) document pairs ranked in order.

    .. math::
        \mathrm{AUC} = \frac{1}{P N} \sum_{i:\ r_i > t} \sum_{j:\ r_j \le t} [\, i \text{ ranked above } j \,]

    with :math:`P` and :math:`N` the numbers of relevant (``label > threshold``) and irrelevant
    documents of the query. One pass over the ranking (O(n log n) per query).

    Parameters
    ----------
    labels : array-like of shape (n_documents,)
        Relevance labels, finite and ``>= 0``; relevant means ``label > threshold``.
    scores : array-like of shape (n_documents,)
        Model scores (higher = ranked first); NaN and inf are rejected.
    group : array-like of int
        Documents per query in row order (LightGBM style); a query's rows are contiguous and the
        sizes sum to ``n_documents``. Convert per-row query ids with :func:`group_sizes`.
    threshold : float, default 0.0
        Relevance border.
    ties : {"worst", "input", "average", "key_descending", "key_ascending"}, default "worst"
        Pairs with equal scores. ``"worst"``: lower label first, so a tied pair counts 0 (the pessimistic
        rule, what StochasticRank's relevance shift converges to); ``"input"``: row
        order; ``"average"``: a tied pair counts 1/2 (scikit-learn's ``roc_auc_score``);
        ``"key_descending"`` / ``"key_ascending"``: by the ``tiebreak`` key (trec_eval / MS MARCO).
    empty : {"skip", "one", "zero"}, default "skip"
        Value of a query without relevant or without irrelevant documents, where AUC is undefined
        (scikit-learn raises): ``"skip"`` leaves it out of the mean (NaN with ``per_query=True``).
    tiebreak : array-like of shape (n_documents,) or None, default None
        A key per document (numbers or strings, e.g. the docno) for ``ties="key_descending"`` /
        ``"key_ascending"``; documents with equal score and key keep their row order.
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
        For invalid parameters, mismatched lengths, non-finite scores or negative labels.

    Notes
    -----
    ``ties="average"`` equals ``sklearn.metrics.roc_auc_score(labels > threshold, scores)`` on each
    query; the mean over queries is the "query AUC" of ranking papers. CatBoost's ``QueryAUC:type=Classic``
    is ``ties="average", empty="zero"`` (a tied pair counts 1/2, a query without both classes 0), not
    the defaults.

    Examples
    --------
    >>> from stochrank.metrics import auc
    >>> auc([1, 0, 1, 0], [4.0, 3.0, 2.0, 1.0], group=[4])  # pairs in order: 3 of 4
    0.75
    """
    empty_score = empty_value(empty, "auc")
    tie_code = ties_code(ties, "auc", average_ok=True)
    threshold = check_real(threshold, "threshold", owner("auc"))
    labels, scores, offsets, qweights = prepare(
        labels, scores, group, weight, "auc", ties=ties, tiebreak=tiebreak
    )
    values = run_parallel(
        _auc_parallel, scores.size, labels, scores, offsets, threshold, tie_code, empty_score
    )
    return reduce(values, qweights, per_query)
