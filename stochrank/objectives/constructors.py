r"""The StochasticRank constructors: ``stochrank.ndcg``, ``dcg``, ``err``, ``pfound``, ``mrr``, ``lso``.

Each builds a :class:`~.stochastic_rank.StochasticRankObjective` from a validated metric
(:mod:`.cascade`), its smoothing (:class:`~.smoothing.Smoothing`) and optional SGLB settings. Unknown
keyword arguments raise with a hint for the names people bring from CatBoost's loss string.
"""

from __future__ import annotations

from typing import Literal

from ._docs import documented
from .cascade import DCG, ERR, LSO, MRR, NDCG, PFound
from .sglb import SGLB
from .smoothing import Smoothing
from .stochastic_rank import StochasticRankObjective

__all__ = ["dcg", "err", "lso", "mrr", "ndcg", "pfound"]

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


_COMMON_DOC = r"""
    k : int or None
        Truncation: only the top ``k`` positions count (``None``: the whole list, cost O(n^2) per
        query instead of O(n k)).
    sigma : float in [1e-6, 1e6], default 1.0
        Noise scale: the metric is smoothed as E[M(f + sigma * eps)], eps ~ N(0, I). Only sigma
        relative to the score scale matters (M is scale free). With Newton leaves (the default) the
        whole training trajectory from zero scores scales with sigma, so sigma does not change the
        ranking learned (only mu * sigma against the scores does); with unit Hessians and SFA the scores
        tend to stay far below sigma, i.e. training sees a heavily smoothed metric.
    nu : float >= 1e-100, default 0.01
        SFA offset in ``(||f|| + nu)^2`` (paper §5.2; CatBoost's default).
    sfa : float or None, default None
        Strength of the scale-free-acceleration projection (CatBoost's ``lambda``): None means 0 with
        Newton leaves (which take no other value) and 1 with ``hessian='unit'``.
    n_samples : int, default 1
        Noise draws per query per call, averaged (CatBoost's ``num_estimations``).
    seed : int, default 0
        Seed of the per-(call, query) noise streams.
    hessian : {'newton', 'unit'} or None, default None
        ``'newton'`` (the default without SGLB): the booster's Hessian is the positive curvature
        :math:`\sum_b |c_b| D(b)/s_d` from the same CCS pass, normalised to a mean of 1 per document,
        so every leaf is a Newton step of at most one noise scale, signed by how much its documents'
        pulls agree — LambdaMART's leaf in Gaussian form; no mean removal, no SFA. ``'unit'`` (the
        default with SGLB, whose theory is for it, and what CatBoost's StochasticRank does): Hessian 1,
        leaves are L2-shrunk mean gradients, mean removal and SFA. Measured in benchmarks/RESULTS.md
        §4 (MQ2008, fixed settings): Newton leaves moved LightGBM from 0.7339 to 0.7412 NDCG@5 and left
        XGBoost level (0.7397 → 0.7387), from behind LambdaMART to a tie. Measured for ``ndcg(k=5)``, a
        Newton leaf learns at about half the pace of LightGBM's ``lambdarank`` at the same learning rate:
        where the number of trees binds (``LGBMRanker``'s 100 trees on large data), use twice lambdarank's
        learning rate ("Quality levers" in RESULTS.md). XGBoost's ``rank:ndcg`` is not faster than
        stochrank per tree: tune each objective's learning rate there.
    sglb : stochrank.SGLB or None, default None
        Langevin noise and model shrinkage for global optimisation (paper §6); needs ``hessian='unit'``."""


_documented = documented(_COMMON_DOC, _CATBOOST_NAMES)
# LSO has unit Hessians only (its kernel has no curvature) and no SFA by default, as CatBoost's FilteredDCG.
_LSO_DOC = (
    _COMMON_DOC[: _COMMON_DOC.index("    sfa : float or None")]
    + """    sfa : float, default 0.0
        Strength of the scale-free-acceleration projection on the raw scores; 0 turns it off.
"""
    + _COMMON_DOC[_COMMON_DOC.index("    n_samples : int") : _COMMON_DOC.index("    hessian :")]
    + """    sglb : stochrank.SGLB or None, default None
        Langevin noise and model shrinkage for global optimisation (paper §6)."""
)
_documented_lso = documented(_LSO_DOC, _CATBOOST_NAMES)


