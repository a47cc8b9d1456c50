"""Partitions of Dask collections that keep every query whole (layer 1; the public face is stochrank.dask).

Query structure is a convention of this layer; this module is not imported by ``stochrank.conventions``
itself, so that dask stays an optional dependency. See :mod:`stochrank.dask` for why queries must stay
whole on Dask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt

__all__ = [
    "QueryPartitions",
    "check_query_partitions",
    "group_sizes",
    "n_partitions",
    "partition_by_query",
    "query_arrangement",
]

_FIX = (
    "Repartition with X, y, qid, group, weight = stochrank.dask.partition_by_query(X, y, qid, "
    "weight=weight), or sort the rows by query and cut the partitions at query boundaries."
)


class QueryPartitions(NamedTuple):
    """Collections whose partitions each hold whole queries, aligned row for row.

    ``group`` holds the query sizes of each partition in row order (one chunk per partition of ``X``),
    as ``lightgbm.dask.DaskLGBMRanker.fit(group=...)`` takes them; ``qid`` is what ``xgboost.dask``
    takes. ``weight`` is None when none was given.
    """

    X: Any
    y: Any
    qid: Any
    group: da.Array
    weight: Any


def n_partitions(collection: Any) -> int:
    """Return the number of row partitions of a Dask array, DataFrame or Series."""
    return int(collection.npartitions if hasattr(collection, "npartitions") else collection.numblocks[0])


def _partitions(collection: Any) -> list[Any]:
    """Return the delayed partitions (row blocks) of a Dask array, DataFrame or Series."""
    parts = collection.to_delayed()
    if isinstance(parts, np.ndarray):
        parts = parts.reshape(parts.shape[0], -1)[:, 0].tolist()
    return list(parts)


def _partition_queries(qid: Any) -> list[npt.NDArray[Any]]:
    """Return each partition's query ids, one entry per run of equal ids (in row order)."""

    def runs(part: Any) -> npt.NDArray[Any]:
        q: npt.NDArray[Any] = np.asarray(part).reshape(-1)
        return q[np.r_[True, q[1:] != q[:-1]]] if q.size else q

    return list(dask.compute(*[dask.delayed(runs)(p) for p in _partitions(qid)]))


def check_query_partitions(qid: Any) -> None:
    """Raise if a query's rows are not one contiguous run inside one partition.

    Parameters
    ----------
    qid : dask array or dask Series
        One query id per row, partitioned like the features.

    Raises
    ------
    ValueError
        Naming the first query split across partitions (or not contiguous inside its partition) and how
        to repartition.

    Examples
    --------
    >>> stochrank.dask.check_query_partitions(dask.array.from_array(qid, chunks=1000))  # doctest: +SKIP
    """
    per_part = _partition_queries(qid)
    for part, runs in enumerate(per_part):
        values, counts = np.unique(runs, return_counts=True)
        if (counts > 1).any():
            _split_error(values[counts > 1][0], f"partition {part}, in runs of rows that are not adjacent")
    if not per_part:
        return
    part_of = np.concatenate([np.full(r.size, i) for i, r in enumerate(per_part)])
    values, counts = np.unique(np.concatenate(per_part), return_counts=True)
    if (counts > 1).any():
        q = values[counts > 1][0]
        parts = np.unique(part_of[np.concatenate(per_part) == q])
        _split_error(q, f"partitions {', '.join(str(p) for p in parts)}")


def _split_error(q: Any, where: str) -> None:
    raise ValueError(
        f"Query {q.item() if hasattr(q, 'item') else q!r} is split: its rows are in {where}. A booster on "
        "Dask trains each worker on whole partitions and ranks each worker's rows as separate lists, so the "
        f"query's gradient would be wrong. {_FIX}"
    )


def group_sizes(qid: Any) -> da.Array:
    """Return the query sizes of each partition (a Dask array, one chunk per partition) for LightGBM.

    ``lightgbm.dask.DaskLGBMRanker.fit(X, y, group=stochrank.dask.group_sizes(qid))``. The partitions
    are checked first (:func:`check_query_partitions`).

    Parameters
    ----------
    qid : dask array or dask Series
        One query id per row, partitioned like ``X``.

    Returns
    -------
    dask array of int64
        Documents per query in row order; chunk i belongs to partition i.

    Raises
    ------
    ValueError
        When a query is split (see :func:`check_query_partitions`).
    """
    check_query_partitions(qid)

    def sizes(q: Any) -> npt.NDArray[np.int64]:
        q = np.asarray(q).reshape(-1)
        return np.diff(np.flatnonzero(np.r_[True, q[1:] != q[:-1], True])).astype(np.int64)

    per_part = dask.compute(*[dask.delayed(sizes)(p) for p in _partitions(qid)])
    return da.concatenate([da.from_array(s, chunks=s.size) for s in per_part])


