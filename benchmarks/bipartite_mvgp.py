"""Multitask bipartite ranking on synthetic positive-unlabelled data, and TraceNormMVGP's cost against size.

Methods: BipartiteMVGPRanker (the seed's model, margin 0, and with margin 0.5), TraceNormMVGP regression on
±1 labels, the unconstrained MV-GP (trace_weight = 0) and a boosted per-item model on concatenated task/item
features: LightGBM lambdarank, and LightGBM with ``stochrank.auc()`` whenever stochrank has it (issue 15,
part 1: the row appears by itself once that objective exists).

Data (per seed; a disease–gene-like PU problem, the seed's data are not available offline):

* tasks and items have latent factors (dimension 5) drawn around cluster centres (8 task families,
  12 item modules); the relevance of item n to task m is ⟨u_m, v_n⟩ plus Gaussian noise, and each task's
  true positives are its top 15–60 items (≈ 3–12 % of 500);
* side information: each task and item has a noisy view of its factor (unit noise on top of the factor,
  plus 5 pure-noise coordinates); the kernels come from 10-nearest-neighbour graphs on those noisy features
  with 15 % of the edges rewired at random: items get the diffusion kernel exp(-2 L) + 0.05 I, tasks the
  regularised-Laplacian kernel (I + 5 L)^-1 (L the normalised Laplacian); LightGBM gets the noisy
  features themselves (task's and item's, concatenated);
* 80 tasks: 70 known, 10 new (no observation at all: predicted through the task kernel, Theorem 1);
  for a known task half of its positives (at least one) are observed, everything else is unlabelled;
  every model trains on all 70 × 500 entries of the known tasks (observed positive or unlabelled);
* test: per task, the items not observed as positive are ranked and the held-out positives are the
  relevant ones (for new tasks every item is ranked and every positive is relevant); per-task AUC, MAP
  (whole list) and precision@10, averaged over tasks, then mean ± std over seeds.

Model selection (no test positives): 30 % of each known task's observed positives (tasks with at least
two) are hidden as validation positives, every configuration is fitted on the rest and scored by validation
MAP; the best one is refitted on all observed positives. Grids: MV-GP λ path (α = 0, 10 values);
TraceNormMVGP α ∈ {0.5, 0.9, 0.99, 0.999} × λ path (10 values from λ_max down to 1e-3 λ_max); each ranker
α ∈ {0, 0.9, 0.99} × λ ∈ {1, 0.3, 0.1, 0.03} × λ_max of its initial targets; LightGBM lambdarank (31 leaves,
learning rate 0.05, 1 thread) and LightGBM with stochrank.auc() (same tree parameters, default smoothing) with
50–1600 rounds (doubling).

Run: ``nice -n 10 python benchmarks/bipartite_mvgp.py`` (``--quick``: one seed, small grids, nothing
written; ``--scaling``: only the cost/memory table).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from dataclasses import dataclass

import numpy as np
from _common import write_results_section
from scipy.stats import rankdata
from threadpoolctl import threadpool_limits

import stochrank
from stochrank.bench.results import markdown_table, section_header
from stochrank.gp import BipartiteMVGPRanker, TraceNormMVGP
from stochrank.gp._mvgp_core import gradient_at_zero, solve
from stochrank.gp._mvgp_inputs import build_problem
from stochrank.metrics import map as map_metric
from stochrank.metrics import precision

N_TASKS, N_NEW, N_ITEMS, RANK = 80, 10, 500, 5
LGB_PARAMS = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.05, "min_data_in_leaf": 20,
              "num_threads": 1, "deterministic": True, "verbosity": -1, "seed": 0}  # fmt: skip
LGB_ROUNDS = (50, 100, 200, 400, 800, 1600)
HAS_AUC = hasattr(stochrank, "auc")  # issue 15, part 1 (another branch): the row appears once it lands
MARGIN = 0.5  # a round middle value of [0, 1), not tuned
RANKER_SEED = "BipartiteMVGPRanker (seed model, margin = 0)"
RANKER_MARGIN = f"BipartiteMVGPRanker (margin = {MARGIN})"
LGB_AUC = "LightGBM stochrank.auc()"
SCALING_CAPTION = (
    "Cost of TraceNormMVGP against size (λ = 0.1 λ_max at α = 0.9, a rank-3 signal plus noise; 'grid' "
    "observes every entry, 'scattered' a random 5 %; one BLAS thread, single runs): set-up is the two "
    "eigen-decompositions and the operator norm; peak memory is tracemalloc's over fit plus a prediction of "
    "all M·N entries; the last two columns are what eq. (1)'s T × T matrix and K_N ⊗ K_M would take in "
    "float64 (never formed)."
)
DATA_LINE = (
    f"Data: {N_TASKS} tasks × {N_ITEMS} items per seed ({N_TASKS - N_NEW} known tasks, every entry of "
    f"theirs in training: {(N_TASKS - N_NEW) * N_ITEMS:,} rows; {N_NEW} new tasks with no observation), "
    f"rank-{RANK} relevance, half of each known task's positives observed; kernels from noisy rewired 10-NN "
    f"graphs; LightGBM on {2 * (RANK + 5)} features (task's and item's noisy side information), 1 thread; "
    "the GP models single-threaded BLAS. Per-task metrics on held-out positives ('known': the known tasks' "
    "unobserved positives among their unlabelled items; 'new': every positive of the new tasks), averaged "
    "over tasks, mean ± std over seeds; time: median over seeds of the validation search plus the refit."
)


# ------------------------------------------------------------------------------------------------ data
@dataclass
class PUData:
    K_tasks: np.ndarray  # (80, 80), every task
    K_items: np.ndarray  # (500, 500)
    X_tasks: np.ndarray  # noisy task features (what the graphs were built from)
    X_items: np.ndarray
    truth: np.ndarray  # (80, 500) bool, every true positive
    observed: np.ndarray  # (80, 500) bool, the observed positives (none for new tasks)
    known: np.ndarray  # indices of the known tasks
    new: np.ndarray  # indices of the new tasks


def clustered(n, n_clusters, rng, spread):
    centres = rng.standard_normal((n_clusters, RANK))
    return centres[rng.integers(n_clusters, size=n)] + spread * rng.standard_normal((n, RANK))


def noisy_graph_laplacian(X, rng, k=10, rewire=0.15):
    """Normalised Laplacian of a symmetrised k-NN graph on X with a share of the edges rewired at random."""
    n = X.shape[0]
    sq = (X * X).sum(1)
    dist = sq[:, None] + sq[None, :] - 2 * X @ X.T
    np.fill_diagonal(dist, np.inf)
    A = np.zeros((n, n))
    nearest = np.argsort(dist, axis=1)[:, :k]
    A[np.repeat(np.arange(n), k), nearest.ravel()] = 1.0
    A = np.maximum(A, A.T)
    i, j = np.nonzero(np.triu(A))
    moved = rng.random(i.size) < rewire
    A[i[moved], j[moved]] = A[j[moved], i[moved]] = 0.0
    a, b = rng.integers(n, size=(2, int(moved.sum())))
    keep = a != b
    A[a[keep], b[keep]] = A[b[keep], a[keep]] = 1.0
    d = np.maximum(A.sum(1), 1.0) ** -0.5
    return np.eye(n) - d[:, None] * A * d[None, :]


def spectral(L, fn):
    w, U = np.linalg.eigh(L)
    K = (U * fn(np.clip(w, 0.0, None))) @ U.T
    return 0.5 * (K + K.T)


def make_data(seed):
    rng = np.random.default_rng(seed)
    U = clustered(N_TASKS, 8, rng, 0.6)
    V = clustered(N_ITEMS, 12, rng, 0.6)
    relevance = U @ V.T / np.sqrt(RANK) + 0.5 * rng.standard_normal((N_TASKS, N_ITEMS))
    n_pos = rng.integers(15, 61, size=N_TASKS)
    truth = np.zeros((N_TASKS, N_ITEMS), dtype=bool)
    for m in range(N_TASKS):
        truth[m, np.argsort(-relevance[m])[: n_pos[m]]] = True
    X_tasks = np.hstack([U + rng.standard_normal(U.shape), rng.standard_normal((N_TASKS, 5))])
    X_items = np.hstack([V + rng.standard_normal(V.shape), rng.standard_normal((N_ITEMS, 5))])
    K_tasks = spectral(noisy_graph_laplacian(X_tasks, rng), lambda w: 1.0 / (1.0 + 5.0 * w))
    K_items = spectral(noisy_graph_laplacian(X_items, rng), lambda w: np.exp(-2.0 * w) + 0.05)
    tasks = rng.permutation(N_TASKS)
    new, known = np.sort(tasks[:N_NEW]), np.sort(tasks[N_NEW:])
    observed = np.zeros_like(truth)
    for m in known:
        pos = rng.permutation(np.flatnonzero(truth[m]))
        observed[m, pos[: max(1, pos.size // 2)]] = True
    return PUData(K_tasks, K_items, X_tasks, X_items, truth, observed, known, new)


def validation_split(data, rng, share=0.3):
    """(fit positives, validation positives): a share of each known task's observed positives hidden."""
    fit, val = data.observed.copy(), np.zeros_like(data.observed)
    for m in data.known:
        pos = rng.permutation(np.flatnonzero(data.observed[m]))
        n_val = round(share * pos.size) if pos.size >= 2 else 0
        fit[m, pos[:n_val]] = False
        val[m, pos[:n_val]] = True
    return fit, val


