"""Naive twins of the StochasticRank gradient kernels, written from the definitions only.

Nothing here is taken from ``stochrank/kernels``: the metrics are evaluated by a full sort, and the
coordinate-conditional (CCS) derivative is the brute-force derivative of an exact 1-D Gaussian integral
of a step function (paper, Theorem 3 / Corollary 1):

    holding x_{-d}, M(t) := M(x_{-d}, x_d = t) is constant on the intervals between the other documents'
    noisy scores (and 0 for the threshold metrics), so with X_d ~ N(m_d, s_d^2)

        E[M]       = sum_I M_I * (Phi((hi_I - m_d)/s_d) - Phi((lo_I - m_d)/s_d))
        dE[M]/dm_d = sum_I M_I * (D(lo_I) - D(hi_I)),   D(b) = phi((b - m_d)/s_d)/s_d,  D(+-inf) = 0.

Scalar twins (``naive_*``) use plain loops and are meant for exact, one-draw comparisons; the
``*_batch`` twins loop over positions/documents but are vectorised over many noise draws (rows), for
Monte-Carlo comparisons; they are checked against the scalar twins in the tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)  # phi(0) ~ 0.3989, the largest value of the N(0,1) pdf


# SCALAR TWINS ==================================================================================


def naive_normal_pdf(u):
    """phi(u) = exp(-u^2/2)/sqrt(2 pi); 0 at +-inf."""
    if math.isinf(u):
        return 0.0
    return INV_SQRT_2PI * math.exp(-0.5 * u * u)


def naive_normal_cdf(u):
    """Phi(u) = erfc(-u/sqrt 2)/2 (accurate in both tails)."""
    if u == math.inf:
        return 1.0
    if u == -math.inf:
        return 0.0
    return 0.5 * math.erfc(-u / math.sqrt(2.0))


def naive_truncation(k, n):
    """K = min(k, n), with k <= 0 (or None) meaning the whole list."""
    if k is None or k <= 0 or k >= n:
        return n
    return k


def naive_position_weights(discount, length, k=None):
    """w_p for 0-based positions p < length: 1/log2(p+2) ('log'), 1/(p+1) ('position') or 1 ('none');
    w_p = 0 for p >= k."""
    w = np.zeros(length)
    for p in range(length):
        if k is not None and k > 0 and p >= k:
            w[p] = 0.0
        elif discount == "log":
            w[p] = 1.0 / math.log2(p + 2.0)
        elif discount == "position":
            w[p] = 1.0 / (p + 1.0)
        else:
            w[p] = 1.0
    return w


def naive_order(x):
    """pi: documents by decreasing x (ties by row; irrelevant for continuous noise)."""
    return sorted(range(len(x)), key=lambda i: (-x[i], i))


def naive_cascade_metric(x, gain, cont, pos_weight, k):
    """M(x) = sum_{p < K} w_p g_{pi(p)} prod_{j < p} c_{pi(j)}, pi = order by decreasing x, K = min(k, n)."""
    n = len(x)
    K = naive_truncation(k, n)
    order = naive_order(x)
    total = 0.0
    look = 1.0  # prod_{j < p} c_{pi(j)}
    for p in range(K):
        d = order[p]
        total += pos_weight[p] * gain[d] * look
        look *= cont[d]
    return total


def naive_ideal_dcg(gain, pos_weight, k):
    """IDCG@k = sum_{p < K} w_p * (gains sorted decreasingly)[p]."""
    g = sorted(gain, reverse=True)
    K = naive_truncation(k, len(g))
    return sum(pos_weight[p] * g[p] for p in range(K))


def naive_lso_metric(x, gain, pos_weight):
    """DCG-RR in row order: doc i is shown iff x_i > 0; c_i = #shown before i; M = sum_{shown} g_i w_{c_i}."""
    total = 0.0
    c = 0
    for i in range(len(x)):
        if x[i] > 0.0:
            total += gain[i] * pos_weight[c]
            c += 1
    return total


