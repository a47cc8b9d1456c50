r"""Parallel drivers: StochasticRank gradients for all queries of a dataset.

Per query (``prange`` over queries, each writing only its own rows):

1. relevance shift :math:`a = f - \sigma \mu r` (Section 4.3: pushes ties towards the pessimistic
   order, which makes the smoothing consistent with worst-case tie resolution);
2. ``n_samples`` noise draws from the query's own stream (seed, call, query), each turned into a CCS
   estimate (:mod:`.ccs`, :mod:`.lso`, :mod:`.bipartite`), averaged;
3. for translation-invariant metrics the mean is removed (the exact gradient sums to zero);
4. scale-free acceleration (Section 5.2): :math:`g \leftarrow g - \lambda \langle g, \tilde f \rangle /
   (\lVert \tilde f \rVert + \nu)^2 \, \tilde f` with :math:`\tilde f` the centred scores (the raw scores
   for the threshold metrics, which are scale free about the origin, not about the mean);
5. the per-query metric scale (1/IDCG for NDCG).

:func:`booster_gradients` then turns the ascent direction into what a booster minimises, with query
weights, SGLB's Langevin noise and the SGLB shrinkage rescaling.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from ._random import PURPOSE_LANGEVIN, PURPOSE_SMOOTHING, fill_normal, stream_state
from .bipartite import bipartite_query
from .ccs import ccs_query_ws, ccs_workspace
from .lso import lso_query

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
UIntArray = npt.NDArray[np.uint64]

KIND_RANKING = 0  # cascade metric, translation invariant (DCG, NDCG, ERR, PFound, MRR)
KIND_FILTERED = 1  # cascade metric below a noise-free threshold document at 0 (CatBoost FilteredDCG)
KIND_LSO = 2  # DCG-RR: rows in display order, shown when score > 0
KIND_AUC = 3  # AUC of binary relevance (gain > 0), translation invariant
KIND_MAP = 4  # MAP@k of binary relevance (gain > 0), translation invariant


NO_CASCADE = np.ones(0)  # CascadeArrays.cont when every continuation factor is 1


class CascadeArrays(NamedTuple):
    """A dataset's metric in the form the kernels read (fixed for a training set).

    ``gain``, ``cont``: float64[n], the per-document gain g and continuation c of the cascade (see
    :mod:`.ccs`), ``cont`` :data:`NO_CASCADE` when every c is 1 (the DCG family); ``query_scale``:
    float64[n_queries], multiplies each query's metric (1/IDCG for NDCG); ``active``: bool[n_queries],
    False for queries whose metric cannot change (they get exactly zero); ``pos_weight``:
    float64[>= longest query + 2], weight of each 0-based position, zero from ``k`` on; ``k``: the cut-off
    (-1: the whole list); ``kind``: KIND_RANKING, KIND_FILTERED, KIND_LSO, or KIND_AUC / KIND_MAP (whose
    ``gain`` is the binary relevance and whose ``pos_weight`` is not read).
    """

    gain: np.ndarray
    cont: np.ndarray
    query_scale: np.ndarray
    active: np.ndarray
    pos_weight: np.ndarray
    k: int
    kind: int


class SmoothingParams(NamedTuple):
    """How the metric is smoothed and its gradient estimated.

    Noise scale ``sigma``, relevance shift ``mu``, SFA offset ``nu`` and strength ``sfa``, ``n_samples``
    draws per call, ``seed`` of the streams.
    """

    sigma: float
    mu: float
    nu: float
    sfa: float
    n_samples: int
    seed: int


@njit(cache=True)
def translation_invariant(kind: int) -> bool:
    """Whether a metric kind is unchanged by adding a constant to every score of a query."""
    return kind in (KIND_RANKING, KIND_AUC, KIND_MAP)


@njit(cache=True)
def _query_gradient(
    f: FloatArray,
    r: FloatArray,
    gain: FloatArray,
    cont: FloatArray,
    pos_weight: FloatArray,
    k: int,
    kind: int,
    smoothing: SmoothingParams,
    call: int,
    key: np.uint64,
    out: FloatArray,
    curv: FloatArray,
) -> None:
    """One query's ascent direction, written to ``out`` (which also serves as the accumulator).

    With a non-empty ``curv`` (Newton leaves, ranking metrics) also its positive curvature; the gradient
    is then neither mean-removed nor SFA-projected (both would give documents without curvature a
    gradient, i.e. an unbounded Newton step).
    """
    sigma, mu, nu, sfa, n_samples, seed = smoothing
    n = f.size
    invariant = translation_invariant(kind)
    a = f - (sigma * mu) * r if mu != 0.0 else f.copy()
    if invariant:
        a -= a.mean()
    out[:] = 0.0
    newton = curv.size > 0
    if newton:
        curv[:] = 0.0
    state = stream_state(seed, call, key, PURPOSE_SMOOTHING)
    # A runtime flag, not the constants True / False: Numba would compile ccs_query_ws once per literal.
    shift_invariant = kind == KIND_RANKING
    if kind == KIND_FILTERED:
        # The threshold is one more document: score 0, no noise, no gain, nothing counts below it.
        a_ext = np.zeros(n + 1)
        g_ext = np.zeros(n + 1)
        c_ext = np.zeros(n + 1)
        for i in range(n):  # element loops: a slice assignment compiles Numba's shape-mismatch error path
            a_ext[i] = a[i]
            g_ext[i] = gain[i]
            c_ext[i] = cont[i]
        z_ext = np.zeros(n + 1)
        acc_ext = np.zeros(n + 1)
        work, order = ccs_workspace(n + 1)
        for _ in range(n_samples):
            state = fill_normal(state, z_ext[:n])
            ccs_query_ws(
                a_ext, z_ext, g_ext, c_ext, pos_weight, k, sigma, shift_invariant, acc_ext, curv[:0], work,
                order,
            )  # fmt: skip
        for i in range(n):
            out[i] = acc_ext[i]
    elif kind in (KIND_AUC, KIND_MAP):
        z = np.empty(n)
        relevant = gain > 0.0
        for _ in range(n_samples):
            state = fill_normal(state, z)
            bipartite_query(a, z, relevant, kind == KIND_MAP, k, sigma, out, curv)
    else:
        z = np.empty(n)
        work, order = ccs_workspace(0 if kind == KIND_LSO else n)  # LSO needs no order
        for _ in range(n_samples):
            state = fill_normal(state, z)
            if kind == KIND_LSO:
                lso_query(a, z, gain, pos_weight, sigma, out)
            else:
                ccs_query_ws(a, z, gain, cont, pos_weight, k, sigma, shift_invariant, out, curv, work, order)
    if n_samples > 1:
        out /= n_samples
        if newton:
            curv /= n_samples
    if newton:
        return
    if invariant:
        out -= out.mean()
    if sfa > 0.0 and (n > 2 or not invariant):
        # g -= sfa <g, f~> / (|f~| + nu)^2 f~, with f~ = f - mean(f) (ranking) or f, without a copy of f~
        centre = f.mean() if invariant else 0.0
        dot = 0.0
        sq = 0.0
        for i in range(n):
            fc = f[i] - centre
            dot += out[i] * fc
            sq += fc * fc
        nrm = np.sqrt(sq) + nu
        coef = sfa * dot / (nrm * nrm)
        for i in range(n):
            out[i] -= coef * (f[i] - centre)


@njit(cache=True, parallel=True)
def smoothed_gradient(
    scores: FloatArray,
    labels: FloatArray,
    offsets: IntArray,
    keys: UIntArray,
    metric: CascadeArrays,
    smoothing: SmoothingParams,
    call: int,
    out: FloatArray,
    curv: FloatArray,
) -> None:
    """Ascent direction of the smoothed metric for every document (written to ``out``).

    ``metric`` is a :class:`CascadeArrays`, ``smoothing`` a :class:`SmoothingParams`; ``call`` selects the
    noise streams (seed, call, query key; ``keys`` from :func:`._random.query_keys`). ``curv`` (float64[n],
    or float64[0] for none) receives the positive curvature of Newton leaves (translation-invariant kinds; see
    :func:`_query_gradient`).
    """
    newton = curv.size > 0
    n_queries = offsets.size - 1
    for qi in prange(n_queries):
        s = offsets[qi]
        e = offsets[qi + 1]
        if not metric.active[qi]:
            out[s:e] = 0.0
            if newton:
                curv[s:e] = 0.0
            continue
        _query_gradient(
            scores[s:e],
            labels[s:e],
            metric.gain[s:e],
            metric.cont[s:e] if metric.cont.size else np.ones(e - s),
            metric.pos_weight,
            metric.k,
            metric.kind,
            smoothing,
            call,
            keys[qi],
            out[s:e],
            curv[s:e] if newton else curv,
        )
        out[s:e] *= metric.query_scale[qi]
        if newton:
            curv[s:e] *= metric.query_scale[qi]


@njit(cache=True, parallel=True)
def langevin_noise(offsets: IntArray, keys: UIntArray, seed: int, call: int) -> FloatArray:
    """Draw standard normal noise per document for SGLB, from each query's own stream (seed, call, key)."""
    n_queries = offsets.size - 1
    out = np.empty(offsets[-1])
    for qi in prange(n_queries):
        fill_normal(stream_state(seed, call, keys[qi], PURPOSE_LANGEVIN), out[offsets[qi] : offsets[qi + 1]])
    return out


