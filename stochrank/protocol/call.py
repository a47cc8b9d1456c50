"""One booster call in internal form, and the per-dataset cache that serves it.

Labels and query boundaries are read once per dataset and cached, keyed weakly by the Dataset /
DMatrix / :class:`~.target.RankingTarget` (or, for ``LGBMRanker``, by the label array LightGBM passes on
every call). Next to those facts each cache entry holds one value of the caller's own per-dataset state
(an objective's training run); metrics keep none.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .._parallel import run_parallel
from .._validation import check_length, check_scores
from ..conventions import warn_if_nothing_to_rank
from ..kernels import count_nonfinite, float64_count_nonfinite
from . import lightgbm, xgboost
from .info import DatasetInfo
from .target import RankingTarget

__all__ = [
    "BoosterCall",
    "CacheEntry",
    "DatasetCache",
    "DatasetInfo",
    "sum_over_workers",
    "training_features",
]

S = TypeVar("S")


@dataclass
class CacheEntry(Generic[S]):
    """The cached facts of one dataset and the caller's state for it (``None`` until set)."""

    info: DatasetInfo
    state: S | None = None


@dataclass(frozen=True)
class BoosterCall(Generic[S]):
    """One call from a booster: current raw scores (float64) plus the dataset's cache entry.

    ``source`` is the training set object the booster passed (Dataset, DMatrix, RankingTarget), or None
    for ``(y_true, y_pred, weight, group)`` calls; it is not cached.
    """

    preds: npt.NDArray[np.float64]
    entry: CacheEntry[S]
    source: Any = None

    @property
    def info(self) -> DatasetInfo:
        """The dataset's labels, query boundaries and weights."""
        return self.entry.info


class DatasetCache(Generic[S]):
    """Per-dataset facts and state, keyed weakly so a cache never keeps a Dataset/DMatrix alive.

    Safe to share between threads (boosters release the GIL while building trees, so two fits with one
    objective can call it at the same time): lookups and insertions hold a lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: weakref.WeakKeyDictionary[Any, CacheEntry[S]] = weakref.WeakKeyDictionary()
        # NumPy arrays are weak-referenceable but not hashable: key them by id, check identity on lookup.
        self._by_array: dict[int, tuple[weakref.ref[np.ndarray], CacheEntry[S]]] = {}

    def __len__(self) -> int:
        """Count the datasets still alive that have an entry."""
        return len(self._by_key) + sum(ref() is not None for ref, _ in self._by_array.values())

    def _get(self, key: Any) -> CacheEntry[S] | None:
        if not isinstance(key, np.ndarray):
            return self._by_key.get(key)
        entry = self._by_array.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else None

    def _put(self, key: Any, entry: CacheEntry[S]) -> None:
        if not isinstance(key, np.ndarray):
            self._by_key[key] = entry
            return
        self._by_array = {i: e for i, e in self._by_array.items() if e[0]() is not None}
        self._by_array[id(key)] = (weakref.ref(key), entry)

    def unpack(self, a: Any, b: Any, weight: Any = None, group: Any = None) -> BoosterCall[S]:
        """Normalise ``(preds, Dataset | DMatrix | RankingTarget)`` or ``(y_true, y_pred, weight, group)``."""
        key: object  # what the cache is keyed by: the training set, or LGBMRanker's label array
        if isinstance(b, RankingTarget):
            key, make, raw = b, b.info, a
        elif xgboost.is_dmatrix(b):
            key, make, raw = b, (lambda: xgboost.dmatrix_info(b)), a
        elif lightgbm.is_dataset(b):
            key, make, raw = b, (lambda: lightgbm.dataset_info(b)), a
        else:
            # LGBMRanker passes the Dataset's own label array on every call: use it as the key.
            key = a if isinstance(a, np.ndarray) else None
            make, raw = (lambda: lightgbm.sklearn_info(a, weight, group)), b
            b = None  # LGBMRanker passes no training set, hence no features
        entry = None
        if key is not None:
            with self._lock:
                entry = self._get(key)
        if entry is None:
            fresh: CacheEntry[S] = CacheEntry(make())  # outside the lock: reading a dataset can take a while
            if key is None:
                entry = fresh
            else:
                with self._lock:
                    entry = self._get(key)
                    if entry is None:
                        self._put(key, fresh)
                        entry = fresh
            if entry is fresh:
                warn_if_nothing_to_rank(fresh.info.offsets, f"data set {fresh.info.library} passed")
        n = entry.info.labels.size
        preds = np.asarray(raw)
        if preds.ndim == 2 and preds.shape[1] == 1:
            preds = preds[:, 0]
        if preds.ndim != 1:
            raise ValueError(
                f"stochrank objectives produce one score per document; got predictions of shape "
                f"{preds.shape}. Do not set num_class / num_target / multi_strategy with a ranking objective."
            )
        return BoosterCall(_finite_float64(preds, n), entry, b)


def _finite_float64(preds: np.ndarray, n: int) -> npt.NDArray[np.float64]:
    """Return a booster's 1-D scores as float64, checked finite: :func:`check_scores` in one pass.

    XGBoost's float32 scores are converted and checked together, LightGBM's float64 ones checked in place,
    each by one kernel that runs in parallel on large inputs (:mod:`stochrank.kernels._finite`); other
    dtypes take NumPy's path. A NaN or inf raises :func:`check_scores`'s error.
    """
    check_length(preds, "predictions", n)
    if preds.dtype == np.float64:
        scores = np.ascontiguousarray(preds)
        bad = run_parallel(count_nonfinite, n, scores)
    elif preds.dtype == np.float32:
        scores = np.empty(n)
        bad = run_parallel(float64_count_nonfinite, n, np.ascontiguousarray(preds), scores)
    else:
        return check_scores(preds, n, "predictions")
    return check_scores(scores, n, "predictions") if bad else scores


def training_features(source: Any) -> tuple[npt.NDArray[np.float64] | None, str]:
    """Return the feature matrix of a training set as 2-D float64, or ``(None, why it is unavailable)``.

    LightGBM ``Dataset`` (with ``free_raw_data=False``) and XGBoost ``DMatrix`` give theirs (see
    :func:`.lightgbm.dataset_features`, :func:`.xgboost.dmatrix_features`); ``RankingTarget`` and
    ``(y_true, y_pred, weight, group)`` calls carry no features.
    """
    if source is None:
        return None, "LightGBM's scikit-learn API (LGBMRanker) passes no features to objectives"
    if isinstance(source, RankingTarget):
        return None, "a RankingTarget holds labels and query groups only"
    if xgboost.is_dmatrix(source):
        return xgboost.dmatrix_features(source)
    if lightgbm.is_dataset(source):
        return lightgbm.dataset_features(source)
    return None, f"{type(source).__name__} carries no features"


def sum_over_workers(info: DatasetInfo, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Add per-dataset totals up over the workers that each hold part of one distributed training set.

    XGBoost's distributed trainings (``xgb.dask.train``, ``stochrank.xgboost.DaskXGBRanker``) all-reduce
    through ``xgboost.collective``; everything else is one process holding the whole set. LightGBM gives a
    Python objective no collective: on ``lightgbm.dask`` each worker's totals stay its own (see
    :mod:`stochrank.dask`).
    """
    return xgboost.collective_sum(values) if info.library == "xgboost" else values