@_documented
def ndcg(
    k: int | None = None,
    *,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float | None = None,
    n_samples: int = 1,
    seed: int = 0,
    hessian: Literal["newton", "unit"] | None = None,
    gain: Literal["exp", "linear"] = "exp",
    discount: Literal["log", "position"] = "log",
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for NDCG@k.

    .. math:: \mathrm{NDCG@k} = \frac{1}{\mathrm{IDCG@k}}
              \sum_{p<k} \frac{\mathrm{gain}(r_{\pi(p)})}{\mathrm{disc}(p)}

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
        0 is CatBoost's default. With Newton leaves mu > 0 did not help (benchmarks/RESULTS.md "Quality
        levers", validation NDCG@5 of ndcg(k=5) at mu = 0.5: MQ2008 -0.002 on LightGBM, +0.001 on
        XGBoost; synthetic data where the number of trees binds, LightGBM, -0.027).
    gain : {'exp', 'linear'}
    discount : {'log', 'position'}
    """
    owner = "stochrank.ndcg"
    return StochasticRankObjective(
        NDCG(k, gain, discount), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented
def dcg(
    k: int | None = None,
    *,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float | None = None,
    n_samples: int = 1,
    seed: int = 0,
    hessian: Literal["newton", "unit"] | None = None,
    gain: Literal["exp", "linear"] = "exp",
    discount: Literal["log", "position"] = "log",
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for DCG@k, the unnormalised NDCG.

    Queries with more relevant documents weigh more:

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
    return StochasticRankObjective(
        DCG(k, gain, discount), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented
def err(
    k: int | None = None,
    *,
    max_grade: float | None = None,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float | None = None,
    n_samples: int = 1,
    seed: int = 0,
    hessian: Literal["newton", "unit"] | None = None,
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
    return StochasticRankObjective(
        ERR(k, max_grade), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented
def pfound(
    k: int | None = None,
    *,
    decay: float = 0.85,
    max_grade: float | None = None,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float | None = None,
    n_samples: int = 1,
    seed: int = 0,
    hessian: Literal["newton", "unit"] | None = None,
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for Yandex's pFound (Segalovich, 2010).

    .. math:: \mathrm{pFound@k} = \sum_{p<k} R_{\pi(p)}\, \mathrm{pLook}_p, \quad
              \mathrm{pLook}_0 = 1,\
              \mathrm{pLook}_p = \mathrm{pLook}_{p-1}\, \mathrm{decay}\,(1 - R_{\pi(p-1)})

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
    return StochasticRankObjective(
        PFound(k, max_grade, decay),
        Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner),
        sglb,
    )


@_documented
def mrr(
    k: int | None = None,
    *,
    threshold: float = 0.0,
    sigma: float = 1.0,
    mu: float = 0.0,
    nu: float = 0.01,
    sfa: float | None = None,
    n_samples: int = 1,
    seed: int = 0,
    hessian: Literal["newton", "unit"] | None = None,
    sglb: SGLB | None = None,
) -> StochasticRankObjective:
    r"""StochasticRank objective for Mean Reciprocal Rank.

    A query scores :math:`1/(1 + p)` for the position p of its first relevant document, 0 if p >= k.

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

    Measured, exploratory (benchmarks/RESULTS.md, "MRR as its own training target": fixed settings on MQ2008,
    CatBoost's query-wise data, LightGBM's ranking example and generated data, LightGBM and XGBoost trees,
    early stopping on MRR): ``mrr()`` validated lower on MRR than :func:`ndcg` with ``k=5`` in 7 of the 8
    dataset × booster cells and tested 0.010-0.013 lower than it on generated data, 2,000 training queries per
    draw (past the first relevant document MRR has no gradient: a plausible cause, not tested). Where MRR is
    the goal, also try ``ndcg(k)`` early-stopped on MRR (``stochrank.metrics.feval("mrr", k=None)``).
    """
    owner = "stochrank.mrr"
    return StochasticRankObjective(
        MRR(k, threshold), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented_lso
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

    .. math:: \mathrm{DCG\text{-}RR}
              = \sum_{i\ \mathrm{shown},\ c_i < k} \frac{\mathrm{gain}(r_i)}{\mathrm{disc}(c_i)},
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
    return StochasticRankObjective(
        LSO(k, gain, discount, order), Smoothing(sigma, 0.0, nu, sfa, n_samples, seed, None, owner), sglb
    )
