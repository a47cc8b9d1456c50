"""stochrank's own boosting loops (e.g. on CatBoost trees) call objectives: ``obj(preds, RankingTarget)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conventions import offsets_from_sizes, query_weights
from .info import DatasetInfo

__all__ = ["RankingTarget"]


class RankingTarget:
    """A training set as stochrank's own boosting loops hand it to an objective: ``obj(preds, target)``.

    Validated once here; keep one instance per training run (the objective's per-dataset state, such as
    its call counter and SGLB shrinkage, is keyed by it).

    Parameters
    ----------
    labels : array-like (n,)
    group : array-like (n_queries,)
        Documents per query, in row order.
    weight : array-like or None
        One weight per row (constant within a query) or per query.
    learning_rate : float or None
        The booster's learning rate (SGLB needs it).
    """

    def __init__(
        self, labels: Any, group: Any, weight: Any = None, *, learning_rate: float | None = None
    ) -> None:
        self.labels = np.asarray(labels, dtype=np.float64).reshape(-1)
        self.offsets = offsets_from_sizes(group, self.labels.size, "group")
        self.weights = query_weights(weight, self.offsets, "weight")
        self.learning_rate = learning_rate

    def info(self) -> DatasetInfo:
        """Return the facts an objective reads (no copy)."""
        return DatasetInfo(self.labels, self.offsets, self.weights, "stochrank", self.learning_rate)
