"""What stays fixed for one training set, whichever booster passed it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from .._parallel import run_parallel
from ..kernels import query_keys

__all__ = ["DatasetInfo"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # spreads the copies' keys over the 64-bit range


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

    def __post_init__(self) -> None:
        """Make the labels contiguous, writeable float64 whoever passed them (a DataFrame column, a slice).

        A read-only or non-contiguous array is another Numba type: every kernel taking labels would be
        compiled once more (a copy is made only then).
        """
        object.__setattr__(self, "labels", np.require(self.labels, np.float64, ["C", "W"]))

    @cached_property
    def query_keys(self) -> npt.NDArray[np.uint64]:
        """A 64-bit identity per query from its content (:func:`~stochrank.kernels.query_keys`).

        The objectives' noise streams are keyed by it, so a query's noise does not depend on where in the
        data it is (row order, Dask partitions). Queries with identical labels are told apart by their
        order of appearance (the j-th copy's key is offset by j), so each draws its own noise; a query
        whose copies are split between Dask partitions is the one case where its noise depends on the
        partitioning.
        """
        keys = run_parallel(query_keys, self.labels.size, self.labels, self.offsets)
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if first.size == keys.size:
            return keys
        # occurrence = how many earlier queries share this key: stable rank within each group of equals
        order = np.argsort(inverse, kind="stable")
        starts = np.searchsorted(inverse[order], np.arange(first.size))
        occurrence = np.empty(keys.size, dtype=np.uint64)
        occurrence[order] = np.arange(keys.size) - np.repeat(starts, np.diff(np.r_[starts, keys.size]))
        distinct: npt.NDArray[np.uint64] = keys + occurrence * _GOLDEN
        return distinct
