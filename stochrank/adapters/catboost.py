r"""CatBoost glue: the reference ``StochasticRank`` loss and stochrank gradients on CatBoost trees.

CatBoost is where StochasticRank was first implemented, but it offers no way to plug in a query-aware
Python objective (its custom losses see blocks of documents without their queries). So
:class:`CatBoostRanker` has two engines:

``engine="native"`` (the reference path)
    Trains CatBoost's built-in ``StochasticRank:metric=...`` loss, built by :func:`native_loss` from the
    same objective object LightGBM and XGBoost use, and maps ``sglb=`` to ``langevin``,
    ``diffusion_temperature``, ``model_shrink_rate`` and ``model_shrink_mode``.
``engine="stochrank"`` (stochrank gradients on CatBoost trees)
    Boosts with stochrank's own gradients: every iteration calls ``objective(preds, RankingTarget)``,
    fits **one** CatBoost tree to that gradient table and adds its predictions; the trees are merged
    with ``catboost.sum_models`` into one ordinary CatBoost model. Early stopping, SGLB and the
    learning rate are handled by the loop. Works for every objective with stochrank's call protocol,
    including those CatBoost does not have.

``engine="auto"`` (default) takes the native path when CatBoost has the objective and the external one
otherwise, and for ``mrr(k=K)``: CatBoost 1.2.10 crashes (segmentation fault) on
``StochasticRank:metric=MRR;top=K`` with queries of realistic length.

**The gradient table.** The training Pool is built and quantized once, its labels encoding the row
index (exactly, also past float32's 2**24 exact integers: :func:`_encode_rows`). The loss CatBoost fits
each tree with is a Python object whose ``calc_ders_range`` returns the rows of a table
``(-grad, -hess)`` indexed by the decoded label (CatBoost hands Python losses blocks of rows without their
queries; the label says which rows). With ``leaf_estimation_method='Newton'`` and one leaf iteration,
each leaf is ``lr * sum(-grad) / (sum(hess) + l2_leaf_reg)`` over its documents: LightGBM's leaf for
the same ``(grad, hess)`` with ``lambda_l2 = l2_leaf_reg``, and, since stochrank's Hessian is the query
weight, CatBoost's own ``leaf_estimation_method=Gradient`` leaf for StochasticRank. Measured on MQ2008
fold 1 (9,630 rows, depth 6, 1 thread, medians of 25 fits): one such tree costs 8.2 ms, a built-in RMSE
tree on the same quantized Pool 8.7 ms, so the Python loss adds nothing measurable; rebuilding and
quantizing a Pool with ``label = -grad`` every iteration costs ~76 ms per tree, and RMSE with the gradient
as ``baseline`` over a constant label is refused by CatBoost ("All train targets are equal"). The
per-tree predictions use one thread unless ``thread_count`` is given: ~0.2 ms, where CatBoost's all-core
default waits ~4 ms for its thread pool on a busy machine.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_choice, check_int
from ..conventions import offsets_from_qid, offsets_from_sizes, query_weights
from ..objectives import SGLB, RankingObjective, StochasticRankObjective
from ..protocol import RankingTarget

__all__ = ["CatBoostDeviationWarning", "CatBoostRanker", "native_loss"]

# The keys CatBoost's StochasticRank reads from the loss string; CatBoost *silently ignores* any other,
# so native_loss only ever writes these.
LOSS_KEYS = frozenset(
    {"metric", "top", "type", "denominator", "decay", "sigma", "num_estimations", "mu", "nu", "lambda"}
)
_METRIC = {"ndcg": "NDCG", "dcg": "DCG", "err": "ERR", "pfound": "PFound", "mrr": "MRR", "lso": "FilteredDCG"}
_GAIN = {"exp": "Exp", "linear": "Base"}
_DISCOUNT = {"log": "LogPosition", "position": "Position"}

# CatBoost's defaults for a StochasticRank model (1.2.10): used by the external engine too, so that both
# engines boost with the same step and number of trees unless told otherwise.
_DEFAULT_LEARNING_RATE = 0.03
_DEFAULT_ITERATIONS = 1000

# Parameter aliases CatBoost accepts for the settings this module reads, canonical name first.
_ALIASES = {
    "iterations": ("iterations", "n_estimators", "num_boost_round", "num_trees"),
    "learning_rate": ("learning_rate", "eta"),
    "random_seed": ("random_seed", "random_state"),
    "thread_count": ("thread_count", "n_jobs"),
    "early_stopping_rounds": ("early_stopping_rounds",),
    "use_best_model": ("use_best_model",),
    "eval_metric": ("eval_metric",),
    "verbose": ("verbose", "verbose_eval"),
}
# Set by the objective; CatBoost would otherwise train something else under the same name.
_OWNED = {
    "loss_function": "the objective sets it: pass objective=stochrank.ndcg(...) (or another stochrank objective)",
    "objective": "pass the objective as CatBoostRanker(objective=...)",
    "custom_loss": "the objective sets the loss",
    "langevin": "pass sglb=stochrank.SGLB(...) to the objective",
    "diffusion_temperature": "pass sglb=stochrank.SGLB(temperature=...) to the objective",
    "model_shrink_rate": "pass sglb=stochrank.SGLB(shrink_rate=...) to the objective",
    "model_shrink_mode": "pass sglb=stochrank.SGLB(shrink_mode=...) to the objective",
    "posterior_sampling": "pass sglb=stochrank.SGLB(temperature=n_objects, shrink_rate=1/(2 n_objects))",
    "leaf_estimation_method": "StochasticRank has only the Gradient method (stochrank's unit Hessian), which is used",
}
# Meaningless when CatBoost fits one tree per call to a fixed gradient table.
_NOT_EXTERNAL = {
    "boosting_type": "ordered boosting needs per-permutation gradients of the loss; the loop is Plain boosting",
    "leaf_estimation_iterations": "the gradient table is fixed for the iteration; more leaf steps would repeat it",
    "leaf_estimation_backtracking": "the gradient table is fixed for the iteration",
    "boost_from_average": "the loop starts from 0, as CatBoost's StochasticRank does",
    "custom_metric": "the loop evaluates only eval_metric",
    "od_type": "use early_stopping_rounds",
    "od_wait": "use early_stopping_rounds",
    "od_pval": "use early_stopping_rounds",
    "best_model_min_trees": "use early_stopping_rounds",
    "save_snapshot": "the loop keeps its trees in memory",
    "snapshot_file": "the loop keeps its trees in memory",
    "snapshot_interval": "the loop keeps its trees in memory",
    "cat_features": "CTR statistics would be rebuilt for every tree and cannot be merged faithfully",
    "text_features": "text processing would be rebuilt for every tree",
    "embedding_features": "embedding processing would be rebuilt for every tree",
    "task_type": "CatBoost runs Python losses on CPU only",
}
# Settings the external engine uses once to quantize the training Pool, not for every tree.
_QUANTIZATION = (
    "border_count",
    "max_bin",
    "feature_border_type",
    "per_float_feature_quantization",
    "nan_mode",
)
# CatBoost metrics that grow with quality: the external engine early-stops by maximising.
_MAXIMISED = frozenset(
    {
        "NDCG",
        "DCG",
        "ERR",
        "MRR",
        "PFound",
        "FilteredDCG",
        "MAP",
        "PrecisionAt",
        "RecallAt",
        "AUC",
        "QueryAUC",
    }
)

# Measured in tests/test_catboost_parity.py (shared/notes/catboost-stochasticrank.md): the size of each
# documented disagreement, quoted by the warnings.
_SIGMA_DEVIATION = (
    "CatBoost conditions document d on m_d = a_d + (sum_j z_j - sigma z_d)/(n - 1) (noise sum not scaled "
    "by sigma) where the conditional mean is a_d + sigma mean_(j != d) z_j: at sigma = 0.3 its Der1 is off "
    "by 1.9e-2 (26 of its standard errors) from a finite-difference gradient of the smoothed metric, "
    "stochrank's by 1.4e-3 (2.7 standard errors; benchmarks/RESULTS.md §6). They agree only at sigma = 1."
)


def _native_crash(objective: Any) -> str | None:
    """Why CatBoost's own StochasticRank cannot train ``objective`` (it crashes), or None."""
    if isinstance(objective, StochasticRankObjective) and objective.metric == "mrr" and objective.k is not None:
        return (
            f"CatBoost 1.2.10 crashes the Python process (segmentation fault) training "
            f"StochasticRank:metric=MRR;top={objective.k} on queries of realistic length (MQ2008: 20 queries "
            "suffice), so CatBoostRanker does not run it natively."
        )
    return None


