"""Multimodal one-hot instances with a known global optimum (see :mod:`stochrank.datasets.synthetic`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ._split import RankingSplit

__all__ = [
    "CYCLIC",
    "MULTIMODAL",
    "PAPER",
    "Query",
    "global_optimum",
    "one_hot_instance",
    "optimal_orders",
    "weak_orderings",
]

# One query: (one-hot document ids, their labels).
Query = tuple[tuple[int, ...], tuple[int, ...]]
PAPER: list[Query] = [((0, 1, 2), (3, 2, 1)), ((2, 0), (3, 2))]  # x1, x2, x3 = ids 0, 1, 2
_A, _B, _C = 0, 1, 2
CYCLIC: list[Query] = [((_A, _B), (3, 2)), ((_A, _C), (0, 1)), ((_C, _B), (2, 3))]
MULTIMODAL: dict[str, list[Query]] = {"paper": PAPER, "cyclic": CYCLIC}


def one_hot_instance(queries: Sequence[Query]) -> RankingSplit:
    """Return the instance as data: row i is the one-hot vector of its document id; qid is the query index."""
    n_ids = 1 + max(max(ids) for ids, _ in queries)
    X = np.eye(n_ids)[np.concatenate([np.asarray(ids, dtype=np.int64) for ids, _ in queries])]
    y = np.concatenate([np.asarray(labels, dtype=np.float64) for _, labels in queries])
    group = np.array([len(ids) for ids, _ in queries], dtype=np.int64)
    return RankingSplit(X, y, np.repeat(np.arange(group.size, dtype=np.int64), group), group)


def weak_orderings(n: int) -> Iterator[tuple[int, ...]]:
    """Every ordered partition of n items, as a level per item (level 0 ranks first)."""
    for levels in itertools.product(range(n), repeat=n):
        if set(levels) == set(range(max(levels) + 1)):
            yield levels


def _order_value(
    X: np.ndarray, y: np.ndarray, group: np.ndarray, k: int
) -> tuple[Callable[[Sequence[int]], float], int]:
    from ..metrics import ndcg

    # Distinct rows numbered by first appearance (for a one-hot instance: by document id).
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first)] = np.arange(first.size)
    row_vector = number[inverse.reshape(-1)]

    def value(levels: Sequence[int]) -> float:
        scores = -np.asarray(levels, dtype=np.float64)[row_vector]
        return float(ndcg(y, scores, group, k=k, ties="worst"))

    return value, first.size


def global_optimum(X: np.ndarray, y: np.ndarray, group: np.ndarray, k: int = 3) -> tuple[float, float]:
    """Return the best mean train NDCG@k over weak and over strict orderings.

    The pair is (max over weak orderings, max over strict orderings) of the mean train NDCG@k with
    worst-case ties, when each distinct row of ``X`` gets one score (exact for one-hot instances; a brute
    force over ``n!``-ish orderings, so keep the number of distinct rows small).
    """
    value, n = _order_value(X, y, group, k)
    weak = max(value(levels) for levels in weak_orderings(n))
    strict = max(value(perm) for perm in itertools.permutations(range(n)))
    return weak, strict


def optimal_orders(X: np.ndarray, y: np.ndarray, group: np.ndarray, k: int = 3, tol: float = 1e-12
                   ) -> list[tuple[int, ...]]:  # fmt: skip
    """Return every strict ordering that reaches the optimum of :func:`global_optimum`.

    An ordering is the rank (0 = shown first) of each distinct row of ``X`` in order of first appearance
    (for the one-hot instances: of each document id). ``PAPER`` gives ``[(0, 1, 2)]``: x1 > x2 > x3.
    """
    value, n = _order_value(X, y, group, k)
    values = {perm: value(perm) for perm in itertools.permutations(range(n))}
    best = max(values.values())
    return [perm for perm, v in values.items() if v >= best - tol]