def naive_filtered_dcg(x, gain, pos_weight, k):
    """CatBoost's FilteredDCG: the docs with x > 0, ranked by decreasing x, DCG over positions p < k."""
    shown = [i for i in naive_order(x) if x[i] > 0.0]
    total = 0.0
    for p, d in enumerate(shown):
        if k is not None and 0 < k <= p:
            break
        total += gain[d] * pos_weight[p]
    return total


def naive_intervals(breakpoints):
    """The intervals (lo, hi) cut by the sorted break points, with one interior point each."""
    b = sorted(breakpoints)
    out = []
    for i in range(len(b) + 1):
        lo = b[i - 1] if i > 0 else -math.inf
        hi = b[i] if i < len(b) else math.inf
        if lo == -math.inf and hi == math.inf:
            t = 0.0
        elif lo == -math.inf:
            t = hi - 1.0
        elif hi == math.inf:
            t = lo + 1.0
        else:
            t = 0.5 * (lo + hi)
            if not lo < t < hi:  # empty (tied break points): no probability mass
                continue
        out.append((lo, hi, t))
    return out


def naive_step_derivative(metric_at, breakpoints, m, s):
    """d/dm E[metric_at(X)], X ~ N(m, s^2), metric_at constant between break points:
    sum_I M_I * (D(lo_I) - D(hi_I)), D(b) = phi((b - m)/s)/s."""
    total = 0.0
    for lo, hi, t in naive_intervals(breakpoints):
        dens_lo = naive_normal_pdf((lo - m) / s) / s
        dens_hi = naive_normal_pdf((hi - m) / s) / s
        total += metric_at(t) * (dens_lo - dens_hi)
    return total


def naive_step_integral(metric_at, breakpoints, m, s):
    """E[metric_at(X)], X ~ N(m, s^2): sum_I M_I * (Phi((hi_I - m)/s) - Phi((lo_I - m)/s))."""
    total = 0.0
    for lo, hi, t in naive_intervals(breakpoints):
        total += metric_at(t) * (naive_normal_cdf((hi - m) / s) - naive_normal_cdf((lo - m) / s))
    return total


def naive_conditional_law(a, z, d, sigma, shift_invariant, conditioning="exact"):
    """(m_d, s_d) of doc d's noisy score given the others' noise.

    shift_invariant: m_d = a_d + sigma * mean_{j != d} z_j, s_d = sigma sqrt(n/(n-1)) ('exact'); CatBoost's
    as-implemented variant ('catboost') adds the unscaled mean_{j != d} z_j. Otherwise m_d = a_d, s_d = sigma.
    """
    n = len(a)
    if not shift_invariant:
        return float(a[d]), float(sigma)
    zbar = (sum(z) - z[d]) / (n - 1)
    shift = sigma * zbar if conditioning == "exact" else zbar
    return float(a[d] + shift), float(sigma * math.sqrt(n / (n - 1.0)))


