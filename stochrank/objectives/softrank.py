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

import dataclasses
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .._parallel import run_parallel
from .._validation import check_choice, check_labels, check_scores
from ..conventions import (
    GainKind,
    check_graded_labels,
    gains,
    ndcg_scaling,
    offsets_from_sizes,
    position_weights,
)
from ..kernels import add_spread_gradient, softrank_batch
from ..protocol import BoosterCall, DatasetInfo, training_features
from ._base import UNIT_HESSIAN, Ascent, FloatArray, RankingObjective
from ._docs import documented
from ._run import DatasetRuns
from ._softrank_config import SoftRankConfig, TrainDiscount
from ._softrank_start import collapse_hint, linear_direction, spreads
from ._variance import OWNER, VarianceModel, check_features, check_zero_variance, variances
from .constructors import ndcg
from .sglb import SGLB
from .stochastic_rank import StochasticRankObjective

__all__ = ["SoftRankConfig", "SoftRankObjective", "VarianceModel", "softrank"]


class _Encoding(NamedTuple):
    """Per-dataset arrays of a SoftRank objective.

    Gains (zero in queries whose NDCG cannot change), training discount, 1/IDCG per query, score variance
    per document, and the kernel's work size.
    """

    gain: FloatArray
    pos_weight: FloatArray
    query_scale: FloatArray
    variance: FloatArray
    work: int
    shortest: int  # documents in the shortest query whose NDCG can change (0: none)