class CatBoostDeviationWarning(UserWarning):
    """CatBoost's built-in StochasticRank computes something other than the stochrank objective asked for.

    Raised by :func:`native_loss` (and the native engine of :class:`CatBoostRanker`) for the documented
    differences: sigma != 1, ERR, MRR with a cut-off, PFound with a cut-off and labels equal to 1, query
    weights. Use ``engine="stochrank"`` for stochrank's gradients on CatBoost trees instead.
    """


class _NoCatBoostEquivalent(ValueError):
    """The objective has no CatBoost StochasticRank loss string."""


# ------------------------------------------------------------------------------------- the loss string
def _fmt(x: float) -> str:
    return repr(float(x))


def _translate(objective: Any) -> tuple[str, list[str]]:
    """(loss string, deviations) for a StochasticRank objective; raises _NoCatBoostEquivalent."""
    if not isinstance(objective, StochasticRankObjective):
        raise _NoCatBoostEquivalent(
            f"CatBoost has a built-in loss only for stochrank's StochasticRank objectives (stochrank.ndcg, dcg, "
            f"err, pfound, mrr, lso); got {objective!r}. Train it with CatBoostRanker(engine='stochrank')."
        )
    metric, c = objective.metric, objective.parameters()
    owner = repr(objective)
    external = "Use CatBoostRanker(objective, engine='stochrank') to train it on CatBoost trees."
    deviations: list[str] = []
    terms: dict[str, str] = {"metric": _METRIC[metric]}
    if c["k"] is not None:
        terms["top"] = str(c["k"])
    if metric in ("ndcg", "dcg", "lso"):
        terms["type"] = _GAIN[c["gain"]]
        terms["denominator"] = _DISCOUNT[c["discount"]]
    if metric in ("err", "pfound") and c["max_grade"] is not None:
        raise _NoCatBoostEquivalent(
            f"{owner}: CatBoost's {_METRIC[metric]} uses the labels directly as probabilities in [0, 1]; it has "
            f"no max_grade (R = (2^r - 1)/2^G). Map the labels yourself and drop max_grade, or: {external}"
        )
    if metric == "pfound":
        terms["decay"] = _fmt(c["decay"])
    if metric == "mrr" and c["threshold"] != 0.0:
        raise _NoCatBoostEquivalent(
            f"{owner}: CatBoost's MRR objective counts a document as relevant when its label is > 0; it has no "
            f"threshold (got threshold={c['threshold']}). Binarise the labels yourself, or: {external}"
        )
    if metric == "lso":
        if c["order"] != "score":
            raise _NoCatBoostEquivalent(
                f"{owner}: lso(order='input') is the paper's LSO (shown documents keep their row order); "
                "CatBoost's FilteredDCG ranks the shown documents by noisy score, which is "
                f"lso(order='score'). {external}"
            )
        if c["sfa"] != 0.0:
            raise _NoCatBoostEquivalent(
                f"{owner}: stochrank's SFA for lso projects on the raw scores; CatBoost's FilteredDCG projects on "
                f"scores centred together with its threshold document. Use sfa=0 (CatBoost's default), or: "
                f"{external}"
            )
    terms["sigma"] = _fmt(c["sigma"])
    if metric != "lso":
        terms["mu"] = _fmt(c["mu"])
    terms["nu"] = _fmt(c["nu"])
    terms["lambda"] = _fmt(c["sfa"])
    terms["num_estimations"] = str(c["n_samples"])
    if c["sigma"] != 1.0 and metric != "lso":
        deviations.append(f"{owner}: sigma={c['sigma']} != 1. {_SIGMA_DEVIATION}")
    if metric == "err":
        deviations.append(
            f"{owner}: CatBoost's ERR metric differences are wrong (a spurious (p'+2)/(p'+1) factor for moves "
            "down; with top < n the document pushed out of the top is subtracted with the wrong weight), so its "
            "derivative is not the gradient of smoothed ERR (3.1e-3 = 106 standard errors off on an 8-document "
            "query, tests/test_catboost_parity.py)."
        )
    if metric == "mrr" and c["k"] is not None:
        deviations.append(
            f"{owner}: CatBoost's MRR objective ignores the cut-off top={c['k']} in its metric differences: it "
            "follows the gradient of whole-list MRR, not of MRR@k."
        )
    assert set(terms) <= LOSS_KEYS
    return "StochasticRank:" + ";".join(f"{key}={value}" for key, value in terms.items()), deviations