# ------------------------------------------------------------------------------------------- metrics
def auc_per_task(relevant, scores, group):
    """Return the per-task AUC of eq. (19): the share of positive–negative pairs ordered correctly.

    Ties count 1/2; NaN for a task without positives or without negatives. stochrank.metrics.auc (issue 15,
    part 1) with the same conventions once it exists; this rank-sum form until then.
    """
    if hasattr(stochrank.metrics, "auc"):
        labels = relevant.astype(np.float64)
        return stochrank.metrics.auc(labels, scores, group, ties="average", per_query=True)
    out, start = np.empty(len(group)), 0
    for q, n in enumerate(group):
        rel, s = relevant[start : start + n], scores[start : start + n]
        start += n
        n_pos = int(rel.sum())
        if n_pos == 0 or n_pos == n:
            out[q] = np.nan
            continue
        ranks = rankdata(s)  # average ranks: a tie contributes 1/2
        out[q] = (ranks[rel].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (n - n_pos))
    return out


def evaluate(scores, relevant, exclude, tasks):
    """Mean per-task AUC, MAP and P@10 over ``tasks`` (tasks without a relevant item are skipped)."""
    labels, flat, group = [], [], []
    for m in tasks:
        keep = ~exclude[m]
        if relevant[m, keep].any():
            labels.append(relevant[m, keep].astype(np.float64))
            flat.append(scores[m, keep])
            group.append(int(keep.sum()))
    y, s = np.concatenate(labels), np.concatenate(flat)
    return {
        "AUC": float(np.nanmean(auc_per_task(y > 0, s, group))),
        "MAP": float(map_metric(y, s, group, empty="skip")),
        "P@10": float(precision(y, s, group, k=10, empty="skip")),
    }


