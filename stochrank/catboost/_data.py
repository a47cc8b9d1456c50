"""The data :class:`CatBoostRanker` trains and evaluates on, validated once, in row order.

:class:`_RankingData` holds one data set (arrays or the caller's ``catboost.Pool``) with its labels, query
offsets and query weights; :func:`eval_data` reads the one eval set from ``fit``'s LightGBM- or
CatBoost-style arguments. A Pool's group weights, which CatBoost has no getter for, are read by a probe
fit (:func:`_pool_row_weights`). :func:`_encode_rows` / :func:`_decode_rows` store row indices as
CatBoost float32 labels, so that the stochrank engine's Python loss knows which rows it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..conventions import labels_per_row, offsets_from_qid, offsets_from_sizes, pop_qid_column, query_weights

__all__ = ["_RankingData", "_decode_rows", "_encode_rows", "checked_features", "checked_labels", "eval_data"]


@dataclass
class _RankingData:
    """One data set in row order: features (or the caller's Pool), labels, queries, query weights.

    ``baseline``: a Pool's starting scores (CatBoost's ``baseline``), None without one.
    """

    features: Any
    pool: Any
    labels: npt.NDArray[np.float64]
    offsets: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64] | None
    baseline: npt.NDArray[np.float64] | None = None

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """Documents per query."""
        return np.diff(self.offsets)

    @property
    def query_index(self) -> npt.NDArray[np.int64]:
        """The 0-based query of every row."""
        return np.repeat(np.arange(self.offsets.size - 1, dtype=np.int64), self.sizes)

    @classmethod
    def of(
        cls, X: Any, y: Any, group_id: Any, group: Any, weight: Any, name: str, *, read_weights: bool = True
    ) -> _RankingData:
        """Validate a data set; ``read_weights=False`` skips reading a Pool's query weights (None then)."""
        from catboost import Pool

        if isinstance(X, Pool):
            if y is not None or group_id is not None or group is not None:
                raise ValueError(
                    f"{name} is a catboost.Pool: its label and group_id are used; do not pass y, group_id or "
                    "group as well."
                )
            if weight is not None:
                raise ValueError(
                    f"{name} is a catboost.Pool, so sample_weight would not reach CatBoost: put the query "
                    "weights in the Pool (Pool(X, y, group_id=qid, group_weight=w)) or pass arrays, fit(X, "
                    "y, group_id=qid, sample_weight=w)."
                )
            label = X.get_label()
            if label is None:
                raise ValueError(f"The Pool given as {name} has no label.")
            labels = np.asarray(label, dtype=np.float64).reshape(-1)
            if X.get_group_id_hash() is None:
                raise ValueError(
                    f"The Pool given as {name} has no group_id: build it with Pool(X, y, group_id=qid)."
                )
            offsets = offsets_from_qid(np.asarray(X.get_group_id_hash()), f"{name}.group_id")
            # Before the probe fit that reads the weights: its one-dimensional loss refuses a wider baseline.
            baseline = _pool_baseline(X, name)
            weights = None
            if read_weights:
                w = _pool_row_weights(X, labels, name)
                weights = None if np.all(w == 1.0) else query_weights(w, offsets, f"{name} weight")
            return cls(None, X, labels, offsets, weights, baseline)
        if y is None:
            raise ValueError(f"Pass the labels of {name}: fit(X, y, group_id=...) or a catboost.Pool.")
        labels = checked_labels(X, y, name)  # before the query structure, which counts X's rows
        X, column = pop_qid_column(X)  # a DataFrame's 'qid' column (XGBoost's convention) is the group_id
        if column is not None:
            if group_id is not None or group is not None:
                raise ValueError(
                    f"{name} has a 'qid' column and group_id= or group= is given as well: pass the query "
                    "structure once."
                )
            group_id = column
        if (group_id is None) == (group is None):
            raise ValueError(
                f"{name} needs its query structure, exactly one of group_id=<one query id per row> "
                "(CatBoost style; a query's rows contiguous), group=<documents per query in row order> "
                "(LightGBM style) or a 'qid' column of a pandas DataFrame X."
            )
        if group_id is not None:
            offsets = offsets_from_qid(group_id, "group_id")
            if offsets[-1] != labels.size:
                raise ValueError(f"group_id has {offsets[-1]} entries but {name} has {labels.size} rows.")
        else:
            offsets = offsets_from_sizes(group, labels.size, "group")
        return cls(X, None, labels, offsets, query_weights(weight, offsets, "sample_weight"))

    def catboost_pool(self, feature_kinds: dict[str, Any]) -> Any:
        """Return the Pool the native engine trains on (the caller's, or one with per-row group weights).

        ``feature_kinds``: the estimator's ``cat_features`` / ``text_features`` / ``embedding_features``,
        which a new Pool must declare as the model does.
        """
        from catboost import Pool

        if self.pool is not None:
            return self.pool
        w = None if self.weights is None else np.repeat(self.weights, self.sizes)
        return Pool(self.features, self.labels, group_id=self.query_index, group_weight=w, **feature_kinds)

    def dense_features(self, name: str) -> Any:
        """Return the features for a new Pool (the stochrank engine relabels rows by index)."""
        if self.pool is None:
            return self.features
        if self.pool.is_quantized() or self.pool.get_cat_feature_indices():
            raise ValueError(
                f"engine='stochrank' rebuilds the Pool given as {name} with row-index labels, which needs "
                "its raw numeric features: pass the arrays (fit(X, y, group_id=...)) instead of a quantized "
                "Pool or one with categorical features."
            )
        return self.pool.get_features()


