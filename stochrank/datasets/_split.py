"""The in-memory form of one ranking split, and held-out query splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_real
from ..conventions import offsets_from_sizes

__all__ = ["RankingSplit", "split_queries"]


@dataclass(frozen=True, eq=False)
class RankingSplit:
    """One split of a ranking dataset: dense features, labels and query structure, rows in file order.

    Attributes
    ----------
    X : ndarray of shape (n_documents, n_features)
        Dense features: float64, or float32 for the large web datasets (see ``DATASETS[name].dtype``).
    y : ndarray of float64, shape (n_documents,)
        Relevance labels.
    qid : ndarray, shape (n_documents,)
        Query ids as written in the file (or the query index when the file has none): int64 from the
        loaders; any ids compared with ``==`` (str, bytes, float) are accepted and kept as given.
    group : ndarray of int64, shape (n_queries,)
        Documents per query: the lengths of the contiguous runs of equal ``qid``, in row order. A qid
        that reappears after another query starts a new query (LETOR files are contiguous blocks).

    Raises
    ------
    ValueError
        On construction, naming the field, if ``X`` is not 2-D, ``y`` or ``qid`` is not 1-D with one entry per
        row of ``X``, ``group`` does not hold positive sizes adding up to the rows, or a query's rows have
        different ``qid``.
    """

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    group: np.ndarray

    def __post_init__(self) -> None:
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ValueError(f"RankingSplit: 'X' must be 2-D (documents x features); got shape {X.shape}.")
        n_rows = X.shape[0]
        arrays = {"y": np.asarray(self.y, dtype=np.float64), "qid": np.asarray(self.qid)}
        for name, values in arrays.items():
            if values.shape != (n_rows,):
                raise ValueError(
                    f"RankingSplit: '{name}' must be 1-D with one entry per row of 'X' ({n_rows}); got shape "
                    f"{values.shape}. Take X, y, qid from the same rows."
                )
        offsets = offsets_from_sizes(self.group, n_rows)
        qid = arrays["qid"]
        # Each row against its query's first row: equality only, so any ids work (int, float, str, bytes).
        differs = np.flatnonzero(qid != np.repeat(qid[offsets[:-1]], np.diff(offsets)))
        if differs.size:
            first = int(np.searchsorted(offsets, differs[0], side="right")) - 1
            raise ValueError(
                f"RankingSplit: query {first} of 'group' "
                f"(rows {offsets[first]}..{offsets[first + 1] - 1}) has rows with different 'qid'; "
                "'group' must be the lengths of the runs of equal qid."
            )
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", arrays["y"])
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "group", np.asarray(self.group, dtype=np.int64))

    @property
    def n_queries(self) -> int:
        """Number of queries (contiguous qid runs)."""
        return int(self.group.size)

    @property
    def query_index(self) -> np.ndarray:
        """Per-row query number 0, 1, ..., n_queries - 1, sorted and contiguous.

        It is safe wherever a library wants a sorted ``qid`` (XGBoost), even when the file's qids are not
        (MQ2008 Fold4/5).
        """
        return np.repeat(np.arange(self.group.size, dtype=np.int64), self.group)


def split_queries(split: RankingSplit, fraction: float, seed: int = 0) -> tuple[RankingSplit, RankingSplit]:
    """Hold out a random ``fraction`` of the queries (whole queries, file order kept in both parts).

    For datasets published without a validation split (Istella): ``train, vali = split_queries(train,
    0.2)``. Returns ``(rest, held_out)``; the draw depends only on ``seed`` and the number of queries.
    """
    check_real(fraction, "fraction", "split_queries", low=0.0, high=1.0, low_open=True, high_open=True)
    check_int(seed, "seed", "split_queries", low=0)
    n_held = round(fraction * split.n_queries)
    if not 0 < n_held < split.n_queries:
        raise ValueError(
            f"split_queries: a fraction of {fraction} of {split.n_queries} queries holds out {n_held}; "
            "both parts need at least one query. Use a fraction between 1/n_queries and 1 - 1/n_queries."
        )
    held = np.zeros(split.n_queries, dtype=bool)
    held[np.random.default_rng(seed).choice(split.n_queries, size=n_held, replace=False)] = True
    return _take_queries(split, ~held), _take_queries(split, held)


def _take_queries(split: RankingSplit, keep: np.ndarray) -> RankingSplit:
    rows = np.repeat(keep, split.group)
    return RankingSplit(split.X[rows], split.y[rows], split.qid[rows], split.group[keep])