# ------------------------------------------------------------------------------------------- methods
def grid_entries(data):
    """Every (known task, item) entry: the observed positives and the unlabelled rest."""
    rows = np.repeat(data.known, N_ITEMS)
    cols = np.tile(np.arange(N_ITEMS), data.known.size)
    return rows, cols


def score_matrix(model, data):
    rows, cols = np.repeat(np.arange(N_TASKS), N_ITEMS), np.tile(np.arange(N_ITEMS), N_TASKS)
    return model.predict(rows, cols).reshape(N_TASKS, N_ITEMS)


def mvgp_path(data, positives, alpha, n_lambdas):
    rows, cols = grid_entries(data)
    values = np.where(positives[rows, cols], 1.0, -1.0)
    est = TraceNormMVGP(max_iter=3000, tol=1e-6)
    fits = est.path(data.K_tasks, data.K_items, rows, cols, values, alpha=alpha, n_lambdas=n_lambdas)
    return [((f.lambda_, alpha), score_matrix(f, data)) for f in fits]


def mvgp_fit(data, positives, config):
    lam, alpha = config
    rows, cols = grid_entries(data)
    values = np.where(positives[rows, cols], 1.0, -1.0)
    model = TraceNormMVGP(
        noise_var=lam * (1 - alpha), trace_weight=alpha / (1 - alpha), max_iter=3000, tol=1e-6
    )
    return score_matrix(model.fit(data.K_tasks, data.K_items, rows, cols, values), data)