def _pool_baseline(pool: Any, name: str) -> npt.NDArray[np.float64] | None:
    """Return a Pool's baseline as float64 starting scores, or None when it has none."""
    baseline = np.asarray(pool.get_baseline(), dtype=np.float64)
    if baseline.size == 0:
        return None
    if baseline.ndim != 2 or baseline.shape[1] != 1:
        raise ValueError(
            f"The Pool given as {name} has a baseline of shape {baseline.shape}; a ranker scores each "
            "document once: give one baseline value per row (Pool(..., baseline=b), b of shape (n,) or "
            "(n, 1))."
        )
    if not np.isfinite(baseline).all():
        raise ValueError(
            f"The baseline of the Pool given as {name} has NaN or inf (first at row "
            f"{int(np.flatnonzero(~np.isfinite(baseline[:, 0]))[0])}): every document needs a finite start."
        )
    return baseline[:, 0]


def checked_labels(X: Any, y: Any, name: str) -> npt.NDArray[np.float64]:
    """Return ``y`` as float64 labels, one per row of ``X`` (``name``: ``"X"`` or ``"eval_set"``)."""
    y_name, x_name = ("y", "X") if name == "X" else (f"The y of {name}", "its X")
    labels: npt.NDArray[np.float64] = labels_per_row(X, y, y_name, x_name)
    return labels


def checked_features(estimator: Any, X: Any, *, reset: bool, categorical: bool) -> Any:
    """Return the features of ``fit`` / ``predict`` checked as scikit-learn estimators check them.

    ``reset`` records ``n_features_in_`` (and ``feature_names_in_``) on ``estimator``, else checks them.
    Arrays are validated by ``check_array`` (2-D, no complex values or infinities, numeric unless
    ``categorical``, at least 2 rows to fit a ranking); a DataFrame goes to CatBoost as it is (its column
    names and categorical columns are CatBoost's to read), only its width and names are checked.
    """
    from scipy import sparse
    from sklearn.utils.validation import validate_data

    if hasattr(X, "columns"):
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        return X
    X = validate_data(
        estimator,
        X,
        reset=reset,
        accept_sparse=("csr", "csc", "coo"),  # what CatBoost takes; other formats are converted to CSR
        accept_large_sparse=False,  # CatBoost wants 32-bit indices (for CSR)
        dtype=None if categorical else "numeric",
        ensure_all_finite="allow-nan",
        ensure_min_samples=2 if reset else 1,
    )
    if sparse.issparse(X) and not sparse.isspmatrix(X):  # CatBoost takes scipy's sparse matrices, not arrays
        X = sparse.csr_matrix(X)
    return X


# ------------------------------------------------------------------------------ Pool group weights
class _WeightProbe:
    """A CatBoost Python loss with zero derivatives that records the labels and weights it is handed."""

    no_jit = True

    def __init__(self) -> None:
        self.labels: list[npt.NDArray[np.float64]] = []
        self.weights: list[npt.NDArray[np.float64]] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> _WeightProbe:
        return self

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> list[tuple[float, float]]:
        """Record the block's labels and weights; derivatives (0, -1) change nothing."""
        self.labels.append(np.asarray(targets, dtype=np.float64))
        self.weights.append(
            np.ones(len(targets)) if weights is None else np.asarray(weights, dtype=np.float64)
        )
        return [(0.0, -1.0)] * len(targets)


def _pool_row_weights(pool: Any, labels: npt.NDArray[np.float64], name: str) -> npt.NDArray[np.float64]:
    """Return the weight of every row of a Pool: its object weights, or its group weights.

    CatBoost 1.2 has no getter for a Pool's ``group_weight`` (``Pool.get_weight()`` returns ones then),
    but hands a Python loss the group weight of every row as its weight. So a Pool without object weights
    is fitted once (one depth-1 tree, one border, one thread, ``has_time=True``: rows in Pool order) with
    a loss that records them. That costs ~0.6 s per 200,000 x 40 Pool.
    """
    from catboost import CatBoost

    weights = np.asarray(pool.get_weight(), dtype=np.float64)
    if not np.all(weights == 1.0):
        return weights
    probe = _WeightProbe()
    settings = {"iterations": 1, "depth": 1, "border_count": 1, "has_time": True, "bootstrap_type": "No"}
    quiet = {"thread_count": 1, "eval_metric": "RMSE", "verbose": False, "allow_writing_files": False}
    CatBoost({"loss_function": probe, "boost_from_average": False, **settings, **quiet}).fit(pool)
    n = labels.size
    seen_labels = np.concatenate(probe.labels)[:n]
    # The first pass over the rows must be in row order (its labels are the Pool's, as float32).
    if seen_labels.size != n or not np.array_equal(seen_labels, labels.astype(np.float32), equal_nan=True):
        raise RuntimeError(
            f"Could not read the group weights of the Pool given as {name}: CatBoost did not hand its rows "
            "to a Python loss in order. Pass arrays instead: fit(X, y, group_id=qid, sample_weight=w)."
        )
    return np.concatenate(probe.weights)[:n]


