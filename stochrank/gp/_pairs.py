"""Duels as (winner, loser) row pairs: validation, and pairs built from graded labels within queries."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.utils.validation import check_random_state

from .._validation import check_optional_int
from ..conventions import offsets_from_sizes

IntArray = npt.NDArray[np.int64]

__all__ = ["check_pairs", "pairs_from_labels"]


def check_pairs(pairs: Any, n_rows: int, owner: str) -> IntArray:
    """``pairs`` as an int64 array (t, 2) of (winner, loser) rows of an ``X`` with ``n_rows`` rows.

    Raises
    ------
    ValueError
        Naming the fix, when ``pairs`` is empty, not (t, 2), not integral, out of range, or has a duel
        of a row against itself.
    """
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"{owner}: 'pairs' must be an int array of shape (n_duels, 2), one (winner, loser) row pair per "
            f"duel; got shape {arr.shape}. Stack the duels as np.column_stack([winners, losers])."
        )
    if arr.shape[0] == 0:
        raise ValueError(
            f"{owner}: 'pairs' is empty, so there is nothing to learn from. Pass at least one duel "
            "(winner, loser); pairs_from_labels(y, group) builds them from graded labels."
        )
    if arr.dtype.kind not in "iu":
        integral = (
            arr.dtype.kind == "f" and bool(np.all(np.isfinite(arr))) and bool(np.all(arr == np.round(arr)))
        )
        if not integral:
            raise ValueError(
                f"{owner}: 'pairs' must hold integer row indices into X; got dtype {arr.dtype} with "
                "non-integral values. Pass the row numbers of the winner and the loser of each duel."
            )
    idx = arr.astype(np.int64)
    bad = np.flatnonzero(((idx < 0) | (idx >= n_rows)).any(axis=1))
    if bad.size:
        raise ValueError(
            f"{owner}: 'pairs' row {bad[0]} is {idx[bad[0]].tolist()}, but X has {n_rows} rows (valid "
            f"indices 0..{n_rows - 1}); {bad.size} duel(s) are out of range. Index the rows of the X passed "
            "to fit."
        )
    self_duels = np.flatnonzero(idx[:, 0] == idx[:, 1])
    if self_duels.size:
        raise ValueError(
            f"{owner}: 'pairs' row {self_duels[0]} prefers document {idx[self_duels[0], 0]} to itself "
            f"({self_duels.size} such duel(s)); a duel needs two different documents. Drop those rows."
        )
    return idx


def pairs_from_labels(
    y: Any, group: Any, *, max_pairs_per_query: int | None = None, random_state: Any = None
) -> IntArray:
    r"""Build within-query duels from graded labels: row i beats row j when :math:`y_i > y_j`.

    Parameters
    ----------
    y : array-like of shape (n,)
        Relevance labels (any real values; equal labels make no duel).
    group : array-like of int
        Documents per query, in row order (LightGBM's ``group``); the sizes must add up to ``n``.
    max_pairs_per_query : int >= 1 or None, default None
        Cap on the duels of one query, drawn uniformly without replacement when a query has more
        (a query of n documents has up to n²/4 of them). None: every pair.
    random_state : int, RandomState or None, default None
        Seeds the draws of the cap.

    Returns
    -------
    pairs : ndarray of int64, shape (n_pairs, 2)
        (winner, loser) global row indices, query by query.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D and finite, ``group`` does not add up to ``len(y)`` or the cap is not an int >= 1.

    Examples
    --------
    >>> pairs_from_labels([2, 0, 1, 1, 0], [3, 2])
    array([[0, 1],
           [0, 2],
           [2, 1],
           [3, 4]])
    """
    owner = "pairs_from_labels"
    labels = np.asarray(y, dtype=np.float64)
    if labels.ndim != 1 or not np.all(np.isfinite(labels)):
        raise ValueError(f"{owner}: 'y' must be a 1-D array of finite labels; got shape {labels.shape}.")
    cap = check_optional_int(
        max_pairs_per_query, "max_pairs_per_query", owner, low=1, none_means="every pair"
    )
    offsets = offsets_from_sizes(group, labels.size)
    rng = check_random_state(random_state)
    out = []
    for start, end in itertools.pairwise(offsets):
        yq = labels[start:end]
        win, lose = np.nonzero(yq[:, None] > yq[None, :])
        if cap is not None and win.size > cap:
            keep = np.sort(rng.choice(win.size, cap, replace=False))
            win, lose = win[keep], lose[keep]
        out.append(np.column_stack([win, lose]) + start)
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 2), dtype=np.int64)
