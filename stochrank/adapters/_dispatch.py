"""Turn the arguments a booster passes to a Python objective or metric into one internal form.

The same callable object is handed to ``lgb.train`` (``f(preds, Dataset)``), ``lightgbm.LGBMRanker``
(``f(y_true, y_pred, weight, group)``), ``xgb.train`` (``f(preds, DMatrix)``) and stochrank's own
boosting loops (``f(preds, RankingTarget)``, e.g. on CatBoost trees). Dispatch is on the type of the second argument, never on argument counts, so it keeps
working however LightGBM counts parameters (it counts ``(a, b, weight=None, group=None)`` as four and
then passes ``group``; see LightGBM issue #7018 for the ``*args`` trap).

Labels and query boundaries are read once per dataset and cached, keyed weakly by the Dataset /
DMatrix (or, for LGBMRanker, by the label array LightGBM passes on every call). Objectives that need the
training features (a variance model evaluated on them) get them on request from the call's ``source``
with :func:`training_features`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_scores, offsets_from_sizes, query_weights

__all__ = ["BoosterCall", "DatasetCache", "DatasetInfo", "RankingTarget", "training_features"]

# Parameter names (and aliases) under which each booster stores its learning rate.
_LGB_LR_KEYS = ("learning_rate", "shrinkage_rate", "eta")


@dataclass
class DatasetInfo:
    """What stays fixed for one training set: labels, query boundaries, query weights."""

    labels: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None
    library: str
    learning_rate: float | None = None
    state: dict[str, Any] = field(default_factory=dict)  # owned by the caller (objective / metric)


class RankingTarget:
    """A training set as stochrank's own boosting loops hand it to an objective: ``obj(preds, target)``.

    Validated once here; keep one instance per training run (the objective's per-dataset state, such as
    its call counter and SGLB shrinkage, is keyed by it).
    """

    def __init__(
        self, labels: Any, group: Any, weight: Any = None, *, learning_rate: float | None = None
    ) -> None:
        self.labels = np.asarray(labels, dtype=np.float64).reshape(-1)
        self.offsets = offsets_from_sizes(group, self.labels.size, "group")
        self.weights = query_weights(weight, self.offsets, "weight")
        self.learning_rate = learning_rate

    def info(self) -> DatasetInfo:
        return DatasetInfo(self.labels, self.offsets, self.weights, "stochrank", self.learning_rate)


@dataclass
class BoosterCall:
    """One call from a booster: current raw scores plus the cached dataset facts.

    ``source`` is the training set object the booster passed (Dataset, DMatrix, RankingTarget), or None
    for ``(y_true, y_pred, weight, group)`` calls; it is not cached.
    """

    preds: np.ndarray
    info: DatasetInfo
    source: Any = None


def _is_xgb_dmatrix(obj: Any) -> bool:
    return hasattr(obj, "get_uint_info") and hasattr(obj, "get_base_margin")


def _is_lgb_dataset(obj: Any) -> bool:
    return hasattr(obj, "get_group") and hasattr(obj, "construct")


def _lgb_info(ds: Any) -> DatasetInfo:
    labels = np.asarray(ds.get_label(), dtype=np.float64)
    group = ds.get_group()
    if group is None:
        raise ValueError(
            "The LightGBM Dataset has no query groups. Build it with lgb.Dataset(X, y, group=sizes) "
            "(documents per query, in row order)."
        )
    offsets = offsets_from_sizes(group, labels.size, "Dataset group")
    weights = query_weights(ds.get_weight(), offsets, "Dataset weight")
    lr = None
    params = getattr(ds, "params", None) or {}
    for key in _LGB_LR_KEYS:
        if key in params:
            lr = float(params[key])
            break
    return DatasetInfo(labels, offsets, weights, "lightgbm", lr)


def _xgb_info(dm: Any) -> DatasetInfo:
    labels = np.asarray(dm.get_label(), dtype=np.float64)
    ptr = np.asarray(dm.get_uint_info("group_ptr"), dtype=np.int64)
    if ptr.size < 2:
        raise ValueError(
            "The XGBoost DMatrix has no query groups. Build it with xgb.DMatrix(X, y, qid=qid) (qid sorted) "
            "or DMatrix(X, y, group=sizes)."
        )
    if ptr[-1] != labels.size:
        raise ValueError(f"DMatrix group_ptr ends at {ptr[-1]} but the DMatrix has {labels.size} rows.")
    w = dm.get_weight()
    weights = query_weights(w if np.asarray(w).size else None, ptr, "DMatrix weight")
    return DatasetInfo(labels, ptr, weights, "xgboost", None)


def _sklearn_info(y_true: Any, weight: Any, group: Any) -> DatasetInfo:
    labels = np.asarray(y_true, dtype=np.float64).reshape(-1)
    if group is None:
        raise ValueError(
            "This objective was called as f(y_true, y_pred) without query groups. That happens with "
            "xgboost's sklearn wrappers (use stochrank.xgboost.XGBRanker or xgb.train) or with a callable "
            "LightGBM does not pass 'group' to. Use lightgbm.LGBMRanker(objective=...) with "
            "fit(X, y, group=sizes), or lgb.train / xgb.train with a grouped Dataset / DMatrix."
        )
    offsets = offsets_from_sizes(group, labels.size, "group")
    return DatasetInfo(labels, offsets, query_weights(weight, offsets, "weight"), "lightgbm-sklearn", None)


class DatasetCache:
    """Per-dataset facts, keyed weakly so a cache never keeps a Dataset/DMatrix alive."""

    def __init__(self) -> None:
        self._by_key: weakref.WeakKeyDictionary[Any, DatasetInfo] = weakref.WeakKeyDictionary()
        # NumPy arrays are weak-referenceable but not hashable: key them by id, check identity on lookup.
        self._by_array: dict[int, tuple[weakref.ref[np.ndarray], DatasetInfo]] = {}

    def __len__(self) -> int:
        return len(self._by_key) + sum(ref() is not None for ref, _ in self._by_array.values())

    def _get(self, key: Any) -> DatasetInfo | None:
        if not isinstance(key, np.ndarray):
            return self._by_key.get(key)
        entry = self._by_array.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else None

    def _put(self, key: Any, info: DatasetInfo) -> None:
        if not isinstance(key, np.ndarray):
            self._by_key[key] = info
            return
        self._by_array = {i: e for i, e in self._by_array.items() if e[0]() is not None}
        self._by_array[id(key)] = (weakref.ref(key), info)

    def unpack(self, a: Any, b: Any, weight: Any = None, group: Any = None) -> BoosterCall:
        """Normalise ``(preds, Dataset)``, ``(preds, DMatrix)`` or ``(y_true, y_pred, weight, group)``."""
        if isinstance(b, RankingTarget):
            key, make, raw = b, b.info, a
        elif _is_xgb_dmatrix(b):
            key, make, raw = b, (lambda: _xgb_info(b)), a
        elif _is_lgb_dataset(b):
            key, make, raw = b, (lambda: _lgb_info(b)), a
        else:
            # LGBMRanker passes the Dataset's own label array on every call: use it as the key.
            key = a if isinstance(a, np.ndarray) else None
            make, raw = (lambda: _sklearn_info(a, weight, group)), b
            b = None  # LGBMRanker passes no training set, hence no features
        info = self._get(key) if key is not None else None
        if info is None:
            info = make()
            if key is not None:
                self._put(key, info)
        n = info.labels.size
        preds = np.asarray(raw)
        if preds.ndim == 2 and preds.shape[1] == 1:
            preds = preds[:, 0]
        if preds.ndim != 1:
            raise ValueError(
                f"stochrank objectives produce one score per document; got predictions of shape "
                f"{preds.shape}. Do not set num_class / num_target / multi_strategy with a ranking objective."
            )
        preds = check_scores(preds.astype(np.float64, copy=False), n, "predictions")
        return BoosterCall(preds, info, b)


def _dense(data: Any) -> np.ndarray:
    """A 2-D float64 array from numpy / scipy.sparse / pandas-like data; sparse gaps become 0.0."""
    if hasattr(data, "tocsr"):  # scipy.sparse
        csr = data.tocsr()
        out = np.zeros(csr.shape, dtype=np.float64)
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        out[rows, csr.indices] = csr.data
        return out
    if hasattr(data, "to_numpy"):  # pandas / polars / pyarrow-like frames
        data = data.to_numpy()
    return np.asarray(data, dtype=np.float64)


def training_features(source: Any) -> tuple[np.ndarray | None, str]:
    """The feature matrix of a training set as a 2-D float64 array, or ``(None, why it is unavailable)``.

    * LightGBM ``Dataset``: its raw data, kept only with ``free_raw_data=False`` (subsets made by
      ``lgb.cv`` are sliced from the reference's raw data);
    * XGBoost ``DMatrix``: ``DMatrix.get_data()`` (values as float32), a CSR matrix without the entries
      XGBoost treats as missing: a scipy.sparse input's absent entries and a dense input's ``missing``
      values (NaN by default) alike. They come back as 0.0, scipy.sparse's meaning of an absent entry and
      what LightGBM's path gives, so a DMatrix built from a sparse matrix works; the price is that NaN in
      a *dense* DMatrix also reaches the variance model as 0.0 (XGBoost keeps no record of which it was).
      A ``QuantileDMatrix`` holds only bin indices, so it has no features to give;
    * ``RankingTarget`` and ``(y_true, y_pred, weight, group)`` calls carry no features.
    """
    if source is None:
        return None, "LightGBM's scikit-learn API (LGBMRanker) passes no features to objectives"
    if isinstance(source, RankingTarget):
        return None, "a RankingTarget holds labels and query groups only"
    if _is_xgb_dmatrix(source):
        if any(c.__name__.endswith("QuantileDMatrix") for c in type(source).__mro__):
            return None, f"an XGBoost {type(source).__name__} stores quantised features only"
        return _dense(source.get_data()), ""
    if _is_lgb_dataset(source):
        from lightgbm.basic import LightGBMError  # a LightGBM Dataset: lightgbm is installed

        try:
            data = source.get_data()
        except LightGBMError:  # raw data freed (free_raw_data=True, LightGBM's default)
            return None, "the LightGBM Dataset freed its raw data (build it with free_raw_data=False)"
        if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
            return None, f"the LightGBM Dataset was built from a file ({data!s})"
        return _dense(data), ""
    return None, f"{type(source).__name__} carries no features"