# ------------------------------------------------------------------------------------------ eval set
def eval_data(
    eval_set: Any, eval_group_id: Sequence[Any] | Any, eval_group: Sequence[Any] | Any
) -> _RankingData | None:
    """Return the one eval set of ``fit`` (None without one), refusing several.

    ``eval_set`` is an ``(X, y)`` tuple or a ``catboost.Pool``, or a list holding one of them; its query
    structure ``eval_group_id`` / ``eval_group`` is given directly or as a one-entry list (LGBMRanker
    style).
    """
    evals = _as_list(eval_set)
    if len(evals) > 1:
        if isinstance(eval_set, list) and _is_xy(tuple(eval_set)):
            raise ValueError(
                "eval_set is a list of two items that are not (X, y) tuples; for one eval set pass "
                "eval_set=[(X_val, y_val)] (or eval_set=(X_val, y_val), or a catboost.Pool)."
            )
        shapes = ", ".join(type(ev).__name__ for ev in evals)
        raise ValueError(
            f"CatBoostRanker takes one eval set, eval_set=[(X_val, y_val)] (it early-stops on it); got "
            f"{len(evals)} items ({shapes}). Score the others with ranker.score(...) after training."
        )
    if not evals:
        return None
    ev = evals[0]
    gid, grp = _single(eval_group_id, "eval_group_id"), _single(eval_group, "eval_group")
    if isinstance(ev, list) and _is_xy(tuple(ev)):  # [[X, y]]: one eval set, its pair as a list
        ev = tuple(ev)
    if _is_xy(ev):
        return _RankingData.of(ev[0], ev[1], gid, grp, None, "eval_set")
    return _RankingData.of(ev, None, gid, grp, None, "eval_set")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) and not _is_xy(value) else [value]


def _single(value: Any, name: str) -> Any:
    """Return the query structure of the one eval set: ``[ids]`` (one entry per eval set) or ``ids``."""
    if isinstance(value, list | tuple) and len(value) > 0 and np.ndim(value[0]) >= 1:
        if len(value) != 1:
            raise ValueError(f"{name} has {len(value)} entries; CatBoostRanker takes one eval set.")
        return value[0]
    return value


def _is_xy(value: Any) -> bool:
    """Whether ``value`` is one ``(X, y)`` pair, not a tuple of two eval sets (Pools or pairs).

    X may be any array-like, a list of rows too; so where X could be an eval set itself, a pair is told
    by its second item: labels (a numeric array-like, 1-D or one column), not a Pool or a pair.
    """
    from catboost import Pool

    if not isinstance(value, tuple) or len(value) != 2:
        return False
    return not isinstance(value[0], tuple | list | Pool) or _is_labels(value[1])


def _is_labels(value: Any) -> bool:
    from catboost import Pool

    if isinstance(value, Pool):
        return False
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):  # ragged: e.g. an (X, y) pair
        return False
    return array.dtype.kind in "biuf" and (array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1))


# --------------------------------------------------------------------------------- row-index labels
# CatBoost stores labels as float32, whose integers are exact only up to 2**24 (16.7 M rows). The row
# index i is stored instead as the float32 whose bit pattern is i + 2**23: the positive normal floats
# from 2**-126 upward in order, exact (no subnormals a flush-to-zero mode could erase) up to the largest
# finite float32, i.e. for 2**31 - 2**24 rows.
_ROW_BITS_OFFSET = 1 << 23
_MAX_ROWS = 0x7F7FFFFF - _ROW_BITS_OFFSET + 1


def _encode_rows(rows: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Return labels (float64, each exactly a float32) that encode the row indices ``rows``.

    :func:`_decode_rows` reads them back.
    """
    index = np.asarray(rows, dtype=np.int64)
    if index.size and not 0 <= index.min() <= index.max() < _MAX_ROWS:
        raise ValueError(
            f"engine='stochrank' can label rows 0 to {_MAX_ROWS - 1} (distinct finite float32 labels); got "
            f"rows {index.min()} to {index.max()}."
        )
    return (index + _ROW_BITS_OFFSET).astype(np.uint32).view(np.float32).astype(np.float64)


def _decode_rows(labels: Any) -> npt.NDArray[np.int64]:
    """Return the row indices (int64) that :func:`_encode_rows` stored as ``labels``."""
    bits = np.asarray(labels, dtype=np.float64).astype(np.float32).view(np.uint32)
    return bits.astype(np.int64) - _ROW_BITS_OFFSET
