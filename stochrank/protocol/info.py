"""What stays fixed for one training set, whichever booster passed it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["DatasetInfo"]


@dataclass(frozen=True)
class DatasetInfo:
    """Labels, query boundaries and query weights of one training (or evaluation) set.

    Attributes
    ----------
    labels : float64 array (n,)
    offsets : int64 array (n_queries + 1,)
        Query boundaries ``[0, end of query 0, ..., n]``.
    weights : float64 array (n_queries,) or None
        One weight per query (None: all 1).
    library : str
        Who called: 'lightgbm', 'lightgbm-sklearn', 'xgboost' or 'stochrank'.
    learning_rate : float or None
        The booster's learning rate when the caller exposes it (``lgb.train``'s Dataset parameters,
        :class:`~stochrank.protocol.RankingTarget`), else None.
    """

    labels: npt.NDArray[np.float64]
    offsets: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64] | None
    library: str
    learning_rate: float | None = None
