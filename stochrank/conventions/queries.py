"""Query structure: boundaries from LightGBM-style sizes or per-row query ids, and query weights.

Every public entry point takes ``group`` as the number of documents per query in row order (LightGBM
style) and turns it into int64 boundaries ``[0, end of query 0, ..., n]`` here; the kernels index queries
by those boundaries.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = [
    "check_offsets",
    "group_sizes",
    "labels_per_row",
    "offsets_from_qid",
    "offsets_from_sizes",
    "pop_qid_column",
    "query_offsets",
    "query_weights",
    "rows_and_queries",
    "warn_if_nothing_to_rank",
]

# XGBoost's special column: a pandas DataFrame may carry its query ids as a column of this name, which
# keeps them with the rows through scikit-learn's splitting (xgboost.XGBRanker's convention).
QID_COLUMN = "qid"


def offsets_from_sizes(group: Any, n_rows: int, name: str = "group") -> np.ndarray:
    """Query boundaries ``[0, s0, s0+s1, ..., n_rows]`` (int64) from query sizes."""
    if group is None:
        raise ValueError(
            f"'{name}' is required: ranking needs query boundaries. Pass the number of documents of each "
            "query, in row order (LightGBM style), e.g. group=np.unique(qid, return_counts=True)[1] for "
            "sorted qid, or use stochrank.group_sizes(qid)."
        )
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"'{name}' must be a non-empty 1-D array of query sizes; got shape {sizes.shape}.")
    if not np.issubdtype(sizes.dtype, np.number) or np.issubdtype(sizes.dtype, np.complexfloating):
        raise ValueError(
            f"'{name}' must hold positive integer query sizes (documents per query); got dtype "
            f"{sizes.dtype}. If you have one query id per row, convert with stochrank.group_sizes(qid)."
        )
    bad = np.flatnonzero(~(sizes >= 1) | (sizes != np.round(sizes)))  # NaN fails both tests
    if bad.size:
        q = int(bad[0])
        raise ValueError(
            f"'{name}' must hold positive integer query sizes (documents per query); query {q} has size "
            f"{sizes[q].item()!r} ({bad.size} bad of {sizes.size} entries). An empty query has no ranking: "
            "drop its entry. If you have one query id per row, convert with stochrank.group_sizes(qid)."
        )
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes.astype(np.int64), out=offsets[1:])
    if offsets[-1] != n_rows:
        raise ValueError(
            f"'{name}' sums to {offsets[-1]} documents but there are {n_rows} rows. '{name}' must be the "
            "number of documents per query in row order (LightGBM style), not query ids; convert query ids "
            "with stochrank.group_sizes(qid)."
        )
    return offsets


def per_query_sums(values: Any, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each query's rows (0 for an empty query).

    By prefix sums rather than ``np.add.reduceat``, which gives an empty query its next row's value and
    raises on an empty last query (boosters accept empty groups).
    """
    prefix = np.concatenate(([0], np.cumsum(values)))
    return np.diff(prefix[offsets])


def offsets_from_qid(qid: Any, name: str = "qid") -> np.ndarray:
    """Query boundaries from per-row query ids whose rows are contiguous (not necessarily sorted)."""
    q = np.asarray(qid)
    if q.ndim != 1 or q.size == 0:
        raise ValueError(
            f"'{name}' must be a non-empty 1-D array with one query id per row; got shape {q.shape}."
        )
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    offsets = np.concatenate(([0], change, [q.size])).astype(np.int64)
    starts = q[offsets[:-1]]
    if np.unique(starts).size != starts.size:
        _, counts = np.unique(starts, return_counts=True)
        dup = np.unique(starts)[counts > 1][0].item()
        raise ValueError(
            f"The rows of query {dup!r} in '{name}' are not contiguous: a query's documents must be "
            f"adjacent. Reorder the rows, e.g. order = np.argsort({name}, kind='stable'); "
            f"X, y, {name} = X[order], y[order], {name}[order]."
        )
    return offsets


