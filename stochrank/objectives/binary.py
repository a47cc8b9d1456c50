r"""StochasticRank for binary relevance: ``stochrank.auc``, ``stochrank.map``, ``stochrank.precision``.

A document is relevant when its label is > ``threshold`` (default 0: label >= 1 on graded data). The
metrics are those of :mod:`stochrank.metrics` (``auc``, ``map``, ``precision``) without ties (the smoothing
has none):

===============  ========================================  ===========================  ================
metric           per query                                 kernel                       cost per sample
===============  ========================================  ===========================  ================
AUC              share of (relevant, irrelevant) pairs in   :mod:`~stochrank.kernels.\   O(n log n)
                 order, 1/(P N) sum                         bipartite` + fast Gauss
MAP@k            AP@k, normaliser min(R, K)                 :mod:`~stochrank.kernels.\   O(n log n), or
                                                            bipartite` + fast Gauss      O(n k) with k
precision@k      relevant share of the top min(k, n)       cascade (:mod:`~stochrank.\   O(n k)
                                                            kernels.ccs`), DCG with
                                                            gain 1{rel}, weight 1
===============  ========================================  ===========================  ================

Queries whose documents are all relevant or all irrelevant have a constant metric and get zero gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from .._validation import check_int, check_labels, check_real
from ..conventions import binary_relevance, per_query_sums
from ..kernels import KIND_AUC, KIND_MAP, NO_CASCADE, CascadeArrays
from ._docs import documented
from .cascade import CascadeMetric
from .constructors import _CATBOOST_NAMES, _COMMON_DOC
from .sglb import SGLB
from .smoothing import Smoothing
from .stochastic_rank import StochasticRankObjective

__all__ = ["AUC", "MAP", "Precision", "auc", "map", "precision"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _BinaryMetric(CascadeMetric):
    """A metric of binary relevance: label > ``threshold``."""

    threshold: float = 0.0

    def __post_init__(self) -> None:
        """Validate ``k`` and ``threshold`` (dataclass hook)."""
        super().__post_init__()
        object.__setattr__(self, "threshold", check_real(self.threshold, "threshold", self.owner))

    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        # Finite and >= 0, the rule of MRR and every other objective: a label of -1 ("unjudged" in some
        # files) or NaN would otherwise count as irrelevant without a word.
        return binary_relevance(check_labels(labels, None, self.owner), self.threshold), np.ones(labels.size)

    def _position_discount(self) -> str:
        return "none"

    @staticmethod
    def _counts(relevant: FloatArray, offsets: IntArray) -> tuple[FloatArray, FloatArray]:
        """Per-query numbers of relevant and irrelevant documents."""
        n_rel = per_query_sums(relevant, offsets)
        return n_rel, np.diff(offsets) - n_rel

    def _bipartite(self, relevant: FloatArray, offsets: IntArray, scale_of: FloatArray) -> CascadeArrays:
        """Encode for the bipartite kernels: active queries have both labels; ``scale_of`` per query."""
        n_rel, n_irr = self._counts(relevant, offsets)
        active = (n_rel > 0) & (n_irr > 0)
        scale = np.where(active, scale_of, 0.0)
        return CascadeArrays(
            relevant,
            NO_CASCADE,
            scale,
            np.ascontiguousarray(active),
            np.zeros(2),  # not read by the bipartite kernels
            -1 if self.k is None else self.k,
            self.kind,
        )


@dataclass(frozen=True)
class AUC(_BinaryMetric):
    r"""Per-query AUC :math:`\frac{1}{PN}\sum_{i\,\mathrm{rel},\ j\,\mathrm{irr}} [f_i > f_j]`."""

    name: ClassVar[str] = "auc"
    k: int | None = field(default=None, init=False, repr=False)

    @property
    def kind(self) -> int:
        """Kernel code: AUC."""
        return KIND_AUC

    def encode(self, labels: FloatArray, offsets: IntArray) -> CascadeArrays:
        """Encode binary relevance; each query is scaled by 1/(P N)."""
        relevant, _ = self._gain_cont(labels)
        n_rel, n_irr = self._counts(relevant, offsets)
        return self._bipartite(relevant, offsets, 1.0 / np.maximum(n_rel * n_irr, 1.0))


@dataclass(frozen=True)
class MAP(_BinaryMetric):
    """Average precision@k with normaliser min(#relevant, k) (LightGBM's and XGBoost's ``map@k``)."""

    name: ClassVar[str] = "map"

    @property
    def kind(self) -> int:
        """Kernel code: MAP."""
        return KIND_MAP

    def encode(self, labels: FloatArray, offsets: IntArray) -> CascadeArrays:
        """Encode binary relevance; each query is scaled by 1/min(R, K), K = min(k, n)."""
        relevant, _ = self._gain_cont(labels)
        n_rel, _ = self._counts(relevant, offsets)
        sizes = np.diff(offsets).astype(np.float64)
        cut = sizes if self.k is None else np.minimum(sizes, self.k)
        return self._bipartite(relevant, offsets, 1.0 / np.maximum(np.minimum(n_rel, cut), 1.0))


@dataclass(frozen=True)
class Precision(_BinaryMetric):
    """Precision@k: relevant share of the top min(k, n) (as ``stochrank.metrics.precision``)."""

    name: ClassVar[str] = "precision"

    def __post_init__(self) -> None:
        """Validate ``k`` (required) and ``threshold`` (dataclass hook)."""
        object.__setattr__(self, "k", check_int(self.k, "k", self.owner, low=1))
        super().__post_init__()

    def encode(self, labels: FloatArray, offsets: IntArray) -> CascadeArrays:
        """DCG of the relevance indicators with weight 1 on the top k, each query scaled by 1/min(k, n)."""
        arrays = super().encode(labels, offsets)
        assert self.k is not None  # validated
        sizes = np.diff(offsets)
        active = arrays.active & (sizes > self.k)  # the whole list's precision is constant
        scale = np.where(active, 1.0 / np.maximum(np.minimum(sizes, self.k), 1), 0.0)
        return arrays._replace(query_scale=scale, active=active)


_SMOOTHING_DOC = _COMMON_DOC[_COMMON_DOC.index("    sigma : float") :]
_THRESHOLD_DOC = """
    threshold : float, default 0.0
        A document is relevant when its label is > threshold (0: label >= 1 on graded 0-4 data; CatBoost's
        and LightGBM's MAP use 0.5, which agrees on integer labels).
"""
_documented = documented(_THRESHOLD_DOC + _SMOOTHING_DOC, _CATBOOST_NAMES)


@_documented
def auc(
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
    r"""StochasticRank objective for the per-query AUC (bipartite ranking).

    .. math:: \mathrm{AUC} = \frac{1}{P N} \sum_{i\ \mathrm{relevant}} \sum_{j\ \mathrm{irrelevant}}
              [f_i > f_j]

    with P and N the numbers of relevant and irrelevant documents of the query (``stochrank.metrics.auc``).

    Parameters
    ----------
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`~stochrank.ndcg` (applied to the raw label).

    Notes
    -----
    The CCS derivative of document d is a Gaussian sum over the other label's noisy scores,
    :math:`\pm\frac{1}{PN}\sum_b \varphi((x_b - m_d)/s_d)/s_d`; a one-dimensional fast Gauss transform
    (:mod:`stochrank.kernels.gauss`, error at most :math:`10^{-11}` of the sum's largest possible value)
    gives all of them in O(n) after an O(n log n) sort, instead of the O(n^2) pair loop.

    Examples
    --------
    >>> import lightgbm as lgb, stochrank
    >>> booster = lgb.train({"objective": stochrank.auc()}, train_set)  # doctest: +SKIP
    """
    owner = "stochrank.auc"
    return StochasticRankObjective(
        AUC(threshold=threshold), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented
def map(
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
    r"""StochasticRank objective for mean average precision at k (LightGBM's and XGBoost's ``map@k``).

    .. math:: \mathrm{AP@k} = \frac{1}{\min(R, K)} \sum_{p < K} [\mathrm{rel}_{\pi(p)}]
              \frac{\#\{\text{relevant in positions } 0..p\}}{p + 1}, \qquad K = \min(k, n)

    with R the number of relevant documents of the query (``stochrank.metrics.map``).

    Parameters
    ----------
    k : int >= 1 or None, default None
        Cut-off; None scores the whole list (normaliser R). A sample costs O(n log n) for the whole list
        and O(n k) with a cut-off.
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`~stochrank.ndcg` (applied to the raw label).

    Notes
    -----
    Passing a document of the same label changes no precision term, so the CCS derivative of d is a sum
    over the other label's noisy scores of the AP difference of a swap, :math:`(C + 1)(1/(q+1) - 1/(q+2))`
    for the swap at position q with C relevant documents above (O(1) each from one pass over the sampled
    ranking), times the normal density: the fast Gauss transform of :func:`auc` with two weights per
    document (:mod:`stochrank.kernels.bipartite`). CatBoost's StochasticRank does not offer MAP.
    """
    owner = "stochrank.map"
    return StochasticRankObjective(
        MAP(k, threshold), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )


@_documented
def precision(
    k: int,
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
    r"""StochasticRank objective for precision at k.

    .. math:: \mathrm{P@k} = \frac{1}{\min(k, n)} \sum_{p < \min(k, n)} [\mathrm{rel}_{\pi(p)}]

    (``stochrank.metrics.precision``: XGBoost's ``pre@k`` and CatBoost's ``PrecisionAt:top=k``).

    Parameters
    ----------
    k : int >= 1
        Cut-off (required: the precision of the whole list is constant). A sample costs O(n k).
    {common}
    mu : float, default 0.0
        Relevance shift, as in :func:`~stochrank.ndcg` (applied to the raw label).

    Notes
    -----
    Precision@k is DCG@k with gain :math:`[\mathrm{rel}]` and weight 1 on the top k, and runs through the
    cascade kernel (:mod:`stochrank.kernels.ccs`). Queries with at most k documents have a constant
    precision and get zero gradient.
    """
    owner = "stochrank.precision"
    return StochasticRankObjective(
        Precision(k, threshold), Smoothing(sigma, mu, nu, sfa, n_samples, seed, hessian, owner), sglb
    )
