r"""What a StochasticRank objective optimises: the cascade metrics and their kernel encodings.

Each metric is a frozen dataclass, validated at construction, that encodes a training set's labels
once into the kernels' :class:`~stochrank.kernels.CascadeArrays`: per-document gain g and continuation c
and a weight per position (the family of eq. 7 of the StochasticRank paper, see :mod:`stochrank.kernels.ccs`)

====================  ===============================  ==========================  ==================
metric                gain g                           continuation c              position weight
====================  ===============================  ==========================  ==================
NDCG@k (/ IDCG), DCG  2^r - 1 or r                     1                           1/log2(p+2), 1/(p+1)
ERR@k                 R                                1 - R                       1/(p+1)
pFound@k              R                                decay (1 - R)               1
MRR@k                 1{r > threshold}                 1 - g                       1/(p+1)
LSO (DCG-RR)          2^r - 1 or r                     1                           1/log2(c+2), 1/(c+1)
====================  ===============================  ==========================  ==================

with R the stopping probability (:func:`~stochrank.conventions.stop_probabilities`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from .._validation import check_choice, check_labels, check_optional_int, check_real
from ..conventions import (
    MAX_EXP_LABEL,
    GainKind,
    binary_relevance,
    check_graded_labels,
    gains,
    ndcg_scaling,
    per_query_sums,
    position_weights,
    stop_probabilities,
    varying_queries,
)
from ..kernels import KIND_FILTERED, KIND_LSO, KIND_RANKING, NO_CASCADE, CascadeArrays

__all__ = ["DCG", "ERR", "LSO", "MRR", "NDCG", "CascadeMetric", "PFound"]

FloatArray = npt.NDArray[np.float64]
Discount = Literal["log", "position"]


@dataclass(frozen=True)
class CascadeMetric(ABC):
    """A ranking metric of the cascade family, truncated at ``k`` (None: the whole list)."""

    k: int | None = None
    name: ClassVar[str]

    @property
    def owner(self) -> str:
        """The public constructor, for error messages."""
        return f"stochrank.{self.name}"

    def __post_init__(self) -> None:
        """Validate ``k`` (dataclass hook)."""
        k = check_optional_int(self.k, "k", self.owner, low=1, none_means="the whole list")
        object.__setattr__(self, "k", k)

    @property
    def kind(self) -> int:
        """Kernel code: translation-invariant ranking metric (the default)."""
        return KIND_RANKING

    @abstractmethod
    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Return the validated per-document gain g and continuation c."""

    @abstractmethod
    def _position_discount(self) -> str:
        """Name of the position weights (:func:`~stochrank.conventions.position_weights`)."""

    def encode(self, labels: FloatArray, offsets: npt.NDArray[np.int64]) -> CascadeArrays:
        """Encode the training set's labels in the kernels' form (computed once per dataset)."""
        gain, cont = self._gain_cont(labels)
        longest = int(np.diff(offsets).max())
        pos_weight = position_weights(self._position_discount(), longest + 3, self.k)
        scale = np.ones(offsets.size - 1)
        if self.kind == KIND_RANKING:
            active = varying_queries(gain, cont, offsets, 2)
        else:
            # Threshold metrics: a query counts when it has something to show.
            active = per_query_sums(gain > 0, offsets) > 0
        return CascadeArrays(
            gain,
            NO_CASCADE if (cont == 1.0).all() else cont,  # 8 bytes per document saved for the DCG family
            scale,
            np.ascontiguousarray(active),
            pos_weight,
            -1 if self.k is None else self.k,
            self.kind,
        )


@dataclass(frozen=True)
class _GradedMetric(CascadeMetric):
    """A DCG-type metric of graded labels: gain ``'exp'`` (2^r - 1) or ``'linear'`` (r) and a discount."""

    gain: GainKind = "exp"
    discount: Discount = "log"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.gain, "gain", self.owner, ("exp", "linear"))
        check_choice(self.discount, "discount", self.owner, ("log", "position"))

    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        return gains(check_graded_labels(labels, self.gain, self.owner), self.gain), np.ones(labels.size)

    def _position_discount(self) -> str:
        return self.discount