def ranker_lambda_max(data, positives, alpha):
    """λ_max of eq. (16) for the ranker's initial targets (mass 1/|D+| on each task's positives)."""
    rows, cols = grid_entries(data)
    pos = positives[rows, cols]
    r0 = pos / positives[rows].sum(1)
    top = TraceNormMVGP().path(data.K_tasks, data.K_items, rows, cols, r0, alpha=alpha, n_lambdas=1)[0]
    return top.lambda_


def ranker_fit(data, positives, config, margin, stats=None):
    """Score matrix of BipartiteMVGPRanker at (λ, α) of eq. (16) with the given margin."""
    lam, alpha = config
    rows, cols = grid_entries(data)
    model = BipartiteMVGPRanker(noise_var=lam * (1 - alpha), trace_weight=alpha / (1 - alpha), max_iter=2000,
                                tol=1e-5, inner_tol=1e-7, margin=margin)  # fmt: skip
    start = time.perf_counter()
    model.fit(data.K_tasks, data.K_items, rows, cols, positives[rows, cols].astype(int))
    if stats is not None:
        stats.append((time.perf_counter() - start, model.n_iter_, model.converged_, model.rank_))
    return score_matrix(model, data)


def lgb_scores(data, positives, rounds, objective="lambdarank"):
    """LightGBM on [task features, item features] (one query per task); one score matrix per number of rounds.

    ``objective``: "lambdarank" or "stochrank.auc" (a fresh ``stochrank.auc()`` per training run).
    """
    import lightgbm as lgb

    rows, cols = grid_entries(data)
    X = np.hstack([data.X_tasks[rows], data.X_items[cols]])
    params = {**LGB_PARAMS, "objective": stochrank.auc() if objective == "stochrank.auc" else objective}
    booster = lgb.train(params, lgb.Dataset(X, positives[rows, cols].astype(float),
                        group=np.full(data.known.size, N_ITEMS)), num_boost_round=max(rounds))  # fmt: skip
    all_rows, all_cols = np.repeat(np.arange(N_TASKS), N_ITEMS), np.tile(np.arange(N_ITEMS), N_TASKS)
    X_all = np.hstack([data.X_tasks[all_rows], data.X_items[all_cols]])
    return [(r, booster.predict(X_all, num_iteration=r).reshape(N_TASKS, N_ITEMS)) for r in rounds]


