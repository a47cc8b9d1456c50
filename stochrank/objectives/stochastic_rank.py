r"""StochasticRank objectives: configuration, per-dataset caches and the booster call.

One :class:`StochasticRankObjective` works unchanged as

* ``lgb.train({"objective": obj}, dataset)`` and ``lgb.cv`` — called as ``obj(preds, Dataset)``;
* ``lightgbm.LGBMRanker(objective=obj)`` — called as ``obj(y_true, y_pred, weight, group)``;
* ``xgb.train(params, dtrain, obj=obj)`` and ``xgb.cv`` — called as ``obj(preds, DMatrix)``;
* ``stochrank.xgboost.XGBRanker(objective=obj)``.

The booster call (caches, weights, run restarts, SGLB) is :class:`~._base.RankingObjective`'s; it
returns ``(grad, hess)`` for *minimisation*: ``grad = -w_q \hat\nabla E[M]`` (plus SGLB noise) and
``hess = w_q``.

**Why a unit Hessian.** The smoothed metric's Hessian is indefinite and its Monte-Carlo estimate is
noisier than the gradient's, so a Newton step would divide a noisy gradient by a noisy, sign-changing
curvature. A constant Hessian makes each leaf the (L2-shrunk) mean gradient of its documents,
``-sum(grad) / (count + lambda_l2)``: exactly CatBoost's ``leaf_estimation_method=Gradient``, which is
what StochasticRank was designed and proven with (SGLB's preconditioner). It is O(1), so LightGBM's
``min_sum_hessian_in_leaf`` and XGBoost's ``min_child_weight`` keep their usual meaning (one unit per
document). The learning rate is then the step size of plain gradient ascent on the smoothed metric.

**Weights.** Boosters do not apply weights to custom gradients; here a query weight multiplies both
the gradient and the Hessian of its documents, so a leaf is the weighted mean gradient. Weights must
be constant within a query (ranking metrics weight queries, not documents); a zero-weight query gets
zero gradient and Hessian and drops out of training. CatBoost ignores weights in StochasticRank's
derivatives and uses them only in the leaf denominator.

**Reproducibility.** The noise of query q at the t-th call on a dataset comes from its own stream
(seed, t, q): one seed gives bit-identical gradients for any thread count. LightGBM deep-copies the
objective for every training run; XGBoost does not, so a call whose predictions return to the first
call's on that DMatrix, after they had moved away, is recognised as the start of a new run and the call
counter restarts: training the same object twice gives the same model.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._discounts import position_weights
from .._parallel import run_parallel
from .._validation import (
    MAX_EXP_LABEL,
    check_choice,
    check_int,
    check_labels,
    check_real,
    check_scores,
    offsets_from_sizes,
    stop_probabilities,
)
from ..adapters._dispatch import BoosterCall, DatasetInfo
from ..kernels import KIND_FILTERED, KIND_LSO, KIND_RANKING, ideal_dcg, smoothed_gradient, varying_queries
from ._base import RankingObjective, documented
from .sglb import SGLB

__all__ = ["StochasticRankObjective", "dcg", "err", "lso", "mrr", "ndcg", "pfound"]

_SEED_LIMIT = 2**63

# Names people bring from CatBoost's loss string, with the stochrank name to use instead.
_CATBOOST_NAMES = {
    "num_estimations": "n_samples",
    "top": "k",
    "lambda": "sfa",
    "lambda_": "sfa",
    "type": "gain",
    "denominator": "discount",
    "random_seed": "seed",
    "border": "threshold",
}


@dataclass(frozen=True)
class _Encoding:
    """Per-dataset arrays the kernels need (labels are fixed for a dataset)."""

    gain: np.ndarray
    cont: np.ndarray
    query_scale: np.ndarray
    active: np.ndarray
    pos_weight: np.ndarray


class StochasticRankObjective(RankingObjective):
    r"""A StochasticRank objective: the booster gets ``-w_q`` times the coordinate-conditional-sampling
    estimate of :math:`\nabla_f E[M(f - \sigma\mu r + \sigma\varepsilon)]` (mean-removed, SFA-projected) and
    Hessian ``w_q``. Build one with :func:`ndcg`, :func:`dcg`, :func:`err`, :func:`pfound`, :func:`mrr` or
    :func:`lso`.

    Attributes are read-only configuration; per-dataset state (encoded labels, the call counter, SGLB
    shrinkage) lives in a cache keyed weakly by the training Dataset/DMatrix, which deep copies and
    pickles drop (see :class:`~._base.RankingObjective`).
    """

    # ------------------------------------------------------------------ encoding
    @property
    def _kind(self) -> int:
        if self._metric != "lso":
            return KIND_RANKING
        return KIND_LSO if self._config["order"] == "input" else KIND_FILTERED

    def _encode(self, labels: np.ndarray, offsets: np.ndarray) -> _Encoding:
        sizes = np.diff(offsets)
        max_n = int(sizes.max())
        k = self._config.get("k")
        metric = self._metric
        ones = np.ones(labels.size)
        if metric in ("ndcg", "dcg"):
            gain, cont = self._gains(labels), ones
            pos_weight = position_weights(self._config["discount"], max_n + 3, k)
        elif metric == "err":
            gain = stop_probabilities(labels, self._config["max_grade"], f"stochrank.{metric}")
            cont = 1.0 - gain
            pos_weight = position_weights("position", max_n + 3, k)
        elif metric == "pfound":
            gain = stop_probabilities(labels, self._config["max_grade"], f"stochrank.{metric}")
            cont = self._config["decay"] * (1.0 - gain)
            pos_weight = position_weights("none", max_n + 3, k)
        elif metric == "mrr":
            gain = (labels > self._config["threshold"]).astype(np.float64)
            cont = 1.0 - gain
            pos_weight = position_weights("position", max_n + 3, k)
        else:  # lso
            gain, cont = self._gains(labels), ones
            pos_weight = position_weights(self._config["discount"], max_n + 3, k)
        if self._kind == KIND_RANKING:
            active = run_parallel(varying_queries, labels.size, gain, cont, offsets, 2)
        else:
            active = np.maximum.reduceat(gain > 0, offsets[:-1]) if labels.size else np.zeros(0, bool)
        scale = np.ones(sizes.size)
        if metric == "ndcg":
            idcg = run_parallel(ideal_dcg, labels.size, gain, offsets, pos_weight, -1 if k is None else k)
            nonzero = idcg > 0
            scale[nonzero] = 1.0 / idcg[nonzero]
            active &= nonzero
        return _Encoding(gain, cont, scale, np.ascontiguousarray(active), pos_weight)

    # ------------------------------------------------------------------ gradients
    def _ascent(
        self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, enc: _Encoding, call: int
    ) -> np.ndarray:
        c = self._config
        k = c.get("k")
        out = np.empty(scores.size)
        run_parallel(
            smoothed_gradient,
            scores.size,
            scores, labels, enc.gain, enc.cont, enc.query_scale, enc.active, offsets, enc.pos_weight,
            -1 if k is None else k, self._kind, c["sigma"], c.get("mu", 0.0), c["nu"], c["sfa"],
            c["n_samples"], c["seed"], call, out,
        )  # fmt: skip
        return out

    def gradient(self, scores: Any, labels: Any, group: Any, *, call: int = 0) -> np.ndarray:
        r"""CCS estimate of :math:`\nabla_f E[M(f - \sigma\mu r + \sigma\varepsilon)]` for every document.

        The ascent direction of the smoothed metric (averaged over ``n_samples`` draws, mean-removed
        and SFA-projected as configured, 1/IDCG-scaled for NDCG), without weights or SGLB. ``call``
        selects the noise stream: the t-th booster call on a dataset uses ``call=t``.
        """
        labels = check_labels(labels, None, f"stochrank.{self._metric}", low=-np.inf)
        scores = check_scores(scores, labels.size)
        offsets = offsets_from_sizes(group, labels.size)
        check_int(call, "call", "gradient", low=0)
        return self._ascent(scores, labels, offsets, self._encode(labels, offsets), call)

    def _dataset_encoding(self, booster_call: BoosterCall) -> _Encoding:
        return self._encode(booster_call.info.labels, booster_call.info.offsets)

    def _check_start(self, info: DatasetInfo, preds: np.ndarray) -> None:
        if self._kind != KIND_RANKING and info.library == "xgboost" and preds.size and np.all(preds == 0.5):
            warnings.warn(
                "XGBoost starts every score at base_score=0.5, so lso() begins with every document shown. "
                "Pass base_score=0 to xgb.train (stochrank.xgboost.XGBRanker does this by default).",
                stacklevel=3,
            )


# ---------------------------------------------------------------------- constructors
def _common(
    owner: str,
    k: int | None,
    sigma: float,
    nu: float,
    sfa: float,
    n_samples: int,
    seed: int,
    sglb: SGLB | None,
) -> dict[str, Any]:
    if sglb is not None and not isinstance(sglb, SGLB):
        raise TypeError(f"The 'sglb' parameter of {owner} must be stochrank.SGLB(...) or None; got {sglb!r}.")
    return {
        "k": check_int(k, "k", owner, low=1, none_ok=True, none_means="the whole list"),
        "sigma": check_real(sigma, "sigma", owner, low=0.0, low_open=True),
        "nu": check_real(nu, "nu", owner, low=0.0, low_open=True),
        "sfa": check_real(sfa, "sfa", owner, low=0.0, high=1.0),
        "n_samples": check_int(n_samples, "n_samples", owner, low=1),
        "seed": _check_seed(seed, owner),
        "sglb": sglb,
    }


def _check_max_grade(max_grade: Any, owner: str) -> float | None:
    if max_grade is None:
        return None
    return check_real(max_grade, "max_grade", owner, low=0.0, high=MAX_EXP_LABEL, low_open=True)


def _check_seed(seed: Any, owner: str) -> int:
    value = check_int(seed, "seed", owner, low=0)
    if value >= _SEED_LIMIT:  # type: ignore[operator]
        raise ValueError(f"The 'seed' parameter of {owner} must be below 2**63; got {seed}.")
    return value  # type: ignore[return-value]


_COMMON_DOC = """
    k : int or None
        Truncation: only the top ``k`` positions count (``None``: the whole list, cost O(n^2) per
        query instead of O(n k)).
    sigma : float, default 1.0
        Noise scale: the metric is smoothed as E[M(f + sigma * eps)], eps ~ N(0, I). Only sigma
        relative to the score scale matters (M is scale free). With a unit Hessian and SFA the scores
        tend to stay far below sigma, i.e. training sees a heavily smoothed metric (measured in
        benchmarks/RESULTS.md §4); the learning rate and sigma together set how sharp it gets.
    nu : float, default 0.01
        SFA offset in ``(||f|| + nu)^2`` (paper §5.2; CatBoost's default).
    sfa : float, default 1.0 (0.0 for lso)
        Strength of the scale-free-acceleration projection (CatBoost's ``lambda``); 0 turns it off.
    n_samples : int, default 1
        Noise draws per query per call, averaged (CatBoost's ``num_estimations``).
    seed : int, default 0
        Seed of the per-(call, query) noise streams.
    sglb : stochrank.SGLB or None, default None
        Langevin noise and model shrinkage for global optimisation (paper §6)."""


_documented = documented(_COMMON_DOC, _CATBOOST_NAMES)


@_documented
def ndcg(
    k: int | None = None,
    *,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float = 1.0,
    n_samples: int = 1,
    seed: int = 0,
    gain: Literal["exp", "linear"] = "exp",
    discount: Literal["log", "position"] = "log",
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for NDCG@k.

    .. math:: \mathrm{NDCG@k} = \frac{1}{\mathrm{IDCG@k}} \sum_{p<k} \frac{\mathrm{gain}(r_{\pi(p)})}{\mathrm{disc}(p)}

    with gain :math:`2^r - 1` ('exp', the default: LightGBM's and XGBoost's ``ndcg@k``, the paper's eq. 1)
    or :math:`r` ('linear', CatBoost's default ``type=Base``), and discount :math:`\log_2(p+2)` ('log')
    or :math:`p+1` ('position'). The default is exp gain because the baselines stochrank is measured
    against (LambdaMART in LightGBM/XGBoost) report NDCG with it; CatBoost users who want its default
    pass ``gain='linear'``. Queries whose documents all have the same label have a constant NDCG and
    get zero gradient (as do queries with IDCG = 0).

    Parameters
    ----------
    {common}
    mu : float, default 0.0
        Relevance shift (paper §4.3): the noise is centred at ``-sigma * mu * label``, which makes the
        smoothing consistent with worst-case tie breaking as mu grows (the paper tunes mu in [0.01, 10]).
        0 is CatBoost's default.
    gain : {'exp', 'linear'}
    discount : {'log', 'position'}
    """
    owner = "stochrank.ndcg"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["mu"] = check_real(mu, "mu", owner, low=0.0)
    cfg["gain"] = check_choice(gain, "gain", owner, ("exp", "linear"))
    cfg["discount"] = check_choice(discount, "discount", owner, ("log", "position"))
    return StochasticRankObjective("ndcg", **cfg)


@_documented
def dcg(
    k: int | None = None,
    *,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float = 1.0,
    n_samples: int = 1,
    seed: int = 0,
    gain: Literal["exp", "linear"] = "exp",
    discount: Literal["log", "position"] = "log",
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for DCG@k (unnormalised NDCG: queries with more relevant documents
    weigh more).

    .. math:: \mathrm{DCG@k} = \sum_{p<k} \mathrm{gain}(r_{\pi(p)}) / \mathrm{disc}(p)

    Parameters
    ----------
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`ndcg`.
    gain : {'exp', 'linear'}
    discount : {'log', 'position'}
    """
    owner = "stochrank.dcg"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["mu"] = check_real(mu, "mu", owner, low=0.0)
    cfg["gain"] = check_choice(gain, "gain", owner, ("exp", "linear"))
    cfg["discount"] = check_choice(discount, "discount", owner, ("log", "position"))
    return StochasticRankObjective("dcg", **cfg)


@_documented
def err(
    k: int | None = None,
    *,
    max_grade: float | None = None,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float = 1.0,
    n_samples: int = 1,
    seed: int = 0,
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for Expected Reciprocal Rank (Chapelle et al., 2009).

    .. math:: \mathrm{ERR@k} = \sum_{p<k} \frac{R_{\pi(p)}}{p+1} \prod_{q<p} (1 - R_{\pi(q)})

    Parameters
    ----------
    max_grade : float or None, default None
        None: labels are the probabilities R and must lie in [0, 1] (CatBoost's convention). A number G:
        graded labels r in [0, G] map to :math:`R = (2^r - 1)/2^G` (Chapelle's).
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`ndcg` (applied to the raw label).

    Notes
    -----
    Deliberately not CatBoost's ``StochasticRank:metric=ERR``: CatBoost's closed-form ERR difference for
    moving a document down carries a spurious factor (p'+2)/(p'+1), and with ``top`` < n it subtracts the
    document pushed out of the top with the wrong weight, so its Der1 is not the gradient of smoothed ERR
    (``tests/test_catboost_parity.py`` shows both, against re-evaluating the metric). stochrank's
    differences are exact (tested against brute force).
    """
    owner = "stochrank.err"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["max_grade"] = _check_max_grade(max_grade, owner)
    cfg["mu"] = check_real(mu, "mu", owner, low=0.0)
    return StochasticRankObjective("err", **cfg)


@_documented
def pfound(
    k: int | None = None,
    *,
    decay: float = 0.85,
    max_grade: float | None = None,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float = 1.0,
    n_samples: int = 1,
    seed: int = 0,
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for Yandex's pFound (Segalovich, 2010).

    .. math:: \mathrm{pFound@k} = \sum_{p<k} R_{\pi(p)}\, \mathrm{pLook}_p, \quad
              \mathrm{pLook}_0 = 1,\ \mathrm{pLook}_p = \mathrm{pLook}_{p-1}\, \mathrm{decay}\,(1 - R_{\pi(p-1)})

    Parameters
    ----------
    decay : float in [0, 1], default 0.85
        Probability of looking further after an unsatisfying document (CatBoost's default).
    max_grade : float or None, default None
        As in :func:`err`.
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`ndcg`.

    Notes
    -----
    Matches CatBoost's ``StochasticRank:metric=PFound`` except with ``top`` < n and labels exactly 1, where
    CatBoost's difference formula misses the document that moves up into the top (see
    ``tests/test_catboost_parity.py``); stochrank's is exact.
    """
    owner = "stochrank.pfound"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["decay"] = check_real(decay, "decay", owner, low=0.0, high=1.0)
    cfg["max_grade"] = _check_max_grade(max_grade, owner)
    cfg["mu"] = check_real(mu, "mu", owner, low=0.0)
    return StochasticRankObjective("pfound", **cfg)


@_documented
def mrr(
    k: int | None = None,
    *,
    threshold: float = 0.0,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float = 1.0,
    n_samples: int = 1,
    seed: int = 0,
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for Mean Reciprocal Rank: :math:`1/(1 + p)` for the position p of the
    first relevant document, 0 if p >= k.

    MRR is ERR with 0/1 probabilities, and runs through the same kernel: past the first relevant
    document nothing counts, so a sample costs O(n log n + n min(k, p_1)).

    Parameters
    ----------
    threshold : float, default 0.0
        A document is relevant when its label is > threshold (CatBoost's objective uses > 0; its MRR
        *eval* metric uses border 0.5).
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`ndcg`.

    Notes
    -----
    CatBoost's ``StochasticRank:metric=MRR;top=K`` ignores the cut-off in its metric differences (it is
    the gradient of full-list MRR); ``mrr(k=K)`` is the gradient of smoothed MRR@K.
    """
    owner = "stochrank.mrr"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["threshold"] = check_real(threshold, "threshold", owner)
    cfg["mu"] = check_real(mu, "mu", owner, low=0.0)
    return StochasticRankObjective("mrr", **cfg)


@_documented
def lso(
    k: int | None = None,
    *,
    order: Literal["input", "score"] = "input",
    sigma: float = 1.0,
    nu: float = 0.01,
    sfa: float = 0.0,
    n_samples: int = 1,
    seed: int = 0,
    gain: Literal["exp", "linear"] = "linear",
    discount: Literal["log", "position"] = "position",
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for learning to select with order (the paper's DCG-RR, eq. 5).

    A query's documents are shown in a fixed order and the model decides which to show: document i is
    shown when its score is > 0, and

    .. math:: \mathrm{DCG\text{-}RR} = \sum_{i\ \mathrm{shown},\ c_i < k} \frac{\mathrm{gain}(r_i)}{\mathrm{disc}(c_i)},
              \quad c_i = \#\{\text{shown } j \text{ before } i\}.

    ``order='input'`` (default) is the paper's definition: the display order is the row order. CatBoost's
    ``StochasticRank:metric=FilteredDCG`` objective differs: it shows the documents with noisy score >= 0
    *ranked by that score* (a noise-free threshold document at 0); ``order='score'`` reproduces it for
    parity. CatBoost's FilteredDCG *eval* metric, in turn, keeps input order by default (``sort=None``).
    The defaults follow both the paper and CatBoost: linear gain, discount 1/(c+1).

    LSO is not translation invariant (the threshold is absolute), so there is no relevance shift ``mu``
    (any smoothing is consistent for LSO, paper App. B.4), no mean removal, and SFA (off by default, as
    CatBoost's ``lambda=0`` for FilteredDCG) projects on the raw scores (LSO is scale free about 0), for
    any query size. A one-document query is not constant here (show it or not), so it gets a gradient
    unless its gain is 0. With XGBoost train with ``base_score=0``.

    Parameters
    ----------
    order : {'input', 'score'}
    {common}
    gain : {'exp', 'linear'}
    discount : {'log', 'position'}
    """
    owner = "stochrank.lso"
    cfg = _common(owner, k, sigma, nu, sfa, n_samples, seed, sglb)
    cfg["order"] = check_choice(order, "order", owner, ("input", "score"))
    cfg["gain"] = check_choice(gain, "gain", owner, ("exp", "linear"))
    cfg["discount"] = check_choice(discount, "discount", owner, ("log", "position"))
    return StochasticRankObjective("lso", **cfg)
