r"""SoftRank (Taylor et al., WSDM 2008): exact SoftNDCG and its gradient as a boosting objective.

Each document's score is Gaussian, :math:`S_j \sim N(f_j, v_j)`, with the booster's score as mean and a
variance that is a constant :math:`\sigma^2`, one value per training row, or a fitted model's predictive
variance (a Gaussian process, as in GP-Rank / FITC-Rank, Guiver & Snelson, SIGIR 2008). SoftRank turns
the pairwise probabilities :math:`\pi_{ij} = \Phi((f_i - f_j)/\sqrt{v_i + v_j})` into rank distributions
:math:`p_j(r)` by the exact recursion over independent pairwise comparisons (no sampling), and
maximises

.. math:: \mathrm{SoftNDCG@k} = \frac{1}{\mathrm{IDCG@k}} \sum_j g(r_j) \sum_{r<k} p_j(r)\, D(r),

whose gradient is obtained by differentiating the recursion (:mod:`stochrank.kernels.softrank`). Cost:
O(n²·k) per query and call (O(n³) with ``k=None``); see :func:`softrank` for where that becomes slow.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .._discounts import position_weights
from .._parallel import run_parallel
from .._validation import (
    as_float_array,
    check_choice,
    check_int,
    check_labels,
    check_real,
    check_scores,
    check_variances,
    offsets_from_sizes,
)
from ..adapters._dispatch import BoosterCall, training_features
from ..kernels import ideal_dcg, softrank_batch, varying_queries
from ._base import RankingObjective, documented
from .sglb import SGLB
from .stochastic_rank import StochasticRankObjective, _check_seed, ndcg

__all__ = ["SoftRankObjective", "VarianceModel", "softrank"]

_OWNER = "stochrank.softrank"


@runtime_checkable
class VarianceModel(Protocol):
    """A fitted regressor with scikit-learn's Gaussian-process ``predict`` protocol (e.g.
    ``sklearn.gaussian_process.GaussianProcessRegressor``, ``stochrank.gp`` models)."""

    def predict(self, X: Any, return_std: bool = ...) -> Any: ...


@dataclass(frozen=True)
class _Encoding:
    """Per-dataset arrays: gains (zero in queries whose NDCG cannot change), training discount,
    1/IDCG per query, score variance per document, and the kernel's work size."""

    gain: np.ndarray
    pos_weight: np.ndarray
    query_scale: np.ndarray
    variance: np.ndarray
    work: int


def _check_variance_array(variance: Any) -> np.ndarray:
    """A validated, read-only float64 copy of a per-row variance array (nobody can change it afterwards)."""
    arr = np.asarray(variance)
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"The 'variance' parameter of {_OWNER} must be a float, a 1-D array of floats (one per training "
            "row) or a fitted model with predict(X, return_std=True); got "
            f"{type(variance).__name__}{' of ' + str(arr.dtype) if arr.ndim else ''}."
        )
    frozen = np.array(check_variances(arr, what=f"The 'variance' array of {_OWNER}"), copy=True)
    frozen.flags.writeable = False
    return frozen


def _check_variance_model(model: Any) -> VarianceModel:
    """A variance model must be a fitted instance: fail here, not at the booster's first call."""
    if inspect.isclass(model):
        raise TypeError(
            f"The 'variance' parameter of {_OWNER} got the class {model.__name__}, not a fitted model: pass "
            f"an instance fitted on your features, e.g. variance={model.__name__}(...).fit(X, y)."
        )
    # scikit-learn's rule (an unfitted GaussianProcessRegressor predicts from its prior and passes); an
    # object with predict() only is not an estimator and cannot be checked
    if hasattr(model, "fit"):
        # Imported here: only variance models need scikit-learn, and `import stochrank` stays light.
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(model)
        except NotFittedError as exc:
            raise NotFittedError(
                f"The 'variance' model of {_OWNER} is not fitted ({exc}) Fit it on your features first: "
                f"variance={type(model).__name__}(...).fit(X, y)."
            ) from None
    return model