@dataclass(frozen=True)
class DCG(_GradedMetric):
    r"""DCG@k :math:`= \sum_{p<k} \mathrm{gain}(r_{\pi(p)}) / \mathrm{disc}(p)`."""

    name: ClassVar[str] = "dcg"


@dataclass(frozen=True)
class NDCG(_GradedMetric):
    """NDCG@k: DCG@k divided by the query's ideal DCG@k (queries with IDCG = 0 are constant)."""

    name: ClassVar[str] = "ndcg"

    def encode(self, labels: FloatArray, offsets: npt.NDArray[np.int64]) -> CascadeArrays:
        """As for DCG, with every query scaled by 1/IDCG@k."""
        arrays = super().encode(labels, offsets)
        scale, active = ndcg_scaling(arrays.gain, offsets, arrays.pos_weight, np.ones(arrays.gain.size))
        return arrays._replace(query_scale=scale, active=active)


@dataclass(frozen=True)
class _StopMetric(CascadeMetric):
    """A cascade metric of stopping probabilities R: the labels (``max_grade=None``) or (2^r - 1)/2^G."""

    max_grade: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_grade is not None:
            grade = check_real(
                self.max_grade, "max_grade", self.owner, low=0.0, high=MAX_EXP_LABEL, low_open=True
            )
            object.__setattr__(self, "max_grade", grade)

    def _stop(self, labels: FloatArray) -> FloatArray:
        return stop_probabilities(labels, self.max_grade, self.owner)


@dataclass(frozen=True)
class ERR(_StopMetric):
    r"""ERR@k :math:`= \sum_{p<k} \frac{R_{\pi(p)}}{p+1} \prod_{q<p} (1 - R_{\pi(q)})`."""

    name: ClassVar[str] = "err"

    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        gain = self._stop(labels)
        return gain, 1.0 - gain

    def _position_discount(self) -> str:
        return "position"


@dataclass(frozen=True)
class PFound(_StopMetric):
    r"""pFound@k :math:`= \sum_{p<k} R_{\pi(p)} \mathrm{pLook}_p`, pLook decaying by ``decay (1 - R)``."""

    name: ClassVar[str] = "pfound"
    decay: float = 0.85

    def __post_init__(self) -> None:
        """Validate ``k`` and ``decay`` (dataclass hook)."""
        super().__post_init__()
        object.__setattr__(self, "decay", check_real(self.decay, "decay", self.owner, low=0.0, high=1.0))

    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        gain = self._stop(labels)
        return gain, self.decay * (1.0 - gain)

    def _position_discount(self) -> str:
        return "none"


@dataclass(frozen=True)
class MRR(CascadeMetric):
    """MRR@k: 1/(1 + position of the first relevant document), relevant meaning label > ``threshold``."""

    name: ClassVar[str] = "mrr"
    threshold: float = 0.0

    def __post_init__(self) -> None:
        """Validate ``k`` and ``threshold`` (dataclass hook)."""
        super().__post_init__()
        object.__setattr__(self, "threshold", check_real(self.threshold, "threshold", self.owner))

    def _gain_cont(self, labels: FloatArray) -> tuple[FloatArray, FloatArray]:
        # The rule of stochrank.metrics.mrr and every other objective: finite and >= 0 (a label of -1,
        # "unjudged" in some files, would otherwise count as irrelevant without a word).
        gain = binary_relevance(check_labels(labels, None, self.owner), self.threshold)
        return gain, 1.0 - gain

    def _position_discount(self) -> str:
        return "position"


@dataclass(frozen=True)
class LSO(_GradedMetric):
    """Learning to select with order (DCG-RR, paper eq. 5): rows shown in ``order`` when score > 0."""

    name: ClassVar[str] = "lso"
    order: Literal["input", "score"] = "input"
    gain: GainKind = "linear"
    discount: Discount = "position"

    def __post_init__(self) -> None:
        """Validate ``k`` and ``order`` (dataclass hook)."""
        super().__post_init__()
        check_choice(self.order, "order", self.owner, ("input", "score"))

    @property
    def kind(self) -> int:
        """Kernel code: row order (the paper) or CatBoost's FilteredDCG (ranked by score)."""
        return KIND_LSO if self.order == "input" else KIND_FILTERED