class SoftRankObjective(RankingObjective[_Encoding]):
    """The exact SoftRank objective (SoftNDCG@k); build one with :func:`softrank`.

    Works in ``lgb.train``, ``LGBMRanker``, ``xgb.train``, ``stochrank.xgboost.XGBRanker`` like every
    stochrank objective (see :class:`~._base.RankingObjective`): the booster minimises
    ``-w_q ∂SoftNDCG/∂f`` with a unit Hessian ``w_q``. The score variances are fixed for a training set
    and computed once (from the features, for a variance model).

    Parameters
    ----------
    config : SoftRankConfig
    sglb : SGLB or None
    """

    def __init__(self, config: SoftRankConfig, sglb: SGLB | None = None) -> None:
        if not isinstance(config, SoftRankConfig):
            raise TypeError(f"'config' must be a SoftRankConfig; got {config!r}.")
        if sglb is not None and not isinstance(sglb, SGLB):
            raise TypeError(
                f"The 'sglb' parameter of {OWNER} must be stochrank.SGLB(...) or None; got {sglb!r}."
            )
        super().__init__()
        # Validated again: this is also the path of deep copies and unpickling (LightGBM deep-copies the
        # objective for every run), whose arrays come back writeable and whose fields bypassed the checks.
        self.config = dataclasses.replace(config)
        self._sglb = sglb

    # ------------------------------------------------------------------ configuration
    def _config(self) -> tuple[SoftRankConfig, SGLB | None]:
        return (self.config, self._sglb)

    @property
    def metric(self) -> str:
        """Always ``'ndcg'`` (SoftNDCG)."""
        return "ndcg"

    @property
    def k(self) -> int | None:
        """The cut-off (None: the whole list)."""
        return self.config.k

    @property
    def seed(self) -> int:
        """Seed of SGLB's Langevin noise (the exact method draws nothing)."""
        return self.config.seed

    @property
    def sglb(self) -> SGLB | None:
        """SGLB settings, or None."""
        return self._sglb

    def with_sglb(self, sglb: SGLB | None) -> SoftRankObjective:
        """Return a copy with other SGLB settings."""
        return SoftRankObjective(self.config, sglb)

    def _constructor_name(self) -> str:
        return "softrank"

    def __repr__(self) -> str:
        """Show the constructor call that builds an equal objective."""
        fields = ", ".join(
            f"{f.name}={getattr(self.config, f.name)!r}" for f in dataclasses.fields(SoftRankConfig)
        )
        return f"stochrank.softrank({fields}, sglb={self._sglb!r})"

    # ------------------------------------------------------------------ encoding
    def _encode(self, labels: FloatArray, offsets: npt.NDArray[np.int64], variance: FloatArray) -> _Encoding:
        k = self.config.k
        sizes = np.diff(offsets)
        gain = gains(check_graded_labels(labels, self.config.gain, OWNER), self.config.gain)
        assert self.config.train_discount is not None  # resolved by SoftRankConfig
        pos_weight = position_weights(self.config.train_discount, int(sizes.max()) + 1, k)
        scale, active = ndcg_scaling(gain, offsets, pos_weight)
        # SoftRank's marginals are not exactly doubly stochastic, so a query of equal labels would get a
        # (spurious) gradient: queries whose NDCG cannot change are left out by zeroing their gains.
        gain = np.where(np.repeat(active, sizes), gain, 0.0)
        check_zero_variance(variance, offsets, active)
        eff = np.minimum(sizes, sizes if k is None else k)
        shortest = int(sizes[active].min()) if active.any() else 0
        return _Encoding(gain, pos_weight, scale, variance, int(np.sum(sizes * eff)), shortest)

    def _prepare(self, booster_call: BoosterCall[DatasetRuns[_Encoding]]) -> _Encoding:
        info = booster_call.info
        spec = self.config.variance
        features, why = (None, "")
        if spec is not None and not isinstance(spec, (float, np.ndarray)):  # a variance model
            features, why = training_features(booster_call.source)
        variance = variances(spec, self.config.sigma, info.labels.size, features, why)
        return self._encode(info.labels, info.offsets, variance)

    # ------------------------------------------------------------------ gradients
    def _variance(self, scores: FloatArray, offsets: npt.NDArray[np.int64], enc: _Encoding) -> FloatArray:
        """Per-document variances: fixed, or σ² times the query's squared spread (``relative_sigma``)."""
        if not self.config.relative_sigma:
            return enc.variance
        return np.repeat(self.config.base_variance * spreads(scores, offsets) ** 2, np.diff(offsets))

    def _batch(
        self, scores: FloatArray, offsets: npt.NDArray[np.int64], enc: _Encoding
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        k = self.config.k
        values = np.empty(offsets.size - 1)
        d_mean = np.empty(scores.size)
        d_var = np.empty(scores.size)
        variance = self._variance(scores, offsets, enc)
        run_parallel(
            softrank_batch, enc.work,
            scores, variance, enc.gain, offsets, enc.pos_weight, -1 if k is None else k, enc.query_scale,
            values, d_mean, d_var,
        )  # fmt: skip
        if self.config.relative_sigma:  # the variances move with the scores: their path is in the gradient
            base = self.config.base_variance
            run_parallel(add_spread_gradient, scores.size, scores, offsets, base, d_var, d_mean)
        return values, d_mean, d_var

    def _ascent(self, scores: FloatArray, info: DatasetInfo, encoding: _Encoding, call: int) -> Ascent:
        offsets = info.offsets
        # the start direction uses absolute variances: relative ones make its steps ~ 1/spread, huge at first
        variance = (
            np.full(scores.size, self.config.base_variance)
            if self.config.relative_sigma
            else encoding.variance
        )
        if call < self.config.warmup:
            direction = linear_direction(scores, variance, encoding.gain, offsets, encoding.query_scale)
            return Ascent(direction, UNIT_HESSIAN)
        d_mean = self._batch(scores, offsets, encoding)[1]
        if self.config.relative_sigma:  # a query with equal scores has no spread to be relative to
            tied = (spreads(scores, offsets) == 0.0) & (encoding.query_scale > 0.0)
            if tied.any():
                scale = np.where(tied, encoding.query_scale, 0.0)
                start = linear_direction(scores, variance, encoding.gain, offsets, scale)
                d_mean = np.where(np.repeat(tied, np.diff(offsets)), start, d_mean)
        return Ascent(d_mean, UNIT_HESSIAN)

    def _gradient_scale(self, encoding: _Encoding) -> float:
        return float(np.max(encoding.query_scale, initial=0.0))

    def _collapse_hint(self, encoding: _Encoding) -> str:
        return collapse_hint(encoding.shortest, self.config.k)

    def value_and_gradient(
        self, scores: Any, labels: Any, group: Any, *, X: Any = None
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        r"""SoftNDCG@k per query and its exact gradient with respect to every score mean and variance.

        Returns ``(values, d_mean, d_var)``: ``values[q]`` the training SoftNDCG of query q (0 for
        queries whose NDCG cannot change: one document, equal labels, no gain), ``d_mean`` =
        :math:`\partial\,\mathrm{SoftNDCG}/\partial f_j` (the ascent direction a booster gets, before
        weights; with ``relative_sigma`` it includes the spread's path) and ``d_var`` =
        :math:`\partial\,\mathrm{SoftNDCG}/\partial v_j`. ``X`` (the features,
        2-D, one row per document) is needed only with a variance model.
        """
        labels = check_labels(labels, None, OWNER, low=-np.inf)
        scores = check_scores(scores, labels.size)
        offsets = offsets_from_sizes(group, labels.size)
        features = None if X is None else check_features(X, labels.size)
        variance = variances(self.config.variance, self.config.sigma, labels.size, features, "no X was given")
        return self._batch(scores, offsets, self._encode(labels, offsets, variance))


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
    variance: float | FloatArray | VarianceModel | None = None,
    gain: GainKind = "exp",
    discount: Literal["log", "position"] = "log",
    train_discount: TrainDiscount | None = None,
    relative_sigma: bool = False,
    warmup: int = 0,
    method: Literal["exact", "ccs"] = "exact",
    n_samples: int = 1,
    seed: int = 0,
    sglb: SGLB | None = None,
) -> SoftRankObjective | StochasticRankObjective:
    r"""SoftRank objective (Taylor et al., WSDM 2008): maximise SoftNDCG@k with its exact gradient.

    SoftNDCG@k is the expected NDCG@k under Gaussian score uncertainty.

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
    relative_sigma : bool, default False
        Make σ relative to each query's current score spread: :math:`v_j = \sigma^2 s_q^2` with
        :math:`s_q` the root-mean-square deviation of query q's scores from their mean. SoftNDCG is then
        invariant to scaling a query's scores, so it does not vanish while boosting's scores are small
        (see "Long queries"). Needs a constant σ.
    warmup : int, default 0
        Number of booster calls at the start of each run that follow the whole-list linear SoftNDCG
        instead (see "Long queries"); with ``relative_sigma``, a query whose scores are all equal follows
        it at every call.
    method : {'exact', 'ccs'}
        ``'exact'``: the SoftRank recursion, O(n²·k) per query and call. ``'ccs'``: instead return
        ``stochrank.ndcg(k, sigma=σ, mu=0, sfa=0, hessian='unit', ...)``, the coordinate-conditional-sampling
        estimate of the gradient of :math:`E[\mathrm{NDCG@k}(f + \sigma\varepsilon)]` — what the
        StochasticRank paper used as its SoftRank baseline ("for SoftRank we used CCS to estimate gradients",
        §7.2). It has no relevance shift (μ = 0: SoftRank's smoothing is unshifted) and no scale-free
        acceleration (SFA was one of StochasticRank's own additions; the paper's SoftRank row matches its
        plain-CCS ablation, Table 3). Its cost is O(n·k) per query per sample; it needs a constant variance
        and a 'log'/'position' training discount. Note that CCS smooths the exact Gaussian ranking
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

    **Long queries.** SoftRank treats the comparisons "i beats j" as independent, so among equal scores
    (every booster's start) a document's rank is Binomial(n − 1, ½) and
    :math:`P(r < k) = 2^{-(n-1)}\sum_{r<k}\binom{n-1}{r}` — about 1e-52 for n = 200, k = 5 (a random
    permutation gives k/n). SoftNDCG@k's gradient then underflows, the booster finds no split and keeps a
    constant model; the first call raises :class:`stochrank.StartWarning`. The remedy,
    ``softrank(k, relative_sigma=True, warmup=100)``:

    * ``warmup=W``: the first W booster calls of a run follow the gradient of the whole-list SoftNDCG with
      the linear discount :math:`D(r) = 1 - r/n` (at the variances σ², scaled by 1/IDCG@k), which depends
      on the rank laws only through :math:`E[r_j] = \sum_i \pi_{ij}` and never vanishes (at small scores
      it is close to the centred gains: a pointwise start);
    * ``relative_sigma=True``: :math:`v_j = \sigma^2 s_q^2`,
      :math:`s_q^2 = \frac1n\sum_{i\in q}(f_i - \bar f_q)^2`, so SoftNDCG@k is invariant to scaling a
      query's scores and stays sharp however small boosting keeps them; its exact gradient adds the
      spread's path, :math:`\frac{d}{df_i} = \frac{\partial}{\partial f_i} + \big(\sum_{j\in q}
      \frac{\partial}{\partial v_j}\big)\,\sigma^2\,\frac{2(f_i - \bar f_q)}{n}`. A query whose
      scores are all equal has no spread and follows the whole-list linear direction.

    Measured (``python benchmarks/softrank_long_queries.py``, ``benchmarks/RESULTS.md``; LightGBM,
    synthetic queries of 100-300 documents): the default stops at a constant-like model, the remedy
    trains far above a random ranking, and the CCS estimate (``stochrank.ndcg(k)`` or ``method='ccs'``),
    which needs no remedy, is better still. With ``relative_sigma`` alone (no warm-up) the steps are
    :math:`\propto 1/s_q`, huge while the scores are tiny; with a warm-up of the relative linear SoftNDCG
    they are too (measured: NDCG@5 0.29-0.30, below one tree of the absolute one), hence the absolute
    warm-up.

    **Variance.** Variances are fixed during boosting (the booster only moves the means). With a
    constant σ, what matters is σ against the score scale. Two documents of one query with zero variance
    would compare by a step with no gradient, so that is rejected.
    """
    config = SoftRankConfig(
        k, sigma, variance, gain, discount, train_discount, seed, relative_sigma=relative_sigma, warmup=warmup
    )
    if check_choice(method, "method", OWNER, ("exact", "ccs")) == "exact":
        if n_samples != 1:
            raise ValueError(
                f"n_samples of {OWNER} applies to method='ccs' only: the exact method draws no samples."
            )
        return SoftRankObjective(config, sglb)
    if config.relative_sigma or config.warmup:
        raise ValueError(
            f"relative_sigma and warmup of {OWNER} apply to method='exact' only: the CCS estimate does not "
            f"vanish at equal scores (got relative_sigma={config.relative_sigma}, warmup={config.warmup})."
        )
    if config.variance is not None and not isinstance(config.variance, float):
        raise ValueError(
            f"{OWNER}(method='ccs') needs a constant variance (sigma=... or variance=<float>): the CCS "
            "kernel smooths every document with the same noise scale. Use method='exact' for per-document "
            "variances."
        )
    if config.train_discount == "linear":
        raise ValueError(
            f"{OWNER}(method='ccs') supports train_discount 'log' and 'position' (stochrank.ndcg's); "
            "use method='exact' for the linear discount."
        )
    ccs_sigma = config.sigma if config.variance is None else float(np.sqrt(config.variance))
    assert ccs_sigma is not None
    assert config.train_discount is not None  # resolved by SoftRankConfig
    return ndcg(
        config.k, sigma=ccs_sigma, mu=0.0, sfa=0.0, hessian="unit", n_samples=n_samples, seed=seed,
        gain=config.gain, discount=config.train_discount, sglb=sglb,
    )  # fmt: skip
