"""Query sizes from per-row query ids."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import offsets_from_qid

__all__ = ["group_sizes"]


def group_sizes(qid: Any) -> np.ndarray:
    """Sizes of the contiguous runs of equal query ids, in row order (the ``group`` argument).

    Parameters
    ----------
    qid : array-like of shape (n_documents,)
        One query id per row. Rows of a query must be adjacent; the ids need not be sorted.

    Returns
    -------
    ndarray of int64, shape (n_queries,)
        Documents per query, summing to ``n_documents``.

    Raises
    ------
    ValueError
        If a query's rows are not contiguous (the message shows how to reorder them).

    Examples
    --------
    >>> from stochrank.metrics import group_sizes
    >>> group_sizes([7, 7, 3, 3, 3, 9]).tolist()
    [2, 3, 1]
    """
    return np.diff(offsets_from_qid(qid))
