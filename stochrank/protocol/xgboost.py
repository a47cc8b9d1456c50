"""XGBoost's call form: ``xgb.train``/``xgb.cv`` pass ``(preds, DMatrix)``; preds are float32 margins.

A ``DMatrix`` carries query boundaries as ``group_ptr`` (uint32) and, with groups, one weight per query.
Recognised by duck typing: no XGBoost import.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from ..conventions import query_weights
from .dense import dense_features
from .info import DatasetInfo

__all__ = ["collective_sum", "dmatrix_features", "dmatrix_info", "in_distributed_training", "is_dmatrix"]


def is_dmatrix(obj: Any) -> bool:
    """Tell whether ``obj`` is an ``xgboost.DMatrix`` (or ``QuantileDMatrix``)."""
    return hasattr(obj, "get_uint_info") and hasattr(obj, "get_base_margin")


def dmatrix_info(dm: Any) -> DatasetInfo:
    """Labels, query boundaries and query weights of a DMatrix (XGBoost exposes no learning rate)."""
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
    # A worker of a distributed training may hold only zero-weight queries; the others train.
    part = in_distributed_training()
    weights = query_weights(w if np.asarray(w).size else None, ptr, "DMatrix weight", part=part)
    return DatasetInfo(labels, ptr, weights, "xgboost", None)


def dmatrix_features(dm: Any) -> tuple[npt.NDArray[np.float64] | None, str]:
    """Return a DMatrix's features as float64 (``DMatrix.get_data()``, values as float32), or ``(None, why)``.

    ``get_data()`` is a CSR matrix without the entries XGBoost treats as missing: a scipy.sparse input's
    absent entries and a dense input's ``missing`` values (NaN by default) alike. They come back as 0.0,
    scipy.sparse's meaning of an absent entry and what LightGBM's path gives, so a DMatrix built from a
    sparse matrix works; the price is that NaN in a *dense* DMatrix also reads as 0.0 (XGBoost keeps no
    record of which it was). A ``QuantileDMatrix`` holds only bin indices, so it has no features to give.
    """
    if any(c.__name__.endswith("QuantileDMatrix") for c in type(dm).__mro__):
        return None, f"an XGBoost {type(dm).__name__} stores quantised features only"
    return dense_features(dm.get_data()), ""


def in_distributed_training() -> bool:
    """Whether this process is one worker of a distributed XGBoost training (Dask, Spark)."""
    collective = sys.modules.get("xgboost.collective")  # loaded by xgboost itself; never imported here
    return collective is not None and bool(collective.is_distributed())


def collective_sum(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Add ``values`` up over the workers of a distributed XGBoost training (Dask, Spark); else return them.

    Each worker's objective sees only its own rows (``xgb.dask.train`` builds one local DMatrix per
    worker), so a quantity over the whole training set needs XGBoost's collective. Every worker calls the
    objective once per iteration, which keeps the all-reduce in step. Outside a distributed training (no
    ``xgboost.collective`` loaded, or a world of one) nothing is communicated.
    """
    if not in_distributed_training():
        return values
    collective = sys.modules["xgboost.collective"]
    total: npt.NDArray[np.float64] = np.asarray(
        collective.allreduce(np.ascontiguousarray(values, dtype=np.float64), collective.Op.SUM)
    )
    return total