# ------------------------------------------------------------------------------------------ protocol
def run_seed(seed, args, table, timing):
    data = make_data(seed)
    fit_pos, val_pos = validation_split(data, np.random.default_rng(1000 + seed))
    n_lambdas = 4 if args.quick else 10
    alphas = (0.9,) if args.quick else (0.5, 0.9, 0.99, 0.999)
    steps = (0.3, 0.1) if args.quick else (1.0, 0.3, 0.1, 0.03)
    rounds = LGB_ROUNDS[:2] if args.quick else LGB_ROUNDS

    def ranker_search(pos, margin):
        return [
            ((s * lam_max, a), ranker_fit(data, pos, (s * lam_max, a), margin))
            for a in ((0.0, 0.9) if args.quick else (0.0, 0.9, 0.99))
            for lam_max in [ranker_lambda_max(data, pos, a)]
            for s in steps
        ]

    def vali(scores):
        return evaluate(scores, val_pos, fit_pos, data.known)["MAP"]

    candidates = {
        "MV-GP (trace_weight = 0) on ±1": lambda pos: mvgp_path(data, pos, 0.0, n_lambdas),
        "TraceNormMVGP on ±1": lambda pos: [c for a in alphas for c in mvgp_path(data, pos, a, n_lambdas)],
        RANKER_SEED: lambda pos: ranker_search(pos, 0.0),
        RANKER_MARGIN: lambda pos: ranker_search(pos, MARGIN),
        "LightGBM lambdarank": lambda pos: lgb_scores(data, pos, rounds),
    }
    if HAS_AUC:
        candidates[LGB_AUC] = lambda pos: lgb_scores(data, pos, rounds, "stochrank.auc")
    refit = {
        "MV-GP (trace_weight = 0) on ±1": lambda c: mvgp_fit(data, data.observed, c),
        "TraceNormMVGP on ±1": lambda c: mvgp_fit(data, data.observed, c),
        RANKER_SEED: lambda c: ranker_fit(data, data.observed, c, 0.0, timing.setdefault(RANKER_SEED, [])),
        RANKER_MARGIN: lambda c: ranker_fit(
            data, data.observed, c, MARGIN, timing.setdefault(RANKER_MARGIN, [])
        ),
        "LightGBM lambdarank": lambda c: lgb_scores(data, data.observed, (c,))[0][1],
        LGB_AUC: lambda c: lgb_scores(data, data.observed, (c,), "stochrank.auc")[0][1],
    }
    for name, search in candidates.items():
        start = time.perf_counter()
        scored = [(config, vali(s)) for config, s in search(fit_pos)]
        config, best = max(scored, key=lambda cs: cs[1])
        scores = refit[name](config)
        seconds = time.perf_counter() - start
        known = evaluate(scores, data.truth & ~data.observed, data.observed, data.known)
        new = evaluate(scores, data.truth, np.zeros_like(data.truth), data.new)
        table.setdefault(name, []).append((known, new, seconds, config))
        print(f"seed {seed} {name}: config {config}, vali MAP {best:.4f}; known {fmt_metrics(known)}; "
              f"new {fmt_metrics(new)} ({seconds:.1f} s)", flush=True)  # fmt: skip


def fmt_metrics(m):
    return ", ".join(f"{k} {v:.3f}" for k, v in m.items())


def mean_std(values):
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}"


def quality_tables(table):
    metrics = ("AUC", "MAP", "P@10")
    headers = [
        "method",
        *(f"known {k}" for k in metrics),
        *(f"new {k}" for k in metrics),
        "search + refit (s)",
    ]
    rows = []
    for name, runs in table.items():
        known = [mean_std([r[0][k] for r in runs]) for k in metrics]
        new = [mean_std([r[1][k] for r in runs]) for k in metrics]
        rows.append([name, *known, *new, f"{np.median([r[2] for r in runs]):.0f}"])
    return markdown_table(headers, rows)


