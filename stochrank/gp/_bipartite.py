r"""Multitask bipartite ranking with the trace-norm matrix-variate GP (Koyejo, Lee & Ghosh, section 4).

Generative model (18): latent :math:`Z \sim GP(0, K_N \otimes K_M)`, scores
:math:`r_{mn} \sim N(z_{mn}, σ^2)`, and per task m the labels
:math:`p(y_m | r_m) \propto \prod_{l \in D_m^+} \prod_{l' \in D_m^-} 1[r_{ml} \ge r_{ml'}]`.
Variational inference for Z with maximum likelihood for r minimises eq. (20), whose (r, ψ) part (times σ²) is

.. math::
    J(r, B) = \tfrac12 \sum_{(m, n) \in T} (r_{mn} - ψ_{mn})^2 + \tfrac{σ^2}{2}\|B\|_F^2 + μσ^2 \|B\|_*,
    \qquad ψ = G_M B G_N^\top,

subject to each :math:`r_m` ranking its positives above its negatives and lying in the ordered simplex
(the seed's fix for the scale degeneracy). Algorithm 1 alternates the ψ-step (eq. (14), the trace-norm
MV-GP fit of the current r) and the r-step (eq. (21)–(23): per task,
:math:`\min_{x \in Δ} \min_{γ \in Γ_m} \tfrac12 \|C x - γ(ψ_m)\|^2`), then takes S from eq. (10).
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_random_state

from .._validation import check_choice, check_int, check_real
from ._mvgp import MVGPPosterior
from ._mvgp_core import FloatArray, IntArray, solve
from ._mvgp_inputs import build_problem, single_threaded_blas

__all__ = ["BipartiteMVGPRanker", "ordered_simplex_weights", "retarget_task"]

BoolArray = npt.NDArray[np.bool_]
INITS = ("labels", "random")


# ------------------------------------------------------------------------------------------- the r-step
@njit(cache=True)
def _project_ordered_simplex(z: FloatArray, total: float) -> FloatArray:  # pragma: no cover - compiled
    r"""Euclidean projection of z onto :math:`\{r_1 \ge \dots \ge r_n \ge 0, \sum r = \text{total}\}`.

    The sum constraint's multiplier τ shifts z, and projecting onto the non-increasing non-negative vectors
    is the clipped isotonic (non-increasing) regression, which commutes with the shift: so the projection
    is the simplex projection of the pool-adjacent-violators fit of z (already non-increasing).
    """
    n = z.size
    level = np.empty(n)
    weight = np.empty(n)
    blocks = 0
    for i in range(n):
        level[blocks] = z[i]
        weight[blocks] = 1.0
        blocks += 1
        while blocks > 1 and level[blocks - 2] < level[blocks - 1]:
            w = weight[blocks - 2] + weight[blocks - 1]
            level[blocks - 2] = (
                level[blocks - 2] * weight[blocks - 2] + level[blocks - 1] * weight[blocks - 1]
            ) / w
            weight[blocks - 2] = w
            blocks -= 1
    u = np.empty(n)
    pos = 0
    for b in range(blocks):
        for _ in range(int(weight[b])):
            u[pos] = level[b]
            pos += 1
    cumulative = 0.0
    tau = 0.0
    for j in range(n):  # largest j with u_j - (sum_{i<=j} u_i - total)/(j+1) > 0 (u is non-increasing)
        cumulative += u[j]
        candidate = (cumulative - total) / (j + 1.0)
        if u[j] - candidate > 0.0:
            tau = candidate
    return np.maximum(u - tau, 0.0)


@njit(cache=True)
def _retarget_one(
    psi: FloatArray, positive: BoolArray, margin: float
) -> tuple[FloatArray, IntArray]:  # pragma: no cover
    """Run the r-step of one task; return (r, block-sort order).

    Block-sort ψ (positives, then negatives, each by decreasing ψ: Lemma 5), project onto the ordered
    simplex with weight at least ``margin`` on the boundary (x_k, k = number of positives), put the values
    back in the items' places.

    With δ = margin / k, r ↦ r - δ on the first k sorted places maps that set onto (1 - margin) times the
    ordered simplex, so the projection is a shift, the plain projection and the shift back.
    """
    n = psi.size
    pos_idx = np.flatnonzero(positive)
    neg_idx = np.flatnonzero(~positive)
    k = pos_idx.size
    order = np.empty(n, dtype=np.intp)
    order[:k] = pos_idx[np.argsort(-psi[pos_idx], kind="mergesort")]
    order[k:] = neg_idx[np.argsort(-psi[neg_idx], kind="mergesort")]
    z = psi[order]
    gap = margin if 0 < k < n else 0.0
    shift = gap / k if gap > 0.0 else 0.0
    z[:k] -= shift
    r_sorted = _project_ordered_simplex(z, 1.0 - gap)
    r_sorted[:k] += shift
    r = np.empty(n)
    r[order] = r_sorted
    return r, order


@njit(cache=True)
def _retarget_groups(
    psi: FloatArray, positive: BoolArray, offsets: IntArray, margin: float
) -> FloatArray:  # pragma: no cover
    out = np.empty(psi.size)
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        out[a:b] = _retarget_one(psi[a:b], positive[a:b], margin)[0]
    return out


def ordered_simplex_weights(r_sorted: FloatArray) -> FloatArray:
    r"""Return the x ∈ Δ with :math:`C x = ` ``r_sorted`` for the matrix C of Lemma 4.

    :math:`C_{ij} = 1/j` for :math:`j \ge i` (1-based), so :math:`x_i = i (r_i - r_{i+1})` with
    :math:`r_{n+1} = 0`.
    """
    diffs = r_sorted - np.append(r_sorted[1:], 0.0)
    x: FloatArray = np.arange(1, r_sorted.size + 1) * diffs
    return x


def retarget_task(psi: Any, positive: Any, margin: float = 0.0) -> tuple[FloatArray, FloatArray, IntArray]:
    r"""Solve eq. (23) for one task.

    The problem is :math:`\min_{x \in Δ,\ x_k \ge \text{margin}} \min_{γ \in Γ} \tfrac12\|C x - γ(ψ)\|^2`,
    k the number of positives (margin 0: the seed's problem). Returns ``(r, x, order)``: the retargeted
    scores in the items' places, the simplex weights x with ``r[order] = C @ x``, and the block-sorted
    order γ (positives first). x is exact: C maps Δ onto the ordered simplex (Lemma 4), so the inner
    problem is the projection onto it.
    """
    psi = np.ascontiguousarray(psi, dtype=np.float64)
    positive = np.ascontiguousarray(positive, dtype=np.bool_)
    r, order = _retarget_one(psi, positive, float(margin))
    return r, ordered_simplex_weights(r[order]), order


# ------------------------------------------------------------------------------------------- estimator
class BipartiteMVGPRanker(MVGPPosterior):
    r"""Multitask bipartite ranker: the trace-norm MV-GP with the generative ranking model (18) (Algorithm 1).

    Each task m (a row) has positive and negative (or unlabelled) items (columns). Training alternates

    * ψ-step: the posterior mean of :class:`TraceNormMVGP` fitted to the current scores r (eq. (14)),
      warm-started at the previous one (its solver never raises the objective);
    * r-step, per task: :math:`r_m = γ(C x_m)` with :math:`x_m \in Δ`, C of Lemma 4, γ sorting the
      positives and the negatives separately by ψ (Lemma 5); :math:`x_m` solves the simplex-constrained
      least squares exactly (the projection of the block-sorted ψ onto the ordered simplex: pool adjacent
      violators, then a threshold, O(T_m log T_m)),

    until the scores move less than ``tol`` (relative); then the covariance S is eq. (10). Items are
    ranked by the posterior mean ψ (:meth:`predict`).

    The alternation is projected gradient descent with step 1 on the convex function
    :math:`e(r) = \min_B J(r, B)`, whose gradient :math:`r - ψ^*(r)` is 1-Lipschitz, over the convex set of
    feasible r: it converges to the global minimum of eq. (20) (the seed's Lemma 7) from any start.

    Parameters
    ----------
    noise_var : float > 0, default 1.0
        σ², the noise variance and ridge weight (as in :class:`TraceNormMVGP`).
    trace_weight : float >= 0, default 0.0
        μ; the trace-norm weight is μσ².
    max_iter : int >= 1, default 500
        Alternations (ψ-step + r-step).
    tol : float > 0, default 1e-6
        Stop when :math:`\|r^{new} - r\| \le` ``tol`` :math:`\|r\|`.
    inner_max_iter : int >= 1, default 2000
        Solver iterations per ψ-step.
    inner_tol : float > 0, default 1e-9
        ψ-step tolerance (as ``tol`` of :class:`TraceNormMVGP`).
    margin : float in [0, 1), default 0.0
        Least simplex weight :math:`x_{m,k}` at each task's boundary (k = its number of positives), i.e.
        :math:`\min_{D^+_m} r \ge \max_{D^-_m} r + \text{margin}/k`. 0 is the seed's model (18), whose
        likelihood allows ties; see Notes.
    init : {"labels", "random"}, default "labels"
        Initial scores: mass spread evenly over each task's positives, or a random feasible point
        (:math:`x_m` Dirichlet, γ random within the blocks).
    random_state : int, RandomState or None, default None
        Seeds ``init="random"``.

    Attributes
    ----------
    targets_ : ndarray of shape (T,)
        The retargeted scores r at the observations (each task's sum to 1, positives at or above negatives).
    objective_path_ : list of float
        :math:`J` at the start and after every ψ-step and r-step (non-increasing).
    n_iter_ : int
        Alternations run; ``converged_`` whether ``tol`` was met. ``inner_iter_``: solver iterations in all.
    row_coef_, col_coef_, singular_values_, rank_, train_mean_, K_rows_, K_cols_
        As in :class:`TraceNormMVGP` (the posterior of the final ψ-step).

    Notes
    -----
    The likelihood (18) allows ties (:math:`1[r_l \ge r_{l'}]`), so equal scores for all of a task's items
    are feasible, and they are the feasible point of least norm: with ``margin=0`` the labels act only
    through the order constraints that ψ violates, and the optimum is close to the kernels' smoothest
    score pattern (on the synthetic benchmark in ``benchmarks/bipartite_mvgp.py`` it ranks held-out
    positives little better than chance). ``margin > 0`` (an extension, not in the seed) makes each task put
    at least that share of its unit mass into the gap between its positives and its negatives; the set of
    feasible r stays convex, so every property above holds. Cost per alternation: one warm-started ψ-step
    (see :class:`TraceNormMVGP`) plus :math:`O(T \log T)` for the r-steps. BLAS runs single-threaded (see
    :class:`TraceNormMVGP`).

    References
    ----------
    O. Koyejo, C. Lee, J. Ghosh. *The trace norm constrained matrix-variate Gaussian process for multitask
    bipartite ranking.* arXiv:1302.2576, 2013.
    S. Acharyya, O. Koyejo, J. Ghosh. *Learning to rank with Bregman divergences and monotone retargeting.*
    UAI 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from stochrank.gp import BipartiteMVGPRanker
    >>> K_rows, K_cols = np.eye(2) + 0.5, np.eye(4) + 0.5 * np.eye(4, k=1) + 0.5 * np.eye(4, k=-1)
    >>> rows, cols = np.repeat([0, 1], 4), np.tile(np.arange(4), 2)
    >>> y = np.array([1, 0, 0, 0, 0, 1, 0, 0])
    >>> seed = BipartiteMVGPRanker(noise_var=0.1).fit(K_rows, K_cols, rows, cols, y)
    >>> seed.predict([0, 0, 0, 0], [0, 1, 2, 3]).round(3)  # ties allowed: item 0 is not ranked first
    array([0.248, 0.257, 0.253, 0.213])
    >>> gap = BipartiteMVGPRanker(noise_var=0.1, margin=0.5).fit(K_rows, K_cols, rows, cols, y)
    >>> gap.predict([0, 0, 0, 0], [0, 1, 2, 3]).round(3)
    array([0.602, 0.193, 0.014, 0.152])
    """

    def __init__(
        self,
        *,
        noise_var: float = 1.0,
        trace_weight: float = 0.0,
        max_iter: int = 500,
        tol: float = 1e-6,
        inner_max_iter: int = 2000,
        inner_tol: float = 1e-9,
        margin: float = 0.0,
        init: str = "labels",
        random_state: Any = None,
    ) -> None:
        self.noise_var = noise_var
        self.trace_weight = trace_weight
        self.max_iter = max_iter
        self.tol = tol
        self.inner_max_iter = inner_max_iter
        self.inner_tol = inner_tol
        self.margin = margin
        self.init = init
        self.random_state = random_state

    @single_threaded_blas
    def fit(self, K_rows: Any, K_cols: Any, rows: Any, cols: Any, y: Any) -> BipartiteMVGPRanker:
        """Fit by Algorithm 1 to the labelled entries (rows[i], cols[i]) with label y[i].

        Parameters
        ----------
        K_rows : array-like of shape (M, M)
            Task covariance, symmetric positive semi-definite.
        K_cols : array-like of shape (N, N)
            Item covariance.
        rows, cols : array-like of int, shape (T,)
            Task and item of each labelled entry (each task's entries are its :math:`T_m`).
        y : array-like of shape (T,)
            Binary labels, {0, 1} or {-1, 1}: positive (1) or negative / unlabelled.

        Returns
        -------
        self : BipartiteMVGPRanker
            The fitted estimator.
        """
        owner = "BipartiteMVGPRanker"
        noise_var, trace = self._check_params(owner)
        check_int(self.inner_max_iter, "inner_max_iter", owner, low=1)
        check_real(self.inner_tol, "inner_tol", owner, low=0.0, low_open=True)
        margin = check_real(self.margin, "margin", owner, low=0.0, high=1.0, high_open=True)
        check_choice(self.init, "init", owner, INITS)
        problem = build_problem(K_rows, K_cols, rows, cols, owner)
        positive = _check_labels(y, problem.row_local.size, owner)
        # observations grouped by task for the r-step
        perm = np.argsort(problem.row_local, kind="stable")
        offsets = np.concatenate(([0], np.cumsum(np.bincount(problem.row_local)))).astype(np.intp)
        pos_sorted = positive[perm]
        r = np.empty(perm.size)
        r[perm] = self._initial_targets(pos_sorted, offsets)

        op = problem.op
        B = np.zeros((problem.row_basis.keep, problem.col_basis.keep))
        L = op.norm_sq + noise_var
        path = [0.5 * float(r @ r)]
        converged, inner, it = False, 0, 0
        while it < self.max_iter:
            it += 1
            data, const = op.encode(r)
            solution = solve(op, data, const, noise_var, trace, B, max_iter=self.inner_max_iter,
                             tol=self.inner_tol, lipschitz=L)  # fmt: skip
            B, L, inner = solution.coef, solution.lipschitz, inner + solution.n_iter
            psi = op.at_observed(B)
            penalty = 0.5 * noise_var * float(np.sum(B * B)) + trace * float(solution.singular.sum())
            path.append(0.5 * float(np.sum((r - psi) ** 2)) + penalty)
            r_new = np.empty(perm.size)
            r_new[perm] = _retarget_groups(np.ascontiguousarray(psi[perm]), pos_sorted, offsets, margin)
            path.append(0.5 * float(np.sum((r_new - psi) ** 2)) + penalty)
            moved = float(np.linalg.norm(r_new - r))
            r = r_new
            if moved <= self.tol * float(np.linalg.norm(r)):
                converged = True
                break
        self._set_fitted(problem, solution, noise_var)
        self.targets_ = r
        self.objective_path_ = path
        self.objective_ = path[-1]
        self.n_iter_, self.converged_, self.inner_iter_ = it, converged, inner
        if not converged:
            warnings.warn(
                f"BipartiteMVGPRanker stopped after max_iter={self.max_iter} alternations with the scores "
                f"still moving by more than tol={self.tol} (relative); raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def _initial_targets(self, positive: BoolArray, offsets: IntArray) -> FloatArray:
        """Feasible starting scores, grouped by task like ``positive``."""
        r = np.empty(positive.size)
        rng = check_random_state(self.random_state)
        for a, b in itertools.pairwise(offsets):
            pos = positive[a:b]
            n_pos = int(pos.sum())
            if self.init == "labels":
                r[a:b] = pos / n_pos if n_pos else 1.0 / (b - a)
                continue
            x = rng.dirichlet(np.ones(b - a))
            if 0 < n_pos < b - a:  # the boundary weight x_k carries at least the margin
                x = (1.0 - self.margin) * x
                x[n_pos - 1] += self.margin
            r_sorted = np.cumsum((x / np.arange(1, b - a + 1))[::-1])[::-1]  # C x, Lemma 4
            slots = np.concatenate(
                (rng.permutation(np.flatnonzero(pos)), rng.permutation(np.flatnonzero(~pos)))
            )
            r[a + slots] = r_sorted
        return r


def _check_labels(y: Any, n: int, owner: str) -> BoolArray:
    arr = np.asarray(y, dtype=np.float64)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(
            f"'y' of {owner} must be 1-D with one label per observed entry ({n}); got shape {arr.shape}."
        )
    levels = set(np.unique(arr).tolist())
    if not (levels <= {0.0, 1.0} or levels <= {-1.0, 1.0}):
        shown = sorted(levels)[:6]
        raise ValueError(
            f"'y' of {owner} must hold binary labels, {{0, 1}} or {{-1, 1}} (1 = positive); got values "
            f"{shown}. Threshold graded relevance first, e.g. y = (grade > 0)."
        )
    return np.ascontiguousarray(arr > 0)
