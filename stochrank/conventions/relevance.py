r"""Label encodings, one home each.

Graded gains, cascade stopping probabilities, binary relevance, and the 1/IDCG scaling of NDCG:

* gain ``'exp'``: :math:`2^r - 1` (LightGBM's and XGBoost's ``ndcg@k``, Burges et al.);
  ``'linear'``: :math:`r` (CatBoost's default ``type=Base``);
* stopping probabilities of ERR / pFound: the labels themselves in [0, 1] (CatBoost), or
  :math:`R = (2^r - 1)/2^G` for grades :math:`0..G` (Chapelle et al., 2009);
* binary relevance: label > threshold (MRR, MAP, precision).
"""

from __future__ import annotations

from typing import Literal, cast

import numpy as np
import numpy.typing as npt

from .._validation import check_labels

__all__ = [
    "MAX_EXP_LABEL",
    "GainKind",
    "binary_relevance",
    "check_graded_labels",
    "gains",
    "ideal_dcg",
    "ndcg_scaling",
    "stop_probabilities",
    "varying_queries",
]

FloatArray = npt.NDArray[np.float64]
GainKind = Literal["exp", "linear"]

# Largest label fed to an exponential gain 2**r - 1: exact in float64 up to 2**50; a larger grade is
# almost surely a units mistake (raw scores or counts passed as relevance).
MAX_EXP_LABEL = 50.0


def gains(labels: FloatArray, kind: GainKind) -> FloatArray:
    """Gain of every (already validated) label: ``2**label - 1`` for ``'exp'``, the label for ``'linear'``.

    Always a new array.
    """
    if kind == "exp":
        return np.exp2(labels) - 1.0
    return np.array(labels, dtype=np.float64)


def check_graded_labels(labels: FloatArray, kind: GainKind, owner: str) -> FloatArray:
    """Validate graded labels for a gain: in [0, 50] for ``'exp'``, >= 0 for ``'linear'``."""
    if kind == "exp":
        return check_labels(
            labels, None, owner, low=0.0, high=MAX_EXP_LABEL,
            hint="gain='exp' uses 2**label - 1; use gain='linear' for large or real-valued relevance.",
        )  # fmt: skip
    return check_labels(labels, None, owner, low=0.0)


def stop_probabilities(labels: FloatArray, max_grade: float | None, owner: str) -> FloatArray:
    """Cascade stopping probabilities R (ERR, pFound) from validated float labels.

    ``max_grade=None``: the labels are the probabilities and must lie in [0, 1] (CatBoost's convention);
    a grade G: labels r in [0, G] map to R = (2**r - 1) / 2**G (Chapelle et al., 2009).
    """
    if max_grade is None:
        check_labels(
            labels, None, owner, low=0.0, high=1.0,
            hint="Labels are read as stopping probabilities in [0, 1] (CatBoost) when max_grade=None; "
            "for graded labels 0..G pass max_grade=G, which maps a grade r to (2**r - 1) / 2**G "
            "(Chapelle et al. 2009).",
        )  # fmt: skip
        return np.array(labels, dtype=np.float64)
    check_labels(
        labels, None, owner, low=0.0, high=float(max_grade),
        hint=f"Raise max_grade above {labels.max():g}: pass a larger max_grade (now {max_grade:g}) "
        "or clip the labels.",
    )  # fmt: skip
    top: float = 2.0**max_grade  # typeshed types float ** float as Any (a negative base gives complex)
    return gains(labels, "exp") / top


def binary_relevance(labels: FloatArray, threshold: float) -> FloatArray:
    """1.0 for documents whose label is > ``threshold``, else 0.0."""
    return (labels > threshold).astype(np.float64)


def ideal_dcg(gain: FloatArray, offsets: npt.NDArray[np.int64], pos_weight: FloatArray | None) -> FloatArray:
    r"""IDCG of every query: its gains in decreasing order against the position weights.

    ``pos_weight`` is one weight per 0-based position, zero from the cut-off on (positions past its end
    weigh 0 too); ``None`` is the whole-list linear discount :math:`1 - r/n_q` of each query (SoftRank's
    milder training discount), which differs between queries.

    Plain numpy, once per dataset (a Numba kernel here cost seconds of compilation on the first call). With
    ``pos_weight`` each query's sum runs position by position from the top, the order of a loop over the
    sorted gains.
    """
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(sizes.size), sizes)
    ranked = gain[np.lexsort((-gain, query))]  # each query's gains in decreasing order
    if pos_weight is None:
        position = np.arange(gain.size) - offsets[query]
        idcg = np.bincount(query, ranked * (1.0 - position / sizes[query]), minlength=sizes.size)
        return cast(FloatArray, idcg)  # float64 with weights; numpy's stubs type bincount as intp
    total = np.zeros(sizes.size)
    weighted = np.flatnonzero(pos_weight)  # zero weights add nothing
    depth = min(int(sizes.max(initial=0)), int(weighted[-1]) + 1 if weighted.size else 0)
    for p in range(depth):
        deep = sizes > p
        total[deep] += pos_weight[p] * ranked[offsets[:-1][deep] + p]
    return total


def varying_queries(
    gain: FloatArray, cont: FloatArray, offsets: npt.NDArray[np.int64], min_size: int
) -> npt.NDArray[np.bool_]:
    """Flag the queries with at least ``min_size`` (>= 1) documents that differ in gain or continuation."""
    changes = np.zeros(gain.size, dtype=np.int64)  # changes[i]: rows j <= i that differ from row j - 1
    np.cumsum((gain[1:] != gain[:-1]) | (cont[1:] != cont[:-1]), out=changes[1:])
    sizes = np.diff(offsets)
    out = sizes >= max(min_size, 1)
    out[out] = changes[offsets[1:][out] - 1] > changes[offsets[:-1][out]]
    return out


def ndcg_scaling(
    gain: FloatArray,
    offsets: npt.NDArray[np.int64],
    pos_weight: FloatArray | None,
    cont: FloatArray | None = None,
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """``(1/IDCG, active)`` per query; ``1/IDCG`` is 0 for queries that are not active.

    A query is active when its NDCG can change: at least two documents that differ in gain (or in the
    cascade continuation ``cont``) and a positive IDCG.
    """
    idcg = ideal_dcg(gain, offsets, pos_weight)
    continuation = np.ones(gain.size) if cont is None else cont
    active = varying_queries(gain, continuation, offsets, 2) & (idcg > 0)
    scale = np.zeros(offsets.size - 1)
    scale[active] = 1.0 / idcg[active]
    return scale, active