def query_offsets(
    n_rows: int, *, group: Any = None, qid: Any = None, group_name: str = "group", qid_name: str = "qid"
) -> np.ndarray | None:
    """Query boundaries from ``group`` (documents per query) or ``qid`` (one id per row); None without either.

    ``qid`` needs contiguous queries, not sorted ids. Both at once, a ``qid`` of the wrong length or sizes
    that do not add up to ``n_rows`` (e.g. query ids passed as ``group``) raise ``ValueError`` naming the fix.
    """
    if group is not None and qid is not None:
        raise ValueError(
            f"Got both '{group_name}' and '{qid_name}': pass one of them ('{group_name}': documents per "
            f"query in row order; '{qid_name}': one query id per row)."
        )
    if qid is not None:
        offsets = offsets_from_qid(qid, qid_name)
        if offsets[-1] != n_rows:
            raise ValueError(
                f"'{qid_name}' has {offsets[-1]} entries but there are {n_rows} rows: give one query id per "
                "row."
            )
        return offsets
    if group is not None:
        return offsets_from_sizes(group, n_rows, group_name)
    return None


def labels_per_row(X: Any, y: Any, y_name: str = "y", x_name: str = "X") -> np.ndarray:
    """Return ``y`` as float64 labels, refusing any count but one per row of ``X`` (None: no labels).

    Checked before the query structure, which counts rows too, so a short ``y`` is named as such. Rows are
    ``X.shape[0]`` or ``len(X)`` (a list of rows); features without either are left to the feature check.
    ``y_name`` / ``x_name`` name the two in the message, e.g. ``"eval_set[0]: y"``.
    """
    labels = np.empty(0) if y is None else np.asarray(y, dtype=np.float64).reshape(-1)
    shape = getattr(X, "shape", None)
    n_rows: int | None
    if shape is not None:
        n_rows = int(shape[0]) if len(shape) >= 1 else None
    else:
        try:
            n_rows = len(X)
        except TypeError:
            n_rows = None
    if n_rows is not None and n_rows != labels.size:
        raise ValueError(
            f"{y_name} has {labels.size} labels but {x_name} has {n_rows} rows: give one label per row."
        )
    return labels