# ------------------------------------------------------------------------------------------- scaling
def scaling_rows(sizes, share):
    """Measure set-up and solver time, iterations and peak traced memory of TraceNormMVGP at growing sizes.

    λ = 0.1 λ_max at α = 0.9 (a low-rank solution), rank-3 signal plus noise; 'grid' observes every entry,
    'scattered' a random ``share`` of them. Set-up (eigen-decompositions, operator norm) and the solver are
    timed apart, one BLAS thread as in fit; the peak traced memory covers fit and a prediction of all M·N
    entries.
    """
    rows = []
    for M, N in sizes:
        rng = np.random.default_rng(M + N)
        K_rows = spectral(
            noisy_graph_laplacian(rng.standard_normal((M, RANK)), rng), lambda w: np.exp(-2.0 * w) + 0.05
        )
        K_cols = spectral(
            noisy_graph_laplacian(rng.standard_normal((N, RANK)), rng), lambda w: np.exp(-2.0 * w) + 0.05
        )
        truth = rng.standard_normal((M, 3)) @ rng.standard_normal((3, N))
        for kind in ("grid", "scattered"):
            if kind == "grid":
                r, c = np.repeat(np.arange(M), N), np.tile(np.arange(N), M)
            else:
                flat = rng.choice(M * N, size=int(share * M * N), replace=False)
                r, c = flat // N, flat % N
            values = truth[r, c] + 0.3 * rng.standard_normal(r.size)
            with threadpool_limits(limits=1, user_api="blas"):  # as fit does
                start = time.perf_counter()
                problem = build_problem(K_rows, K_cols, r, c, "benchmark")  # eigen-decompositions, operator
                setup = time.perf_counter() - start
                data, const = problem.op.encode(values)
                lam = 0.1 * float(np.linalg.norm(gradient_at_zero(problem.op, data), 2)) / 0.9  # 0.1 λ_max
                noise_var, trace = 0.1 * lam, 0.9 * lam
                start = time.perf_counter()
                sol = solve(problem.op, data, const, noise_var, trace, np.zeros((problem.row_basis.keep,
                            problem.col_basis.keep)), max_iter=300, tol=1e-6,
                            lipschitz=problem.op.norm_sq + noise_var)  # fmt: skip
                solver = time.perf_counter() - start
            model = TraceNormMVGP(noise_var=noise_var, trace_weight=trace / noise_var, max_iter=300, tol=1e-6)
            tracemalloc.start()
            model.fit(K_rows, K_cols, r, c, values)
            model.predict(np.repeat(np.arange(M), N), np.tile(np.arange(N), M))
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            T = r.size
            per_iteration = 1e3 * solver / max(sol.n_iter, 1)
            dense = (f"{8 * T * T / 2**30:,.1f}", f"{8 * (M * N) ** 2 / 2**30:,.0f}")
            rows.append([f"{M} × {N}", kind, f"{T:,}", f"{setup:.2f}", f"{solver:.2f}", sol.n_iter,
                         "yes" if sol.converged else "no", f"{per_iteration:.1f}", sol.singular.size,
                         f"{peak / 2**20:.0f}", *dense])  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one seed, small grids, RESULTS.md untouched")
    parser.add_argument("--scaling", action="store_true", help="only the cost/memory table")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()

    body = []
    if not args.scaling:
        table, timing = {}, {}
        for seed in range(1 if args.quick else args.seeds):
            run_seed(seed, args, table, timing)
        quality = quality_tables(table)
        print(quality)
        body.append(quality)
        if not HAS_AUC:
            body.append(f"No `{LGB_AUC}` row: this tree has no `stochrank.auc` yet (issue 15, part 1).")
        for name, fits in timing.items():
            text = "; ".join(f"{s:.1f} s, {it} alternations, converged {c}, rank {k}" for s, it, c, k in fits)
            body.append(f"{name} refits (one per seed): {text}.")
    sizes = [(50, 500), (100, 1000)] if args.quick else [(50, 500), (100, 1000), (200, 2000), (300, 3000)]
    scaling = markdown_table(
        ["M × N", "observed", "T", "set-up (s)", "solver (s)", "iterations", "converged", "ms / iteration",
         "rank", "peak memory (MiB)", "eq. (1) T × T (GiB)", "K_N ⊗ K_M (GiB)"],
        scaling_rows(sizes, 0.05),
    )  # fmt: skip
    print(scaling)
    body += [SCALING_CAPTION, scaling]
    if not (args.quick or args.scaling):
        title = "Multitask bipartite ranking (issue 15): TraceNormMVGP and BipartiteMVGPRanker"
        write_results_section("bipartite_mvgp", "\n\n".join([section_header(title), DATA_LINE, *body]))


if __name__ == "__main__":
    main()