class SoftRankObjective(RankingObjective):
    """The exact SoftRank objective (SoftNDCG@k); build one with :func:`softrank`.

    Works in ``lgb.train``, ``LGBMRanker``, ``xgb.train``, ``stochrank.xgboost.XGBRanker`` like every
    stochrank objective (see :class:`~._base.RankingObjective`): the booster minimises
    ``-w_q ∂SoftNDCG/∂f`` with a unit Hessian ``w_q``. The score variances are fixed for a training set
    and computed once (from the features, for a variance model).
    """

    _constructor = "softrank"

    def __init__(self, metric: str, **config: Any) -> None:
        # softrank() checks the variance too, but this is also the path of deep copies and unpickling
        # (LightGBM deep-copies the objective for every run), whose arrays come back writeable: validate
        # and freeze them again so that a copy cannot carry variances that bypassed the checks.
        spec = config.get("variance")
        if isinstance(spec, np.ndarray):
            config["variance"] = _check_variance_array(spec)
        elif spec is not None and not isinstance(spec, float):
            config["variance"] = _check_variance_model(spec)
        super().__init__(metric, **config)

    # ------------------------------------------------------------------ encoding
    def _variance(self, n: int, features: Any, why_none: str) -> np.ndarray:
        """One score variance per document, validated (values and length)."""
        spec = self._config["variance"]
        if spec is None:
            return np.full(n, self._config["sigma"] ** 2)
        if isinstance(spec, float):
            return np.full(n, spec)
        if isinstance(spec, np.ndarray):
            if spec.size != n:
                raise ValueError(
                    f"The 'variance' array of {_OWNER} has {spec.size} entries but the training set has {n} "
                    "rows: pass one variance per training row, in row order (an array cannot follow lgb.cv's "
                    "folds; use a constant or a variance model there)."
                )
            return spec
        if features is None:
            raise ValueError(
                f"{_OWNER}(variance=<model>) computes the variances from the training features, but {why_none}. "
                "Compute them yourself and pass the array: variance=model.predict(X, return_std=True)[1] ** 2 "
                "(X the training features in row order)."
            )
        if features.shape[0] != n:
            raise ValueError(f"The training set has {features.shape[0]} feature rows but {n} labels.")
        if np.isnan(features).any():
            raise ValueError(
                "The training features have missing values (NaN), which the variance model cannot take. Pass "
                "variance=model.predict(X, return_std=True)[1] ** 2 computed on features without missing values."
            )
        predicted = spec.predict(features, return_std=True)
        if not (isinstance(predicted, tuple) and len(predicted) == 2):
            raise TypeError(
                f"variance model {type(spec).__name__}.predict(X, return_std=True) must return (mean, std), "
                f"scikit-learn's Gaussian-process protocol; got {type(predicted).__name__}."
            )
        std = as_float_array(predicted[1], "the variance model's predicted std", n)
        return check_variances(std * std, n, what="The variance model's predicted variance")

    def _encode(self, labels: np.ndarray, offsets: np.ndarray, variance: np.ndarray) -> _Encoding:
        k = self._config["k"]
        sizes = np.diff(offsets)
        gain = self._gains(labels)
        pos_weight = position_weights(self._config["train_discount"], int(sizes.max()) + 1, k)
        kk = -1 if k is None else k
        idcg = run_parallel(ideal_dcg, labels.size, gain, offsets, pos_weight, kk)
        active = run_parallel(varying_queries, labels.size, gain, np.ones(labels.size), offsets, 2) & (
            idcg > 0
        )
        scale = np.zeros(sizes.size)
        scale[active] = 1.0 / idcg[active]
        # SoftRank's marginals are not exactly doubly stochastic, so a query of equal labels would get a
        # (spurious) gradient: queries whose NDCG cannot change are left out by zeroing their gains.
        gain = np.where(np.repeat(active, sizes), gain, 0.0)
        self._check_zero_variance(variance, offsets, active)
        eff = np.minimum(sizes, sizes if k is None else k)
        return _Encoding(gain, pos_weight, scale, variance, int(np.sum(sizes * eff)))

    @staticmethod
    def _check_zero_variance(variance: np.ndarray, offsets: np.ndarray, active: np.ndarray) -> None:
        zero = variance == 0.0
        if not zero.any():
            return
        per_query = np.add.reduceat(zero.astype(np.int64), offsets[:-1]) if zero.size else zero
        bad = np.flatnonzero((per_query >= 2) & active)
        if bad.size:
            q = int(bad[0])
            rows = offsets[q] + np.flatnonzero(zero[offsets[q] : offsets[q + 1]])[:2]
            raise ValueError(
                f"Rows {rows[0]} and {rows[1]} (query {q}) both have score variance 0: their SoftRank pairwise "
                "probability is then a step in the score difference, with no gradient and undefined at a tie "
                "(where boosting starts). Floor the variances, e.g. variance = np.maximum(variance, 1e-6)."
            )

    def _dataset_encoding(self, booster_call: BoosterCall) -> _Encoding:
        info = booster_call.info
        spec = self._config["variance"]
        features, why = (None, "")
        if spec is not None and not isinstance(spec, (float, np.ndarray)):  # a variance model
            features, why = training_features(booster_call.source)
        variance = self._variance(info.labels.size, features, why)
        return self._encode(info.labels, info.offsets, variance)

    # ------------------------------------------------------------------ gradients
    def _batch(
        self, scores: np.ndarray, offsets: np.ndarray, enc: _Encoding
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self._config["k"]
        values = np.empty(offsets.size - 1)
        d_mean = np.empty(scores.size)
        d_var = np.empty(scores.size)
        run_parallel(
            softrank_batch, enc.work,
            scores, enc.variance, enc.gain, offsets, enc.pos_weight, -1 if k is None else k, enc.query_scale,
            values, d_mean, d_var,
        )  # fmt: skip
        return values, d_mean, d_var

    def _ascent(
        self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, enc: _Encoding, call: int
    ) -> np.ndarray:
        return self._batch(scores, offsets, enc)[1]

    def value_and_gradient(
        self, scores: Any, labels: Any, group: Any, *, X: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""SoftNDCG@k per query and its exact gradient with respect to every score mean and variance.

        Returns ``(values, d_mean, d_var)``: ``values[q]`` the training SoftNDCG of query q (0 for
        queries whose NDCG cannot change: one document, equal labels, no gain), ``d_mean`` =
        :math:`\partial\,\mathrm{SoftNDCG}/\partial f_j` (the ascent direction a booster gets, before
        weights) and ``d_var`` = :math:`\partial\,\mathrm{SoftNDCG}/\partial v_j`. ``X`` (the features,
        2-D, one row per document) is needed only with a variance model.
        """
        labels = check_labels(labels, None, _OWNER, low=-np.inf)
        scores = check_scores(scores, labels.size)
        offsets = offsets_from_sizes(group, labels.size)
        features = None if X is None else _check_features(X, labels.size)
        variance = self._variance(labels.size, features, "no X was given")
        return self._batch(scores, offsets, self._encode(labels, offsets, variance))


def _check_features(X: Any, n: int) -> np.ndarray:
    """``X`` of :meth:`SoftRankObjective.value_and_gradient`: float64, 2-D, one row per document."""
    try:
        features = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"'X' must be a 2-D array of numeric features; got {type(X).__name__}: {exc}") from None
    if features.ndim != 2:
        raise ValueError(
            f"'X' must be 2-D (one row of features per document); got shape {features.shape}. "
            "For a single feature pass X.reshape(-1, 1)."
        )
    if features.shape[0] != n:
        raise ValueError(
            f"'X' has {features.shape[0]} rows but there are {n} documents (labels); pass the features of "
            "the same documents, row-aligned with scores and labels."
        )
    return features


# ---------------------------------------------------------------------- constructor
_COMMON_DOC = """
    k : int or None
        Truncation: only the top ``k`` positions count (``None``: the whole list). The rank
        distributions are truncated at k, so the cost per query and booster call is O(n²·k)."""


@documented(_COMMON_DOC)
def softrank(
    k: int | None = None,
    *,
    sigma: float | None = None,
    variance: float | np.ndarray | VarianceModel | None = None,
    gain: Literal["exp", "linear"] = "exp",
    discount: Literal["log", "position"] = "log",
    train_discount: Literal["log", "position", "linear"] | None = None,
    method: Literal["exact", "ccs"] = "exact",
    n_samples: int = 1,
    seed: int = 0,
    sglb: SGLB | None = None,
) -> SoftRankObjective | StochasticRankObjective:
    r"""SoftRank objective (Taylor et al., WSDM 2008): maximise SoftNDCG@k, the expected NDCG@k under
    Gaussian score uncertainty, with its exact gradient.

    Each document's score is :math:`N(f_j, v_j)` with f the booster's score;
    :math:`\pi_{ij} = \Phi((f_i - f_j)/\sqrt{v_i + v_j})` is the probability that i ranks above j. The
    rank distribution :math:`p_j(r)` of every document follows from the SoftRank recursion (rank = sum of
    independent pairwise Bernoullis, computed exactly, no sampling), and

    .. math:: \mathrm{SoftNDCG@k} = \frac{1}{\mathrm{IDCG@k}} \sum_j g(r_j) \sum_{r<k} p_j(r)\, D(r)

    with the *training* discount D. The gradient differentiates the recursion exactly (reverse mode).
    Queries whose NDCG cannot change (one document, all labels equal, nothing relevant) get zero gradient.

    Parameters
    ----------
    {common}
    sigma : float or None, default None
        Constant score standard deviation (SoftRank's smoothing σ_s); ``None`` means 1 unless
        ``variance`` is given. Only σ relative to the score scale matters: boosting grows the scores, so
        the smoothing sharpens as training goes on.
    variance : float, array or fitted model, optional
        Per-document score variance :math:`v_j` instead of σ²: a constant > 0; an array with one value
        >= 0 per training row (row order; at most one zero per query; kept as a read-only copy, also in
        deep copies and unpickled objectives); or a fitted model (checked at construction with
        scikit-learn's ``check_is_fitted``) with
        scikit-learn's Gaussian-process protocol ``predict(X, return_std=True) -> (mean, std)`` (a
        ``stochrank.gp`` model, ``sklearn.gaussian_process.GaussianProcessRegressor``), whose predictive
        variance std² is computed once from the training features. The features are read from an
        ``lgb.Dataset(..., free_raw_data=False)`` or an ``xgb.DMatrix``; elsewhere (``LGBMRanker``,
        raw-data-free Datasets, ``QuantileDMatrix``) pass ``variance=model.predict(X, return_std=True)[1]
        ** 2`` instead.
    gain : {'exp', 'linear'}
        :math:`2^r - 1` (default, as LightGBM's / XGBoost's ``ndcg``) or r.
    discount : {'log', 'position'}
        The evaluation discount :math:`1/\log_2(r+2)` or :math:`1/(r+1)` (0-based rank r); also the
        training discount unless ``train_discount`` is given.
    train_discount : {'log', 'position', 'linear'} or None
        Discount used in the training objective (and its IDCG). Taylor et al. found that training with a
        discount milder than the evaluation one generalises better, and Guiver & Snelson train with a
        linear one: ``'linear'`` is :math:`D(r) = 1 - r/k` (needs ``k``).
    method : {'exact', 'ccs'}
        ``'exact'``: the SoftRank recursion, O(n²·k) per query and call. ``'ccs'``: instead return
        ``stochrank.ndcg(k, sigma=σ, mu=0, sfa=0, ...)``, the coordinate-conditional-sampling estimate of
        the gradient of :math:`E[\mathrm{NDCG@k}(f + \sigma\varepsilon)]` — what the StochasticRank paper
        used as its SoftRank baseline ("for SoftRank we used CCS to estimate gradients", §7.2). It has no
        relevance shift (μ = 0: SoftRank's smoothing is unshifted) and no scale-free acceleration (SFA
        was one of StochasticRank's own additions; the paper's SoftRank row matches its plain-CCS
        ablation, Table 3). Its cost is O(n·k) per query per sample; it needs a constant variance and a
        'log'/'position' training discount. Note that CCS smooths the exact Gaussian ranking
        distribution, of which the SoftRank recursion is an approximation.
    n_samples : int, default 1
        Noise draws per call for ``method='ccs'`` (the exact method draws none).
    seed : int, default 0
        Seed of the CCS noise (``method='ccs'``) and of SGLB's Langevin noise.
    sglb : stochrank.SGLB or None
        Langevin noise and model shrinkage (paper §6 of StochasticRank), as for :func:`stochrank.ndcg`.

    Notes
    -----
    **Cost.** Only documents with a positive gain need their rank distribution, so a query costs
    O(n_rel·n·k) for the value and the gradient together, against O(n·k) for one CCS sample.
    Measured (``python benchmarks/softrank_cost.py``, 1 thread, quiet 2-vCPU machine; see
    ``benchmarks/RESULTS.md`` §7): with k = 10 a query of 100 documents takes 0.2 ms (55× one CCS
    sample), of 1,000 documents 22 ms (770×); the whole list (k=None) 0.4 ms at n = 100 and 0.27 s at
    n = 1,000. A booster call over 100k documents passes 1 s at about 500 documents per query with k = 10
    and about 170 with the whole list: beyond that (large queries) use a cut-off, or
    ``method='ccs'``, whose cost per document does not grow with n.

    **Hessian.** The booster gets a unit Hessian (times the query weight), as for StochasticRank: each
    leaf is the L2-shrunk mean SoftNDCG gradient, i.e. boosting does gradient ascent with the learning
    rate as step. SoftNDCG's exact Hessian is indefinite (it is a smooth but non-concave function of the
    scores), so a Newton leaf would divide by sign-changing curvature; a unit Hessian keeps
    ``min_sum_hessian_in_leaf`` / ``min_child_weight`` counting documents.

    **Variance.** Variances are fixed during boosting (the booster only moves the means). With a
    constant σ, what matters is σ against the score scale. Two documents of one query with zero variance
    would compare by a step with no gradient, so that is rejected.
    """
    cfg: dict[str, Any] = {
        "k": check_int(k, "k", _OWNER, low=1, none_ok=True, none_means="the whole list"),
        "gain": check_choice(gain, "gain", _OWNER, ("exp", "linear")),
        "discount": check_choice(discount, "discount", _OWNER, ("log", "position")),
    }
    chosen = discount if train_discount is None else train_discount
    cfg["train_discount"] = check_choice(chosen, "train_discount", _OWNER, ("log", "position", "linear"))
    if cfg["train_discount"] == "linear" and cfg["k"] is None:
        raise ValueError(
            f"train_discount='linear' of {_OWNER} is D(r) = 1 - r/k and needs a cut-off: pass k (e.g. k=10)."
        )
    method = check_choice(method, "method", _OWNER, ("exact", "ccs"))
    if sglb is not None and not isinstance(sglb, SGLB):
        raise TypeError(
            f"The 'sglb' parameter of {_OWNER} must be stochrank.SGLB(...) or None; got {sglb!r}."
        )
    if sigma is not None and variance is not None:
        raise ValueError(
            f"{_OWNER} takes either sigma (a constant standard deviation) or variance, not both. "
            "For a constant, sigma=s is the same as variance=s**2."
        )
    spec: float | np.ndarray | VarianceModel | None = None
    if variance is None:
        cfg["sigma"] = check_real(1.0 if sigma is None else sigma, "sigma", _OWNER, low=0.0, low_open=True)
    elif isinstance(variance, (int, float, np.floating, np.integer)) and not isinstance(variance, bool):
        spec = check_real(variance, "variance", _OWNER, low=0.0, low_open=True)
    elif isinstance(variance, VarianceModel) and not isinstance(variance, (np.ndarray, list, tuple)):
        spec = _check_variance_model(variance)
    else:
        spec = _check_variance_array(variance)
    if method == "ccs":
        if spec is not None and not isinstance(spec, float):
            raise ValueError(
                f"{_OWNER}(method='ccs') needs a constant variance (sigma=... or variance=<float>): the CCS "
                "kernel smooths every document with the same noise scale. Use method='exact' for per-document "
                "variances."
            )
        if cfg["train_discount"] == "linear":
            raise ValueError(
                f"{_OWNER}(method='ccs') supports train_discount 'log' and 'position' (stochrank.ndcg's); "
                "use method='exact' for the linear discount."
            )
        ccs_sigma = cfg.get("sigma") if spec is None else float(np.sqrt(spec))
        return ndcg(
            cfg["k"], sigma=ccs_sigma, mu=0.0, sfa=0.0, n_samples=n_samples, seed=seed, gain=cfg["gain"],
            discount=cfg["train_discount"], sglb=sglb,
        )  # fmt: skip
    if n_samples != 1:
        raise ValueError(
            f"n_samples of {_OWNER} applies to method='ccs' only: the exact method draws no samples."
        )
    cfg["sigma"] = cfg.get("sigma")
    cfg["variance"] = spec
    cfg["seed"] = _check_seed(seed, _OWNER)  # the exact method draws nothing; SGLB's noise uses it
    cfg["sglb"] = sglb
    return SoftRankObjective("ndcg", **cfg)