def pop_qid_column(X: Any) -> tuple[Any, np.ndarray | None]:
    """Split the special ``qid`` column off a DataFrame: ``(X without it, the ids)``, else ``(X, None)``."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "drop") or QID_COLUMN not in columns:
        return X, None
    return X.drop(columns=QID_COLUMN), np.asarray(X[QID_COLUMN])


def rows_and_queries(
    X: Any, n_rows: int, *, group: Any = None, qid: Any = None, where: str, qid_name: str = "qid"
) -> tuple[Any, np.ndarray]:
    """Return ``(X without a qid column, query boundaries)`` for scoring; refuse data without queries.

    The queries come from ``group``, ``qid`` (named ``qid_name`` by the caller) or a DataFrame's ``qid``
    column, exactly one of them. Without any, ``ValueError`` says how to pass them, in a model selection
    too: a ranking metric over the whole set as one query is a meaningless number.
    """
    X, column = pop_qid_column(X)
    if column is not None and (group is not None or qid is not None):
        raise ValueError(
            f"{where} got X with a '{QID_COLUMN}' column and {qid_name}= or group= as well: pass the query "
            "structure once."
        )
    offsets = query_offsets(n_rows, group=group, qid=column if column is not None else qid, qid_name=qid_name)
    if offsets is None:
        raise ValueError(
            f"{where} needs the query structure to score per query (the whole data as one query gives a "
            f"meaningless number): pass {qid_name}=<one query id per row> or group=<documents per query>, or "
            f"X as a pandas DataFrame with a '{QID_COLUMN}' column. In GridSearchCV / cross_val_score with "
            "GroupKFold: use scoring=stochrank.metrics.make_ranking_scorer(...) with metadata routing "
            "(sklearn.set_config(enable_metadata_routing=True); it receives each test fold's groups=qid), "
            f"or give X as a DataFrame with a '{QID_COLUMN}' column."
        )
    return X, offsets


def every_query_has_one_document(offsets: np.ndarray) -> bool:
    """Return True when there are several queries, each with exactly one document (an empty one has none)."""
    sizes = np.diff(offsets)
    return sizes.size > 1 and bool(np.all(sizes == 1))


def warn_if_nothing_to_rank(offsets: np.ndarray, what: str, stacklevel: int = 2) -> None:
    """Warn when every query of a data set has one document: nothing to rank, a constant model follows.

    Boosters do not say so: LightGBM and XGBoost silently train a constant model, CatBoost stops with "Too
    few sampling units". Usually the query structure is wrong (one id per row, or sizes of 1).
    """
    n_queries = offsets.size - 1
    if every_query_has_one_document(offsets):
        warnings.warn(
            f"Every query of the {what} has one document ({n_queries} queries): there is nothing to rank, so "
            "ranking gradients are zero (the model stays constant) and ranking metrics are constant. Check "
            "the query structure: group= takes the number of documents per query in row order, qid= one "
            "query id per row (stochrank.group_sizes(qid) converts ids to sizes).",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def query_weights(
    weight: Any, offsets: np.ndarray, name: str = "weight", *, part: bool = False
) -> np.ndarray | None:
    """One non-negative weight per query from per-row (constant within a query) or per-query weights.

    An empty query (XGBoost accepts empty groups) has no rows to read a per-row weight from: it gets 0,
    and it contributes nothing either way. Every non-empty query weighing 0 raises ``ValueError``: the
    boosters would silently return a constant model and the metrics NaN. ``part=True`` allows it for
    one worker's share of a distributed training set, where other workers may hold the weighted queries.
    """
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64).reshape(-1)
    if w.size == 0:
        return None
    n_queries, n_rows = offsets.size - 1, int(offsets[-1])
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(
            f"'{name}' must be finite and non-negative; found {w[~(np.isfinite(w) & (w >= 0))][:3]}."
        )
    filled = np.diff(offsets) > 0
    if w.size == n_rows == n_queries and not filled.all():
        raise ValueError(
            f"'{name}' has {w.size} entries, as many as there are rows and queries (some of them empty): "
            "it cannot tell one weight per row from one per query. Pass one weight per query without the "
            "empty queries' rows, or drop the empty groups."
        )
    if w.size == n_rows and n_rows != n_queries:
        starts = offsets[:-1][filled]
        varies = np.flatnonzero(np.maximum.reduceat(w, starts) != np.minimum.reduceat(w, starts))
        if varies.size:
            qi = np.flatnonzero(filled)[varies[0]]
            raise ValueError(
                f"'{name}' varies within query {qi} (rows {offsets[qi]}..{offsets[qi + 1] - 1}). Ranking "
                "metrics weight whole queries: give every row of a query the same weight (or pass one "
                "weight per query)."
            )
        per_query = np.zeros(n_queries)
        per_query[filled] = w[starts]
        w = per_query
    elif w.size != n_queries:
        raise ValueError(
            f"'{name}' has {w.size} entries; expected one per row ({n_rows}) or one per query ({n_queries})."
        )
    if not part and filled.any() and not (w[filled] > 0).any():
        raise ValueError(
            f"Every query weight in '{name}' is 0: nothing would be learned (a constant model) or "
            "measured (NaN). Give the queries to train on or evaluate a positive weight, or drop the "
            "weights. On Dask, every partition needs a query of positive weight."
        )
    return w


def check_offsets(offsets: Any, n_rows: int, name: str = "offsets") -> np.ndarray:
    """Query boundaries ``[0, e_0, e_1, ..., n_rows]`` as int64, strictly increasing (no empty query)."""
    arr = np.asarray(offsets)
    integral = arr.ndim == 1 and np.issubdtype(arr.dtype, np.number) and bool(np.all(arr == np.round(arr)))
    if not integral or arr.size < 2:
        raise ValueError(
            f"'{name}' must be a 1-D integer array of query boundaries "
            f"[0, end of query 0, ..., {n_rows}] (at least two entries); got {arr[:5]!r} of shape "
            f"{arr.shape}. From query sizes: {name} = np.r_[0, np.cumsum(group)]."
        )
    if arr[0] != 0 or arr[-1] != n_rows:
        raise ValueError(
            f"'{name}' must start at 0 and end at the number of documents ({n_rows}); "
            f"got {arr[0]} .. {arr[-1]}. From query sizes: {name} = np.r_[0, np.cumsum(group)]."
        )
    if np.any(np.diff(arr) < 1):
        q = int(np.flatnonzero(np.diff(arr) < 1)[0])
        raise ValueError(
            f"'{name}' must increase strictly (every query has a document); query {q} spans "
            f"{arr[q]} .. {arr[q + 1]}."
        )
    return arr.astype(np.int64)


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