def naive_ccs_query(a, z, gain, cont, pos_weight, k, sigma, shift_invariant, conditioning="exact"):
    """One noise draw's CCS estimate for every document d (see the module docstring):
    out[d] = d/dm_d E[M(X_d, x_{-d})], x = a + sigma z, X_d ~ N(m_d, s_d^2) (``naive_conditional_law``),
    break points = the other documents' x."""
    a = np.asarray(a, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    n = a.size
    x = a + sigma * z
    out = np.zeros(n)
    for d in range(n):
        m, s = naive_conditional_law(a, z, d, sigma, shift_invariant, conditioning)

        def metric_at(t, d=d):
            y = x.copy()
            y[d] = t
            return naive_cascade_metric(y, gain, cont, pos_weight, k)

        out[d] = naive_step_derivative(metric_at, [x[j] for j in range(n) if j != d], m, s)
    return out


def naive_step_jumps(metric_at, breakpoints):
    """[(b, J_b)]: each distinct break point with the jump M(just above b) - M(just below b)."""
    iv = naive_intervals(breakpoints)
    return [(iv[i][1], metric_at(iv[i + 1][2]) - metric_at(iv[i][2])) for i in range(len(iv) - 1)]


def naive_ccs_curvature(a, z, gain, cont, pos_weight, k, sigma, shift_invariant):
    """One draw's positive curvature for every document d: sum over the break points b of d's 1-D problem
    (``naive_ccs_query``) of |J_b| D(b) / s_d, with J_b the metric's jump at b and D the density of X_d."""

    def metric(y):
        return naive_cascade_metric(y, gain, cont, pos_weight, k)

    return naive_ccs_metric_query(a, z, metric, sigma, curvature=True, shift_invariant=shift_invariant)


def naive_ccs_conditional_value(
    a, z, gain, cont, pos_weight, k, sigma, shift_invariant, d, m, conditioning="exact"
):
    """The 1-D integral E[M(X_d, x_{-d})] with X_d ~ N(m, s_d^2) (s_d from ``naive_conditional_law``), the
    other documents held at x = a + sigma z. Its derivative in m at m = m_d is ``naive_ccs_query(...)[d]``."""
    a = np.asarray(a, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    x = a + sigma * z
    _, s = naive_conditional_law(a, z, d, sigma, shift_invariant, conditioning)

    def metric_at(t):
        y = x.copy()
        y[d] = t
        return naive_cascade_metric(y, gain, cont, pos_weight, k)

    return naive_step_integral(metric_at, [x[j] for j in range(len(a)) if j != d], m, s)


def naive_auc_metric(x, relevant):
    """AUC = (1/(P N)) #{(i relevant, j irrelevant): x_i > x_j} (no ties among continuous noisy scores)."""
    pos = [x[i] for i in range(len(x)) if relevant[i]]
    neg = [x[j] for j in range(len(x)) if not relevant[j]]
    wins = sum(1.0 for u in pos for v in neg if u > v)
    return wins / (len(pos) * len(neg))


def naive_ap_metric(x, relevant, k):
    """AP@k = (1/min(R, K)) sum_{p < K, relevant} #relevant in 0..p / (p + 1), K = min(k, n)."""
    n = len(x)
    K = naive_truncation(k, n)
    R = sum(1 for r in relevant if r)
    hits, total = 0, 0.0
    for p, d in enumerate(naive_order(x)[:K]):
        if relevant[d]:
            hits += 1
            total += hits / (p + 1.0)
    return total / min(R, K)


def naive_ccs_metric_query(a, z, metric, sigma, curvature=False, shift_invariant=True):
    """One draw's CCS estimate of any metric ``metric(x)``: out[d] is the brute-force derivative of the 1-D
    integral over d's score with the others at x = a + sigma z (conditioning of ``naive_conditional_law``,
    translation-invariant by default); with ``curvature`` the sum over d's break points of
    |J_b| D(b) / s_d instead."""
    a = np.asarray(a, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    n = a.size
    x = a + sigma * z
    out = np.zeros(n)
    for d in range(n):
        m, s = naive_conditional_law(a, z, d, sigma, shift_invariant)

        def metric_at(t, d=d):
            y = x.copy()
            y[d] = t
            return metric(y)

        breaks = [x[j] for j in range(n) if j != d]
        if curvature:
            for b, jump in naive_step_jumps(metric_at, breaks):
                out[d] += abs(jump) * naive_normal_pdf((b - m) / s) / s / s
        else:
            out[d] = naive_step_derivative(metric_at, breaks, m, s)
    return out


def naive_gauss_sum(x, w_above, w_below, m, split, s):
    """G_t = sum_i w_i K(x_i - m_t), K(y) = exp(-y^2/(2 s^2)), w_i = w_above[i] if i < split[t] else
    w_below[i] (the exact O(S T) sum)."""
    out = np.zeros(len(m))
    for t in range(len(m)):
        for i in range(len(x)):
            w = w_above[i] if i < split[t] else w_below[i]
            out[t] += w * math.exp(-((x[i] - m[t]) ** 2) / (2.0 * s * s))
    return out


def naive_lso_query(a, z, gain, pos_weight, sigma):
    """One draw's CCS estimate for DCG-RR: with the others at x = a + sigma z and X_d ~ N(a_d, sigma^2),
    out[d] = d/da_d E[M] (the only break point is the threshold 0), i.e.
    (M(d shown) - M(d hidden)) * phi(a_d/sigma)/sigma."""
    a = np.asarray(a, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    x = a + sigma * z
    out = np.zeros(a.size)
    for d in range(a.size):

        def metric_at(t, d=d):
            y = x.copy()
            y[d] = t
            return naive_lso_metric(y, gain, pos_weight)

        out[d] = naive_step_derivative(metric_at, [0.0], float(a[d]), float(sigma))
    return out


def naive_filtered_ccs_query(a, z, gain, pos_weight, k, sigma):
    """One draw's CCS estimate for FilteredDCG (``naive_filtered_dcg``), conditioning on d's own noise:
    X_d ~ N(a_d, sigma^2), break points = the other documents' x and the threshold 0."""
    a = np.asarray(a, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    x = a + sigma * z
    n = a.size
    out = np.zeros(n)
    for d in range(n):

        def metric_at(t, d=d):
            y = x.copy()
            y[d] = t
            return naive_filtered_dcg(y, gain, pos_weight, k)

        breaks = [x[j] for j in range(n) if j != d] + [0.0]
        out[d] = naive_step_derivative(metric_at, breaks, float(a[d]), float(sigma))
    return out


def naive_sfa(g, f, sfa, nu, centre):
    """Scale-free acceleration (paper §5.2): g - sfa <g, f~>/(||f~|| + nu)^2 f~,
    with f~ = f - mean(f) if ``centre`` else f."""
    ft = f - f.mean() if centre else f.copy()
    nrm = math.sqrt(float(np.dot(ft, ft))) + nu
    return g - sfa * float(np.dot(g, ft)) / (nrm * nrm) * ft


# BATCH TWINS (vectorised over draws = rows) =======================================================


def naive_cascade_metric_batch(X, gain, cont, pos_weight, k):
    """``naive_cascade_metric`` for every row of X (rows = draws, columns = documents)."""
    N, n = X.shape
    K = naive_truncation(k, n)
    order = np.argsort(-X, axis=1)  # no ties among continuous noisy scores
    total = np.zeros(N)
    look = np.ones(N)
    for p in range(K):
        d = order[:, p]
        total += pos_weight[p] * gain[d] * look
        look = look * cont[d]
    return total


def naive_lso_metric_batch(X, gain, pos_weight):
    """``naive_lso_metric`` for every row of X."""
    N, n = X.shape
    total = np.zeros(N)
    c = np.zeros(N, dtype=np.int64)
    for i in range(n):
        shown = X[:, i] > 0.0
        total += np.where(shown, gain[i] * pos_weight[c], 0.0)
        c += shown
    return total


def naive_filtered_dcg_batch(X, gain, pos_weight, k):
    """``naive_filtered_dcg`` for every row of X: the positive scores ranked first, the rest not counted."""
    N, n = X.shape
    K = naive_truncation(k, n)
    order = np.argsort(-X, axis=1)  # no ties among continuous noisy scores
    total = np.zeros(N)
    rows = np.arange(N)
    for p in range(K):
        d = order[:, p]
        total += np.where(X[rows, d] > 0.0, gain[d] * pos_weight[p], 0.0)
    return total


def naive_auc_metric_batch(X, relevant):
    """``naive_auc_metric`` for every row of X."""
    rel = np.asarray(relevant, dtype=bool)
    P, N = X[:, rel], X[:, ~rel]
    return (P[:, :, None] > N[:, None, :]).sum(axis=(1, 2)) / (rel.sum() * (~rel).sum())


def naive_ap_metric_batch(X, relevant, k):
    """``naive_ap_metric`` for every row of X."""
    N, n = X.shape
    K = naive_truncation(k, n)
    rel = np.asarray(relevant, dtype=np.float64)
    order = np.argsort(-X, axis=1)
    hits = np.zeros(N)
    total = np.zeros(N)
    for p in range(K):
        r = rel[order[:, p]]
        hits += r
        total += r * hits / (p + 1.0)
    return total / min(rel.sum(), K)


def naive_fd_gradient(metric_batch, a, sigma, h, n_draws, rng, thresholds=(), centre=False, chunk=200_000):
    """Finite differences of the smoothed metric F(a) = E[M(a + sigma eps)], eps ~ N(0, I).

    Common random numbers: per draw and document d, C_d(h) = (M(x + h e_d) - M(x - h e_d)) / (2h), combined
    as (4 C_d(h) - C_d(2h)) / 3 (Richardson), whose bias is O(h^4) (``naive_fd_bias_bound``). Only rows
    with a break point (another document's x, or a threshold) within 2h of x_d can differ; the others are
    exact zeros. ``centre`` removes each draw's mean over documents (for the mean-removed ranking
    gradients). Returns (mean, standard error) per document.
    """
    a = np.asarray(a, dtype=np.float64)
    n = a.size
    s1 = np.zeros(n)
    s2 = np.zeros(n)
    done = 0
    while done < n_draws:
        N = min(chunk, n_draws - done)
        X = a + sigma * rng.standard_normal((N, n))
        D = np.zeros((N, n))
        for d in range(n):
            gap = np.full(N, np.inf)
            for j in range(n):
                if j != d:
                    gap = np.minimum(gap, np.abs(X[:, j] - X[:, d]))
            for t in thresholds:
                gap = np.minimum(gap, np.abs(X[:, d] - t))
            rows = np.nonzero(gap <= 2.0 * h)[0]
            if rows.size == 0:
                continue
            M = {}
            for step in (-2.0 * h, -h, h, 2.0 * h):
                Y = X[rows].copy()
                Y[:, d] += step
                M[step] = metric_batch(Y)
            c1 = (M[h] - M[-h]) / (2.0 * h)
            c2 = (M[2.0 * h] - M[-2.0 * h]) / (4.0 * h)
            D[rows, d] = (4.0 * c1 - c2) / 3.0
        if centre:
            D -= D.mean(axis=1, keepdims=True)
        s1 += D.sum(axis=0)
        s2 += (D * D).sum(axis=0)
        done += N
    mean = s1 / n_draws
    var = np.maximum(s2 / n_draws - mean * mean, 0.0)
    return mean, np.sqrt(var / (n_draws - 1))


def naive_fd_bias_bound(h, sigma, total_variation):
    """Bound on the bias of ``naive_fd_gradient``.

    Given the others' noise, F(a_d) = sum_b J_b Phi((a_d - b)/sigma) + const, so
    |F^(5)| <= sum_b |J_b| max|phi^(4)| / sigma^5 = 3 phi(0) TV / sigma^5, with TV >= sum_b |J_b| the total
    variation of M along d's line. Taylor with Lagrange remainders: C(h) = F' + h^2/6 F^(3) + r(h) with
    |r(h)| <= h^4/120 sup|F^(5)|, so |(4 C(h) - C(2h))/3 - F'| <= (4/3 + 16/3) h^4/120 sup|F^(5)|
    = h^4/18 sup|F^(5)|; centring at most doubles it.
    """
    return 2.0 * h**4 / 18.0 * 3.0 * INV_SQRT_2PI * total_variation / sigma**5


def naive_ccs_batch(a, Z, gain, cont, pos_weight, k, sigma, conditioning="exact"):
    """``naive_ccs_query(..., shift_invariant=True, conditioning)`` for every row of Z (one draw per row):
    for doc d and each slot i among the others' decreasing noisy scores v_0 > v_1 > ..., the metric with d
    inserted at position i, weighted by D(v_i) - D(v_{i-1}) (v_{-1} = +inf, v_{n-1} = -inf)."""
    a = np.asarray(a, dtype=np.float64)
    N, n = Z.shape
    X = a + sigma * Z
    out = np.zeros((N, n))
    s = sigma * math.sqrt(n / (n - 1.0))
    rows = np.arange(N)[:, None]
    for d in range(n):
        others = np.array([j for j in range(n) if j != d])
        zbar = Z[:, others].mean(axis=1)
        m = a[d] + (sigma * zbar if conditioning == "exact" else zbar)
        o = np.argsort(-X[:, others], axis=1, kind="stable")
        ids = others[o]  # the others' documents, best first
        v = X[rows, ids]  # their noisy scores, decreasing
        for i in range(n):
            perm = np.concatenate([ids[:, :i], np.full((N, 1), d), ids[:, i:]], axis=1)
            # a score vector that ranks the documents as perm: position p gets score n - p
            Y = np.empty((N, n))
            Y[rows, perm] = np.arange(n, 0, -1, dtype=np.float64)
            M_i = naive_cascade_metric_batch(Y, gain, cont, pos_weight, k)
            dens_lo = np.exp(-0.5 * ((v[:, i] - m) / s) ** 2) * INV_SQRT_2PI / s if i < n - 1 else 0.0
            dens_hi = np.exp(-0.5 * ((v[:, i - 1] - m) / s) ** 2) * INV_SQRT_2PI / s if i > 0 else 0.0
            out[:, d] += M_i * (dens_lo - dens_hi)
    return out


# SOFTRANK TWINS ================================================================================
# SoftRank's model (Taylor et al., 2008): document j's rank is the number of documents that beat it, the
# pairwise events "i beats j" being independent Bernoulli(pi_ij), pi_ij = Phi((m_i - m_j)/sqrt(v_i + v_j))
# (a step when v_i + v_j = 0, 1/2 on a tie). The twins enumerate all 2^(n-1) win/loss patterns of each
# document, with their exact probabilities, instead of running the recursion.


def naive_softrank_pi(mean, var, i, j):
    """P(doc i beats doc j) in SoftRank's model."""
    d = mean[i] - mean[j]
    s2 = var[i] + var[j]
    if s2 <= 0.0:
        return 1.0 if d > 0 else (0.0 if d < 0 else 0.5)
    return naive_normal_cdf(d / math.sqrt(s2))


def naive_softrank_distribution(mean, var):
    """p[j, r] = P(rank of j = r) for r = 0..n-1, by enumerating every win/loss pattern of j."""
    import itertools

    n = len(mean)
    p = np.zeros((n, n))
    for j in range(n):
        others = [i for i in range(n) if i != j]
        pis = [naive_softrank_pi(mean, var, i, j) for i in others]
        for pattern in itertools.product((0, 1), repeat=n - 1):
            prob = 1.0
            for beaten, pi in zip(pattern, pis, strict=True):
                prob *= pi if beaten else 1.0 - pi
            p[j, sum(pattern)] += prob
    return p


def naive_softrank_dcg(mean, var, gain, pos_weight, k=None):
    """Expected DCG@k under SoftRank's rank distributions: sum_j gain_j sum_{r<k} p_j(r) w_r."""
    n = len(mean)
    K = naive_truncation(k, n)
    p = naive_softrank_distribution(mean, var)
    return float(sum(gain[j] * p[j, r] * pos_weight[r] for j in range(n) for r in range(K)))


# MULTIPLE COMPARISONS =========================================================================


def naive_holm_rejections(pvalues, alpha):
    """Holm (1979) as stated: sort the p-values; reject H_(1), H_(2), ... while p_(i) <= alpha / (m - i + 1).

    NaN p-values are no tests (not counted in m, never rejected). Returns the indices rejected.
    """
    tests = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(tests)
    rejected = set()
    for rank, (p, i) in enumerate(tests, start=1):
        if p > alpha / (m - rank + 1):
            break
        rejected.add(i)
    return rejected


# ----------------------------------------------------- trace-norm matrix-variate GP (Koyejo, Lee & Ghosh)
# Dense, from the paper's formulas only: the MV-GP mean eq. (1) and covariance eq. (10) with the MN × MN
# Kronecker matrix, the objective eq. (12) in Ψ form with matrix square roots, and the r-step eq. (22) by
# enumerating every ordering γ and every face of the simplex.
def naive_sqrt(K, power=0.5):
    """Return K**power of a symmetric positive definite K."""
    w, U = np.linalg.eigh(K)
    return (U * w**power) @ U.T


def naive_vec_index(rows, cols, M):
    """Position of entry (m, n) in vec(Z), columns stacked: K = K_N ⊗ K_M."""
    return np.asarray(rows) + M * np.asarray(cols)


def naive_mvgp_mean(K_rows, K_cols, rows, cols, values, noise_var, q_rows, q_cols):
    """Eq. (1): k_T(q)ᵀ (K_T + σ² I)⁻¹ r with the full Kronecker covariance."""
    M = K_rows.shape[0]
    K = np.kron(K_cols, K_rows)
    t, q = naive_vec_index(rows, cols, M), naive_vec_index(q_rows, q_cols, M)
    weights = np.linalg.solve(K[np.ix_(t, t)] + noise_var * np.eye(t.size), values)
    return K[np.ix_(q, t)] @ weights


def naive_mvgp_cov(K_rows, K_cols, rows, cols, noise_var, q_rows, q_cols):
    """Eq. (10), first form: (K⁻¹ + PᵀP / σ²)⁻¹ (needs K positive definite)."""
    M = K_rows.shape[0]
    K = np.kron(K_cols, K_rows)
    P = np.zeros((len(rows), K.shape[0]))
    P[np.arange(len(rows)), naive_vec_index(rows, cols, M)] = 1.0
    S = np.linalg.inv(np.linalg.inv(K) + P.T @ P / noise_var)
    q = naive_vec_index(q_rows, q_cols, M)
    return S[np.ix_(q, q)]


def naive_mvgp_objective(K_rows, K_cols, rows, cols, values, noise_var, trace_weight, Psi):
    """Eq. (12): ½Σ(r - ψ)² + σ²/2 tr(Ψᵀ K_M⁻¹ Ψ K_N⁻¹) + μσ² ‖K_M^-½ Ψ K_N^-½‖_*."""
    B = naive_sqrt(K_rows, -0.5) @ Psi @ naive_sqrt(K_cols, -0.5)
    fit = 0.5 * np.sum((values - Psi[rows, cols]) ** 2)
    hilbert = 0.5 * noise_var * np.trace(Psi.T @ np.linalg.inv(K_rows) @ Psi @ np.linalg.inv(K_cols))
    return fit + hilbert + trace_weight * noise_var * np.linalg.svd(B, compute_uv=False).sum()


def naive_face_minimum(C, z, lower):
    """Minimise ½‖Cx - z‖² over {x >= lower, Σx = 1} exactly.

    Min ½‖Cx - z‖² over {x >= lower, Σx = 1} by enumerating every face: on each, the free coordinates
    solve the equality-constrained least squares (KKT system), the others sit at their bounds.
    """
    n = z.size
    best, best_x = np.inf, None
    for free in itertools.product([False, True], repeat=n):
        free = np.array(free)
        if not free.any():
            continue
        x = lower.copy()
        F = np.flatnonzero(free)
        rest = 1.0 - lower[~free].sum()
        A = C[:, F]
        target = z - C[:, ~free] @ lower[~free]
        kkt = np.block([[A.T @ A, np.ones((F.size, 1))], [np.ones((1, F.size)), np.zeros((1, 1))]])
        sol = np.linalg.lstsq(kkt, np.concatenate([A.T @ target, [rest]]), rcond=None)[0]
        x[F] = sol[: F.size]
        if (x >= lower - 1e-12).all():
            value = 0.5 * np.sum((C @ x - z) ** 2)
            if value < best:
                best, best_x = value, x
    return best, best_x


def naive_retarget(psi, positive, margin=0.0):
    """Solve eq. (22) by brute force; return (objective, r).

    Eq. (22) by brute force: every ordering π ∈ Γ (positives and negatives permuted within their blocks,
    positives first) and the exact simplex minimiser for each; returns (objective, r).
    """
    n, k = psi.size, int(positive.sum())
    C = np.triu(np.tile(1.0 / np.arange(1, n + 1), (n, 1)))  # Lemma 4: C[i, j] = 1/(j+1) for j >= i
    lower = np.zeros(n)
    if 0 < k < n:
        lower[k - 1] = margin
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    best, best_r = np.inf, None
    for p in itertools.permutations(pos):
        for q in itertools.permutations(neg):
            slots = np.array(p + q, dtype=int)  # slot i of the sorted vector goes to item slots[i]
            value, x = naive_face_minimum(C, psi[slots], lower)
            if value < best - 1e-15:
                best, best_r = value, np.empty(n)
                best_r[slots] = C @ x
    return best, best_r