@njit(cache=True, parallel=True)
def positive_sum_count(values: FloatArray, offsets: IntArray) -> tuple[float, float]:
    """Return the sum and the number of the positive entries of ``values``.

    Two numbers rather than their mean, so that workers holding parts of a dataset can add theirs up.
    """
    n_queries = offsets.size - 1
    sums = np.zeros(n_queries)
    counts = np.zeros(n_queries)
    for qi in prange(n_queries):
        for i in range(offsets[qi], offsets[qi + 1]):
            if values[i] > 0.0:
                sums[qi] += values[i]
                counts[qi] += 1.0
    # Added up in query order by a plain loop: ``sums.sum()`` here would become a parallel reduction whose
    # rounding depends on the thread count, and the total scales every Newton Hessian.
    total = 0.0
    count = 0.0
    for qi in range(n_queries):
        total += sums[qi]
        count += counts[qi]
    return total, count


@njit(cache=True, parallel=True)
def booster_gradients(
    ascent: FloatArray,
    curv: FloatArray,
    kappa: float,
    offsets: IntArray,
    query_weight: FloatArray,
    noise: FloatArray,
    langevin_rate: float,
    inv_scale: float,
    grad: FloatArray,
    hess: FloatArray,
) -> float:
    r"""Write the minimisation gradient and Hessian for a booster; return the largest \|value\| written.

    Unit Hessian (``curv`` empty): ``grad = -(w_q g + c \sqrt{w_q} \xi) \cdot inv\_scale``, ``hess = w_q``,
    with Langevin noise :math:`c\,\xi` (its variance grows with the weight, as the preconditioner does;
    ``langevin_rate = 0`` for none) and ``inv_scale`` the SGLB rescaling 1/C_t. Newton leaves:
    ``hess = w_q \kappa h`` and ``grad = -w_q \kappa g`` with h the curvature and :math:`\kappa` the
    normalisation that makes the mean Hessian 1 per document (it cancels in every leaf without L2). The
    returned peak (NaN if any value is NaN) lets the caller refuse values float32 cannot hold.
    """
    newton = curv.size > 0
    n_queries = offsets.size - 1
    peaks = np.zeros(n_queries)
    for qi in prange(n_queries):
        w = query_weight[qi]
        peak = 0.0
        bad = 0.0  # g * 0 is NaN exactly when g is NaN or infinite
        if newton:
            wk = w * kappa
            for i in range(offsets[qi], offsets[qi + 1]):
                h = wk * curv[i]
                g = -(wk * ascent[i] + langevin_rate * np.sqrt(h) * noise[i]) * inv_scale
                grad[i] = g
                hess[i] = h
                peak = max(peak, max(abs(g), h))
                bad += g * 0.0
        else:
            c = langevin_rate * np.sqrt(w)
            for i in range(offsets[qi], offsets[qi + 1]):
                g = -(w * ascent[i] + c * noise[i]) * inv_scale
                grad[i] = g
                hess[i] = w
                peak = max(peak, abs(g))
                bad += g * 0.0
        peaks[qi] = max(peak, w) + bad
    # A serial maximum: Numba's parallel reduction of peaks.max() drops NaN, which the caller must see.
    top = 0.0
    for qi in range(n_queries):
        value = float(peaks[qi])
        if np.isnan(value):
            return value
        top = max(top, value)
    return top