def native_loss(objective: StochasticRankObjective) -> str:
    """CatBoost's loss string for a stochrank objective, e.g. ``'StochasticRank:metric=NDCG;top=5;...'``.

    Every setting is written explicitly, and only under the keys CatBoost's StochasticRank reads (it
    silently ignores unknown ones):

    ======================  ==========================================================
    stochrank               CatBoost loss-string key
    ======================  ==========================================================
    ndcg/dcg/err/pfound/mrr ``metric=NDCG/DCG/ERR/PFound/MRR``
    lso(order='score')      ``metric=FilteredDCG``
    k                       ``top`` (omitted for None: the whole list)
    gain 'exp' / 'linear'   ``type=Exp`` / ``type=Base``
    discount 'log'/'pos.'   ``denominator=LogPosition`` / ``Position``
    decay (pfound)          ``decay``
    sigma, mu, nu           ``sigma``, ``mu`` (not for FilteredDCG), ``nu``
    sfa                     ``lambda``
    n_samples               ``num_estimations``
    ======================  ==========================================================

    ``seed`` and ``sglb`` are training parameters, not loss keys: :class:`CatBoostRanker` maps them to
    ``random_seed`` and ``langevin`` / ``diffusion_temperature`` / ``model_shrink_rate`` /
    ``model_shrink_mode``.

    Raises
    ------
    ValueError
        When CatBoost has no equivalent: ``err``/``pfound`` with ``max_grade``, ``mrr`` with
        ``threshold != 0`` (CatBoost: label > 0), ``lso(order='input')``, ``lso`` with ``sfa > 0``, or an
        objective that is not a StochasticRank one.

    Warns
    -----
    CatBoostDeviationWarning
        Where CatBoost's derivative is documented to differ from stochrank's (measured in
        ``tests/test_catboost_parity.py``): ``sigma != 1`` (except lso), ``err`` (any k), ``mrr`` with
        ``k``. ``pfound`` with ``k`` differs only for labels exactly 1; :class:`CatBoostRanker` checks the
        labels and warns then.
    """
    loss, deviations = _translate(objective)
    for text in deviations:
        warnings.warn(text, CatBoostDeviationWarning, stacklevel=2)
    return loss


def _default_eval_metric(objective: Any) -> str | None:
    """The CatBoost eval metric that scores what the objective optimises (both engines early-stop on it).

    NDCG with the objective's k, gain and discount for ndcg and for any objective whose config has a
    gain and a discount (softrank): the metric :meth:`CatBoostRanker.score` reports. None for err /
    pfound with ``max_grade``: CatBoost's ERR and PFound read the labels as probabilities and cannot
    map grades r to (2^r - 1)/2^G, so no CatBoost metric string scores them.
    """
    config = objective.parameters() if isinstance(objective, RankingObjective) else {}
    if isinstance(objective, StochasticRankObjective):
        metric = objective.metric
        top = "" if config["k"] is None else f"top={config['k']};"
        if metric == "lso":  # CatBoost's FilteredDCG metric: approx >= 0 in input order
            return f"FilteredDCG:type={_GAIN[config['gain']]};denominator={_DISCOUNT[config['discount']]}"
        if metric in ("err", "pfound") and config["max_grade"] is not None:
            return None
        if metric == "pfound":
            return f"PFound:{top}decay={_fmt(config['decay'])}"
        if metric == "mrr":
            return f"MRR:{top}border={_fmt(config['threshold'])}"
        if metric == "err":
            return f"ERR:top={config['k']}" if config["k"] is not None else "ERR"
        name = _METRIC[metric]  # ndcg, dcg
    else:
        name = "NDCG"
    k = config.get("k", getattr(objective, "k", None))
    top = "" if k is None else f"top={int(k)};"
    gain, discount = config.get("gain", "exp"), config.get("discount", "log")
    return f"{name}:{top}type={_GAIN[gain]};denominator={_DISCOUNT[discount]}"