def _cuts(sizes: npt.NDArray[np.int64], npartitions: int) -> npt.NDArray[np.int64]:
    """Query indices where partitions start: query boundaries nearest to equal row counts."""
    offsets = np.r_[0, np.cumsum(sizes)]
    targets = np.arange(1, npartitions) * offsets[-1] / npartitions
    nearest = np.clip(np.searchsorted(offsets, targets), 1, sizes.size - 1)
    lower = nearest - 1
    nearest = np.where(targets - offsets[lower] < offsets[nearest] - targets, lower, nearest)
    return np.unique(np.r_[0, nearest[(nearest > 0) & (nearest < sizes.size)], sizes.size])


def partition_by_query(
    X: Any, y: Any, qid: Any, *, weight: Any = None, npartitions: int | None = None
) -> QueryPartitions:
    """Repartition ranking data so that every query is whole, and contiguous, in one partition.

    Rows are sorted by query id (stably: a query keeps its documents' order, which its noise streams
    follow) unless already sorted, as XGBoost needs; partitions are cut at the query boundaries nearest
    to equal row counts. The query ids are computed on the client (8 bytes per row); features stay
    distributed.

    Parameters
    ----------
    X : dask array (2-D) or dask DataFrame
        A DataFrame's columns must be numeric (rows travel as one array; the index is renumbered).
    y, qid : dask arrays or dask Series, partitioned like ``X``
        Labels and one query id per row.
    weight : dask array or Series, optional
        Per-row weights (constant within a query).
    npartitions : int, optional
        Number of partitions wanted (default: as many as ``X`` has, at most one per query).

    Returns
    -------
    QueryPartitions
        ``(X, y, qid, group, weight)``: the same kinds of collections, plus ``group`` for LightGBM.

    Raises
    ------
    ValueError
        When ``npartitions`` is not a positive integer.

    Examples
    --------
    >>> X, y, qid, group, _ = stochrank.dask.partition_by_query(X, y, qid)  # doctest: +SKIP
    >>> lightgbm.dask.DaskLGBMRanker(objective=stochrank.ndcg(k=5)).fit(X, y, group=group)  # doctest: +SKIP
    """
    n_parts = n_partitions(X)
    if npartitions is not None:
        if isinstance(npartitions, bool) or not isinstance(npartitions, (int, np.integer)) or npartitions < 1:
            raise ValueError(f"npartitions must be a positive integer; got npartitions={npartitions!r}.")
        n_parts = int(npartitions)
    arrange, group = query_arrangement(qid, n_parts)
    return QueryPartitions(arrange(X), arrange(y), arrange(qid), group, arrange(weight))


def query_arrangement(qid: Any, npartitions: int) -> tuple[Callable[[Any], Any], da.Array]:
    """Return how to move rows so every query is whole in one partition, and the partitions' query sizes.

    The first element arranges any collection aligned with ``qid`` (None passes through); the second is
    :func:`partition_by_query`'s ``group``. Deterministic: the same ``qid`` gives the same partitions,
    rows in the same order.
    """
    q = np.asarray(qid.compute()).reshape(-1)
    order: npt.NDArray[np.intp] | None = None
    if q.size > 1 and not (q[1:] >= q[:-1]).all():  # XGBoost needs sorted query ids on each worker
        order = np.argsort(q, kind="stable")
        q = q[order]
    starts = np.r_[True, q[1:] != q[:-1]]
    sizes = np.diff(np.r_[np.flatnonzero(starts), q.size]).astype(np.int64)
    cuts = _cuts(sizes, min(npartitions, sizes.size))
    offsets = np.r_[0, np.cumsum(sizes)]
    row_chunks = tuple(int(c) for c in np.diff(offsets[cuts]))
    group = da.from_array(sizes, chunks=(tuple(int(c) for c in np.diff(cuts)),))

    def arrange(c: Any) -> Any:
        if c is None:
            return None
        if isinstance(c, (dd.DataFrame, dd.Series)):
            return _arrange_frame(c, order, row_chunks)
        arr = c if order is None else c[order]
        return arr.rechunk({0: row_chunks})

    return arrange, group


def _arrange_frame(frame: Any, order: npt.NDArray[np.intp] | None, row_chunks: tuple[int, ...]) -> Any:
    """Reorder a Dask DataFrame / Series by ``order`` and cut it into partitions of ``row_chunks`` rows."""
    is_series = isinstance(frame, dd.Series)
    lengths = tuple(int(n) for n in frame.map_partitions(len).compute())
    arr = frame.to_dask_array(lengths=lengths)
    if order is not None:
        arr = arr[order]
    arr = arr.rechunk({0: row_chunks} if arr.ndim == 1 else {0: row_chunks, 1: -1})
    out = dd.from_dask_array(arr, columns=frame.name if is_series else list(frame.columns))
    return out.astype(frame.dtype) if is_series else out.astype(frame.dtypes.to_dict())
