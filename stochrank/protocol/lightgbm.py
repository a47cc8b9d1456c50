"""LightGBM's two call forms of an objective.

``lgb.train``/``lgb.cv`` pass ``(preds, Dataset)``; ``LGBMRanker`` passes ``(y_true, y_pred, weight,
group)`` (the 4-argument form, chosen by LightGBM from the parameter count).

``lgb.cv`` keeps queries whole only for LightGBM's own ranking objectives, named by string; with an
objective object it splits rows (stratified by label, or by position with ``stratified=False``), so its
folds hold pieces of queries, unless it is given
``folds=sklearn.model_selection.GroupKFold(n_splits=...)``, which it splits by the Dataset's queries.
:func:`dataset_info` warns when a subset's queries are pieces of its parent's.

A ``Dataset`` carries per-row labels and weights, query sizes (``get_group()``) and its parameters (the
learning rate); ``LGBMRanker`` passes the Dataset's own label array on every call, which serves as the
cache key. Recognised by duck typing: no LightGBM import.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from ..conventions import offsets_from_sizes, query_weights
from .dense import dense_features
from .info import DatasetInfo

__all__ = ["dataset_features", "dataset_info", "is_dataset", "sklearn_info"]

# Parameter names (and aliases) under which LightGBM stores its learning rate.
_LEARNING_RATE_KEYS = ("learning_rate", "shrinkage_rate", "eta")


def is_dataset(obj: Any) -> bool:
    """Tell whether ``obj`` is a ``lightgbm.Dataset``."""
    return hasattr(obj, "get_group") and hasattr(obj, "construct")


def dataset_info(ds: Any) -> DatasetInfo:
    """Labels, query boundaries, query weights and learning rate of a ``lightgbm.Dataset``."""
    labels = np.asarray(ds.get_label(), dtype=np.float64)
    group = ds.get_group()
    if group is None:
        raise ValueError(
            "The LightGBM Dataset has no query groups. Build it with lgb.Dataset(X, y, group=sizes) "
            "(documents per query, in row order)."
        )
    offsets = offsets_from_sizes(group, labels.size, "Dataset group")
    _warn_if_queries_cut(ds)
    weights = query_weights(ds.get_weight(), offsets, "Dataset weight")
    lr = None
    params = getattr(ds, "params", None) or {}
    for key in _LEARNING_RATE_KEYS:
        if key in params:
            lr = float(params[key])
            break
    return DatasetInfo(labels, offsets, weights, "lightgbm", lr)


def _warn_if_queries_cut(ds: Any) -> None:
    """Warn when ``ds`` is a subset (``Dataset.subset``, as ``lgb.cv`` makes) holding pieces of queries.

    A subset's queries are its parent's, each cut down to the rows it keeps; a query of which it keeps some
    rows but not all is a piece. Validation sets (``reference=`` without ``used_indices``) are not subsets.
    """
    used, parent = getattr(ds, "used_indices", None), getattr(ds, "reference", None)
    if used is None or parent is None or len(used) == 0 or parent.get_group() is None:
        return
    parent_sizes = np.asarray(parent.get_group(), dtype=np.int64)
    rows = np.asarray(used, dtype=np.int64)
    if rows.min() < 0 or rows.max() >= parent_sizes.sum():
        return  # not LightGBM's subset of this parent: nothing to compare
    query_of_row = np.repeat(np.arange(parent_sizes.size), parent_sizes)
    kept = np.bincount(query_of_row[rows], minlength=parent_sizes.size)
    if np.any((kept > 0) & (kept < parent_sizes)):
        warnings.warn(
            "This LightGBM Dataset is a subset of another (Dataset.subset, as lgb.cv makes its folds) that "
            "holds only some rows of some of its parent's queries, so those queries are ranked in pieces. "
            "If it is an lgb.cv fold: lgb.cv keeps queries whole only when the objective is one of "
            "LightGBM's ranking objectives named by string; otherwise (an objective object included) pass "
            "folds=sklearn.model_selection.GroupKFold(n_splits=...), which lgb.cv splits by the Dataset's "
            "queries. A subset that samples documents within queries on purpose can ignore this warning.",
            UserWarning,
            stacklevel=6,  # the caller of the objective or metric (LightGBM's Booster)
        )


def sklearn_info(y_true: Any, weight: Any, group: Any) -> DatasetInfo:
    """Return the facts of ``LGBMRanker``'s ``(y_true, y_pred, weight, group)`` call."""
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


def dataset_features(ds: Any) -> tuple[npt.NDArray[np.float64] | None, str]:
    """Return a Dataset's raw features as float64, or ``(None, why)``.

    LightGBM keeps them only with ``free_raw_data=False``.

    Subsets made by ``lgb.cv`` are sliced from the reference's raw data.
    """
    from lightgbm.basic import LightGBMError  # a LightGBM Dataset: lightgbm is installed

    try:
        data = ds.get_data()
    except LightGBMError:  # raw data freed (free_raw_data=True, LightGBM's default)
        return None, "the LightGBM Dataset freed its raw data (build it with free_raw_data=False)"
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        return None, f"the LightGBM Dataset was built from a file ({data!s})"
    return dense_features(data), ""