# --------------------------------------------------------------------------------------------- data
@dataclass
class _RankingData:
    """One data set in row order: features (or the caller's Pool), labels, queries, query weights."""

    features: Any
    pool: Any
    labels: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def query_index(self) -> np.ndarray:
        return np.repeat(np.arange(self.offsets.size - 1, dtype=np.int64), self.sizes)

    @classmethod
    def of(
        cls, X: Any, y: Any, group_id: Any, group: Any, weight: Any, name: str, *, read_weights: bool = True
    ) -> _RankingData:
        """Validated data; ``read_weights=False`` skips reading a Pool's query weights (None then)."""
        from catboost import Pool

        if isinstance(X, Pool):
            if y is not None or group_id is not None or group is not None:
                raise ValueError(
                    f"{name} is a catboost.Pool: its label and group_id are used; do not pass y, group_id or "
                    "group as well."
                )
            if weight is not None:
                raise ValueError(
                    f"{name} is a catboost.Pool, so sample_weight would not reach CatBoost: put the query weights "
                    "in the Pool (Pool(X, y, group_id=qid, group_weight=w)) or pass arrays, fit(X, y, "
                    "group_id=qid, sample_weight=w)."
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
            weights = None
            if read_weights:
                w = _pool_row_weights(X, labels, name)
                weights = None if np.all(w == 1.0) else query_weights(w, offsets, f"{name} weight")
            return cls(None, X, labels, offsets, weights)
        if y is None:
            raise ValueError(f"Pass the labels of {name}: fit(X, y, group_id=...) or a catboost.Pool.")
        labels = np.asarray(y, dtype=np.float64).reshape(-1)
        if (group_id is None) == (group is None):
            raise ValueError(
                f"{name} needs its query structure, exactly one of group_id=<one query id per row> (CatBoost "
                "style; a query's rows contiguous) or group=<documents per query in row order> (LightGBM style)."
            )
        if group_id is not None:
            offsets = offsets_from_qid(group_id, "group_id")
            if offsets[-1] != labels.size:
                raise ValueError(f"group_id has {offsets[-1]} entries but {name} has {labels.size} labels.")
        else:
            offsets = offsets_from_sizes(group, labels.size, "group")
        n_rows = np.shape(X)[0]
        if n_rows != labels.size:
            raise ValueError(f"{name} has {n_rows} rows but {labels.size} labels.")
        return cls(X, None, labels, offsets, query_weights(weight, offsets, "sample_weight"))

    def catboost_pool(self) -> Any:
        """The Pool the native engine trains on (the caller's, or one with per-row group weights)."""
        from catboost import Pool

        if self.pool is not None:
            return self.pool
        w = None if self.weights is None else np.repeat(self.weights, self.sizes)
        return Pool(self.features, self.labels, group_id=self.query_index, group_weight=w)

    def dense_features(self, name: str) -> Any:
        """Features for a new Pool (the external engine relabels rows by index)."""
        if self.pool is None:
            return self.features
        if self.pool.is_quantized() or self.pool.get_cat_feature_indices():
            raise ValueError(
                f"engine='stochrank' rebuilds the Pool given as {name} with row-index labels, which needs its raw "
                "numeric features: pass the arrays (fit(X, y, group_id=...)) instead of a quantized Pool or one "
                "with categorical features."
            )
        return self.pool.get_features()


class _WeightProbe:
    """A CatBoost Python loss with zero derivatives that records the labels and weights it is handed."""

    no_jit = True

    def __init__(self) -> None:
        self.labels: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> _WeightProbe:
        return self

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> list[tuple[float, float]]:
        self.labels.append(np.asarray(targets, dtype=np.float64))
        self.weights.append(
            np.ones(len(targets)) if weights is None else np.asarray(weights, dtype=np.float64)
        )
        return [(0.0, -1.0)] * len(targets)


def _pool_row_weights(pool: Any, labels: np.ndarray, name: str) -> np.ndarray:
    """The weight of every row of a Pool: its object weights, or its group weights.

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
            f"Could not read the group weights of the Pool given as {name}: CatBoost did not hand its rows to "
            "a Python loss in order. Pass arrays instead: fit(X, y, group_id=qid, sample_weight=w)."
        )
    return np.concatenate(probe.weights)[:n]


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) and not _is_xy(value) else [value]


def _single(value: Any, name: str) -> Any:
    """The query structure of the one eval set: ``[ids]`` (one entry per eval set, LGBMRanker style) or ``ids``."""
    if isinstance(value, list | tuple) and len(value) > 0 and np.ndim(value[0]) >= 1:
        if len(value) != 1:
            raise ValueError(f"{name} has {len(value)} entries; CatBoostRanker takes one eval set.")
        return value[0]
    return value


def _is_xy(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and not isinstance(value[0], tuple | list)


# ------------------------------------------------------------------------------------- gradient table
# CatBoost stores labels as float32, whose integers are exact only up to 2**24 (16.7 M rows). The row
# index i is stored instead as the float32 whose bit pattern is i + 2**23: the positive normal floats
# from 2**-126 upward in order, exact (no subnormals a flush-to-zero mode could erase) up to the largest
# finite float32, i.e. for 2**31 - 2**24 rows.
_ROW_BITS_OFFSET = 1 << 23
_MAX_ROWS = 0x7F7FFFFF - _ROW_BITS_OFFSET + 1


def _encode_rows(rows: np.ndarray) -> np.ndarray:
    """Labels (float64, each exactly a float32) that encode the row indices ``rows`` for :func:`_decode_rows`."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size and not 0 <= rows.min() <= rows.max() < _MAX_ROWS:
        raise ValueError(
            f"engine='stochrank' can label rows 0 to {_MAX_ROWS - 1} (distinct finite float32 labels); got rows "
            f"{rows.min()} to {rows.max()}."
        )
    return (rows + _ROW_BITS_OFFSET).astype(np.uint32).view(np.float32).astype(np.float64)


def _decode_rows(labels: Any) -> np.ndarray:
    """The row indices (int64) that :func:`_encode_rows` stored as ``labels``."""
    bits = np.asarray(labels, dtype=np.float64).astype(np.float32).view(np.uint32)
    return bits.astype(np.int64) - _ROW_BITS_OFFSET


class _GradientTable:
    """A CatBoost Python loss that returns the rows of a ``(-grad, -hess)`` table (CatBoost maximises).

    The training Pool's label encodes the row index (:func:`_encode_rows`), so ``calc_ders_range``
    knows which rows a block holds.
    CatBoost deep-copies its loss object: returning ``self`` keeps the table shared; ``no_jit`` stops it
    from trying to compile the method with Numba.
    """

    no_jit = True

    def __init__(self, n_rows: int) -> None:
        self.table = np.zeros((n_rows, 2))

    def __deepcopy__(self, memo: dict[int, Any]) -> _GradientTable:
        return self

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> np.ndarray:
        return self.table[_decode_rows(targets)]


# ------------------------------------------------------------------------------------------ estimator
class CatBoostRanker:
    r"""CatBoost ranker trained with a stochrank objective: the same object as ``lightgbm.LGBMRanker``'s.

    >>> ranker = CatBoostRanker(stochrank.ndcg(k=5), iterations=500, learning_rate=0.1)  # doctest: +SKIP
    >>> ranker.fit(X, y, group_id=qid, eval_set=(Xv, yv), eval_group_id=qv,  # doctest: +SKIP
    ...            early_stopping_rounds=50)
    >>> ranker.model_.save_model("ranker.cbm")  # doctest: +SKIP

    Parameters
    ----------
    objective : stochrank objective
        A stochrank objective (``stochrank.ndcg(k=5)``, ``stochrank.softrank(k=10)``, ...) or any callable
        with stochrank's protocol ``grad, hess = objective(preds, RankingTarget)`` (gradients for
        minimisation).
    engine : {'auto', 'native', 'stochrank'}, default 'auto'
        ``'native'``: CatBoost's built-in ``StochasticRank`` loss (:func:`native_loss`; SGLB as
        ``langevin`` etc.). ``'stochrank'``: stochrank's gradients, one CatBoost tree per iteration
        (see the module docs). ``'auto'``: native when CatBoost has the objective (warning with
        :class:`CatBoostDeviationWarning` where CatBoost is documented to differ), stochrank otherwise
        and for ``mrr(k=K)``, on which CatBoost 1.2.10 crashes (``'native'`` refuses it).
    **catboost_params
        CatBoost training parameters (``iterations``, ``learning_rate``, ``depth``, ``l2_leaf_reg``,
        ``random_strength``, ``bootstrap_type``, ``border_count``, ``thread_count``, ``eval_metric``,
        ``early_stopping_rounds``, ...), passed to CatBoost unchanged; CatBoost rejects unknown names.
        Refused: the loss and SGLB settings (they come from the objective) and, for the stochrank
        engine, settings that need CatBoost's own loss (ordered boosting, categorical features, ...).
        Defaults as CatBoost's for StochasticRank (``learning_rate=0.03``, ``iterations=1000``, depth 6,
        ``l2_leaf_reg=3``, MVS bootstrap) except ``verbose=False`` and ``allow_writing_files=False``.
        ``random_seed`` defaults to the objective's ``seed`` (for the native engine it seeds CatBoost's
        own Monte-Carlo draws, which are not stochrank's; for the stochrank engine tree t uses
        ``random_seed + t`` for its bootstrap and split randomness). ``eval_metric`` defaults to the
        CatBoost metric of the objective (``NDCG:top=5;type=Exp;denominator=LogPosition`` for
        ``stochrank.ndcg(k=5)``; NDCG with the objective's k, gain and discount for ``softrank``), none for
        ``err`` / ``pfound`` with ``max_grade`` (give one with an eval set); the stochrank engine evaluates
        it with ``catboost.utils.eval_metric`` and accepts only ranking metrics (it maximises).

    Attributes
    ----------
    model_ : catboost.CatBoost
        The trained model: an ordinary CatBoost model (``save_model``, ``load_model``, ``predict``).
    engine_ : str
        The engine used, 'native' or 'stochrank'.
    loss_function_ : str or None
        The CatBoost loss string of the native engine.
    best_iteration_ : int or None
        0-based best iteration on the eval set (None without one).
    evals_result_ : dict
        ``{'validation': {eval_metric: [...]}}`` per iteration (native: CatBoost's own record).
    timing_ : dict
        Stochrank engine: seconds spent in the objective, fitting trees and predicting, and the number
        of iterations run.

    Notes
    -----
    Where the engines differ beyond Monte-Carlo noise (measured in ``benchmarks/catboost_parity.py``):
    CatBoost draws separate noise for the split search and for the leaf values of a tree (and separate
    Langevin noise for both), stochrank one draw per iteration; ERR, MRR@k and sigma != 1 are different
    gradients (:func:`native_loss`); CatBoost ignores query weights in StochasticRank's derivatives and
    uses them only in leaf denominators, stochrank weights gradients and Hessians.
    """

    def __init__(self, objective: Any, *, engine: str = "auto", **catboost_params: Any) -> None:
        self.objective = objective
        self.engine = engine
        self._catboost_params = dict(catboost_params)

    # ------------------------------------------------------------------------- scikit-learn protocol
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments, as given (``objective``, ``engine`` and the CatBoost parameters)."""
        return {"objective": self.objective, "engine": self.engine, **self._catboost_params}

    def set_params(self, **params: Any) -> CatBoostRanker:
        """Set ``objective``, ``engine`` or CatBoost parameters (scikit-learn's protocol); returns self."""
        for key, value in params.items():
            if key in ("objective", "engine"):
                setattr(self, key, value)
            else:
                self._catboost_params[key] = value
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_params().items())
        return f"CatBoostRanker({args})"

    # ---------------------------------------------------------------------------------- parameters
    def _resolved_engine(self) -> str:
        engine = check_choice(self.engine, "engine", "CatBoostRanker", ("auto", "native", "stochrank"))
        if isinstance(self.objective, str) or not callable(self.objective):
            raise TypeError(
                f"CatBoostRanker's objective must be a stochrank objective such as stochrank.ndcg(k=5) (or a callable "
                f"objective(preds, RankingTarget) -> (grad, hess)); got {self.objective!r}. For CatBoost's own "
                "losses use catboost.CatBoostRanker(loss_function=...)."
            )
        crash = _native_crash(self.objective)
        if engine == "native" and crash:
            raise ValueError(crash + " Use engine='stochrank' (or 'auto', which does so).")
        if engine != "auto":
            return engine
        try:
            _translate(self.objective)
        except _NoCatBoostEquivalent:
            return "stochrank"
        return "stochrank" if crash else "native"

    def _params(self, engine: str) -> dict[str, Any]:
        """CatBoost parameters with canonical names, checked against what the objective and engine own."""
        params: dict[str, Any] = {}
        given = dict(self._catboost_params)
        for canonical, names in _ALIASES.items():
            present = [name for name in names if name in given]
            if len(present) > 1:
                raise ValueError(f"CatBoostRanker got both {present[0]!r} and {present[1]!r}; pass only one.")
            if present:
                params[canonical] = given.pop(present[0])
        for key, value in given.items():
            if key in _OWNED:
                raise ValueError(f"CatBoostRanker does not take {key!r}: {_OWNED[key]}.")
            if engine == "stochrank" and key in _NOT_EXTERNAL:
                if (key, value) in (("boosting_type", "Plain"), ("task_type", "CPU")):
                    continue
                raise ValueError(
                    f"CatBoostRanker(engine='stochrank') does not support {key!r}: {_NOT_EXTERNAL[key]}."
                )
        params.update(given)
        params.setdefault("learning_rate", _DEFAULT_LEARNING_RATE)
        params.setdefault("iterations", _DEFAULT_ITERATIONS)
        check_int(params["iterations"], "iterations", "CatBoostRanker", low=1)
        lr = float(params["learning_rate"])
        if not lr > 0.0 or not math.isfinite(lr):
            raise ValueError(
                f"CatBoostRanker needs a finite learning_rate > 0; got {params['learning_rate']!r}."
            )
        self._check_seed(params)
        sglb = self._sglb()
        if sglb is not None:
            sglb.booster_learning_rate(lr, "CatBoostRanker")
        if "verbose" not in params and "logging_level" not in params and "silent" not in params:
            params["verbose"] = False
        params.setdefault("allow_writing_files", False)
        if "eval_metric" not in params:
            params["eval_metric"] = _default_eval_metric(self.objective)
            if params["eval_metric"] is None:  # err / pfound with max_grade: checked in fit with an eval set
                return params
        elif not isinstance(params["eval_metric"], str):
            raise TypeError(
                f"CatBoostRanker's eval_metric must be a CatBoost metric string such as 'NDCG:top=5'; got "
                f"{params['eval_metric']!r}."
            )
        if engine == "stochrank" and params["eval_metric"].split(":")[0] not in _MAXIMISED:
            raise ValueError(
                f"CatBoostRanker(engine='stochrank') early-stops by maximising eval_metric, so it must be one of "
                f"{sorted(_MAXIMISED)}; got {params['eval_metric']!r}."
            )
        return params

    def _check_seed(self, params: dict[str, Any]) -> None:
        seed = self.objective.seed if isinstance(self.objective, RankingObjective) else None
        if "random_seed" not in params:
            params["random_seed"] = 0 if seed is None else seed
        elif seed not in (None, 0) and params["random_seed"] != seed:
            raise ValueError(
                f"The objective's seed={seed} and CatBoostRanker's random_seed={params['random_seed']} disagree. "
                "random_seed defaults to the objective's seed: pass only one of them."
            )
        check_int(params["random_seed"], "random_seed", "CatBoostRanker", low=0)

    def _sglb(self) -> SGLB | None:
        sglb = getattr(self.objective, "sglb", None)
        return sglb if isinstance(sglb, SGLB) else None

    # ------------------------------------------------------------------------------------------- fit
    def fit(
        self,
        X: Any,
        y: Any = None,
        *,
        group_id: Any = None,
        group: Any = None,
        sample_weight: Any = None,
        eval_set: Any = None,
        eval_group_id: Sequence[Any] | Any = None,
        eval_group: Sequence[Any] | Any = None,
        early_stopping_rounds: int | None = None,
    ) -> CatBoostRanker:
        """Train on ``X`` (array-like with ``y`` and ``group_id`` or ``group``, or a ``catboost.Pool``).

        Parameters
        ----------
        X : array-like of shape (n_documents, n_features) or catboost.Pool
        y : array-like of shape (n_documents,)
        group_id : array-like of shape (n_documents,)
            One query id per row (CatBoost style; a query's rows contiguous).
        group : array-like of int
            Documents per query in row order (LightGBM style), instead of ``group_id``.
        sample_weight : array-like
            Query weights: one per query, or one per row constant within each query. Not with a Pool:
            its own ``weight`` or ``group_weight`` are the query weights then.
        eval_set : (X, y) tuple or catboost.Pool, or a list holding one of them
            The data for ``eval_metric`` and early stopping (with ``eval_group_id`` / ``eval_group``).
        early_stopping_rounds : int
            Stop when ``eval_metric`` has not improved for this many iterations; the model keeps the
            best iteration (``use_best_model=True``, CatBoost's default with an eval set).
        """
        engine = self._resolved_engine()
        params = self._params(engine)
        if early_stopping_rounds is not None:
            params["early_stopping_rounds"] = early_stopping_rounds
        if params.get("early_stopping_rounds") is not None:
            check_int(params["early_stopping_rounds"], "early_stopping_rounds", "CatBoostRanker.fit", low=1)
        train = _RankingData.of(X, y, group_id, group, sample_weight, "X")
        evals = _as_list(eval_set)
        if len(evals) > 1:
            if (
                isinstance(eval_set, list)
                and len(eval_set) == 2
                and not isinstance(eval_set[0], tuple | list)
            ):
                raise ValueError(
                    "eval_set is a list of two items that are not (X, y) tuples; for one eval set pass "
                    "eval_set=[(X_val, y_val)] (or eval_set=(X_val, y_val), or a catboost.Pool)."
                )
            shapes = ", ".join(type(ev).__name__ for ev in evals)
            raise ValueError(
                f"CatBoostRanker takes one eval set, eval_set=[(X_val, y_val)] (it early-stops on it); got "
                f"{len(evals)} items ({shapes}). Score the others with ranker.score(...) after training."
            )
        valid = None
        if evals:
            ev = evals[0]
            gid, grp = _single(eval_group_id, "eval_group_id"), _single(eval_group, "eval_group")
            if _is_xy(ev):
                valid = _RankingData.of(ev[0], ev[1], gid, grp, None, "eval_set")
            else:
                valid = _RankingData.of(ev, None, gid, grp, None, "eval_set")
        if params.get("early_stopping_rounds") is not None and valid is None:
            raise ValueError("early_stopping_rounds needs an eval_set to watch.")
        if valid is not None and params["eval_metric"] is None:
            raise ValueError(
                f"{self.objective!r} has no default eval_metric: CatBoost's ERR and PFound read the labels as "
                "probabilities in [0, 1] and cannot map grades to (2^r - 1)/2^max_grade. Pass eval_metric= "
                "explicitly, e.g. CatBoostRanker(..., eval_metric='NDCG:top=5'), or ERR / PFound on labels you "
                "mapped to probabilities yourself."
            )
        self.engine_ = engine
        if engine == "native":
            self._fit_native(train, valid, params)
        else:
            self._fit_external(train, valid, params)
        return self

    def _fit_native(self, train: _RankingData, valid: _RankingData | None, params: dict[str, Any]) -> None:
        from catboost import CatBoost

        loss, deviations = _translate(self.objective)
        pfound_at_k = self.objective.metric == "pfound" and self.objective.k is not None
        if pfound_at_k and np.any(train.labels == 1.0):
            deviations.append(
                f"{self.objective!r}: with top < n and labels exactly 1, CatBoost's PFound difference misses the "
                "document that moves up into the top (85 standard errors off on an 8-document query)."
            )
        if train.weights is not None and np.unique(train.weights).size > 1:
            deviations.append(
                "CatBoost ignores query weights in StochasticRank's derivatives (it uses them only in the leaf "
                "denominators); stochrank multiplies a query's gradients by its weight."
            )
        for text in deviations:
            warnings.warn(text, CatBoostDeviationWarning, stacklevel=3)
        params["loss_function"] = loss
        sglb = self._sglb()
        if sglb is not None:
            params.update(
                langevin=True,
                diffusion_temperature=sglb.temperature,
                model_shrink_rate=sglb.rate,
                model_shrink_mode="Constant" if sglb.shrink_mode == "constant" else "Decreasing",
            )
        model = CatBoost(params)
        model.fit(train.catboost_pool(), eval_set=None if valid is None else valid.catboost_pool())
        self.model_ = model
        self.loss_function_ = loss
        self.catboost_params_ = params
        self.best_iteration_ = model.get_best_iteration() if valid is not None else None
        self.evals_result_ = model.get_evals_result()
        self.timing_ = {}

    def _fit_external(self, train: _RankingData, valid: _RankingData | None, params: dict[str, Any]) -> None:
        from catboost import CatBoost, Pool, sum_models
        from catboost.utils import eval_metric

        n = train.labels.size
        lr = float(params.pop("learning_rate"))
        iterations = int(params.pop("iterations"))
        seed = int(params.pop("random_seed"))
        metric = params.pop("eval_metric")
        patience = params.pop("early_stopping_rounds", None)
        use_best = bool(params.pop("use_best_model", valid is not None)) and valid is not None
        verbose = params.pop("verbose", False)
        every = int(verbose)  # True: every iteration; n: every n-th
        for key in ("logging_level", "silent", "metric_period"):  # the trees are fitted silently
            params.pop(key, None)
        predict_threads = params.get("thread_count", 1)
        quantization = {key: params.pop(key) for key in _QUANTIZATION if key in params}

        pool = Pool(train.dense_features("X"), label=_encode_rows(np.arange(n)))
        pool.quantize(**quantization)
        table = _GradientTable(n)
        tree_params = dict(
            params, iterations=1, learning_rate=lr, loss_function=table, eval_metric="RMSE",
            leaf_estimation_method="Newton", leaf_estimation_iterations=1, boost_from_average=False,
            verbose=False,
        )  # fmt: skip
        target = RankingTarget(train.labels, train.sizes, train.weights, learning_rate=lr)
        preds = np.zeros(n)
        if valid is not None:
            eval_pool = Pool(valid.dense_features("eval_set"))
            eval_preds = np.zeros(valid.labels.size)
            eval_groups = valid.query_index
            eval_weights = None if valid.weights is None else np.repeat(valid.weights, valid.sizes)
        trees: list[Any] = []
        history: list[float] = []
        best, best_score = -1, -math.inf
        seconds = {"objective": 0.0, "tree": 0.0, "predict": 0.0}
        for it in range(iterations):
            t0 = time.perf_counter()
            grad, hess = self.objective(preds, target)
            t1 = time.perf_counter()
            table.table[:, 0] = -np.asarray(grad, dtype=np.float64)
            table.table[:, 1] = -np.asarray(hess, dtype=np.float64)
            tree = CatBoost(dict(tree_params, random_seed=seed + it))
            tree.fit(pool)
            t2 = time.perf_counter()
            preds += tree.predict(pool, prediction_type="RawFormulaVal", thread_count=predict_threads)
            trees.append(tree)
            if valid is not None:
                eval_preds += tree.predict(
                    eval_pool, prediction_type="RawFormulaVal", thread_count=predict_threads
                )
                score = eval_metric(
                    valid.labels, eval_preds, metric, weight=None, group_id=eval_groups, group_weight=eval_weights,
                    thread_count=predict_threads,
                )[0]  # fmt: skip
                history.append(score)
                if score > best_score:
                    best, best_score = it, score
            t3 = time.perf_counter()
            seconds["objective"] += t1 - t0
            seconds["tree"] += t2 - t1
            seconds["predict"] += t3 - t2
            if every and (it % every == 0 or it == iterations - 1):
                shown = f", {metric} {history[-1]:.5f} (best {best_score:.5f} at {best})" if history else ""
                print(f"{it}: trees {len(trees)}{shown}")
            if patience is not None and it - best >= patience:
                break
        kept = best + 1 if use_best else len(trees)
        # Trees were fitted to the SGLB model divided by C_t (the objective's rescaling); weighting them by
        # C of the last kept iteration makes the merged model predict the SGLB scores F themselves.
        scale = 1.0
        sglb = self._sglb()
        if sglb is not None:
            for t in range(kept):
                scale *= sglb.shrink(t, lr)
        self.model_ = sum_models(trees[:kept], weights=[scale] * kept)
        self.loss_function_ = None
        self.catboost_params_ = dict(tree_params, loss_function="<stochrank gradient table>")
        self.best_iteration_ = best if valid is not None else None
        self.evals_result_ = {"validation": {metric: history}} if valid is not None else {}
        self.timing_ = dict(seconds, iterations=len(trees))

    # ------------------------------------------------------------------------------------ prediction
    def _fitted(self) -> Any:
        if not hasattr(self, "model_"):
            raise ValueError("This CatBoostRanker is not fitted yet: call fit(X, y, group_id=...) first.")
        return self.model_

    @property
    def tree_count_(self) -> int:
        """Trees in the fitted model (after early stopping: the best iteration + 1)."""
        return int(self._fitted().tree_count_)

    def predict(self, X: Any) -> np.ndarray:
        """Ranking scores (CatBoost's ``RawFormulaVal``) for an array-like or a ``catboost.Pool``."""
        return np.asarray(self._fitted().predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)

    def score(self, X: Any, y: Any = None, *, group_id: Any = None, group: Any = None) -> float:
        """Mean NDCG@k over queries, k the objective's cut-off (None: whole list).

        CatBoost's conventions (those of ``catboost.CatBoostRanker.score``): worst-case ties, a query
        without relevant documents scores 1; gain and discount the objective's for NDCG/DCG/lso, else
        exponential gain and log discount.
        """
        from ..metrics import ndcg

        data = _RankingData.of(X, y, group_id, group, None, "X", read_weights=False)
        scores = self.predict(X if data.pool is None else data.pool)
        config = self.objective.parameters() if isinstance(self.objective, RankingObjective) else {}
        k = config.get("k", getattr(self.objective, "k", None))
        return float(
            ndcg(data.labels, scores, data.sizes, k=k, gain=config.get("gain", "exp"),
                 discount=config.get("discount", "log"), ties="worst", empty="one")
        )  # fmt: skip
