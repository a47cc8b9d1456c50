"""PreferenceGP (a GP utility learned from duels by EP, issue 13) against GPRanker and LightGBM lambdarank.

Protocol, fixed before looking at any test score:

* **PreferenceGP**: features z-scored with the training statistics; RBF with ARD, initial lengthscale √D,
  variance 1, noise σ = 1 (it sets the utility's unit), lengthscales and variance by maximising log Z_EP
  (L-BFGS-B, at most 50 iterations), ``method='ep-truncated'``; exact EP up to 2,000 duels, FITC with 100
  inducing points beyond. Ranking score: the posterior mean (alpha = 0); on MQ2008 also mean + alpha·std
  with alpha from {-1, -0.5, -0.25, 0, 0.25, 0.5, 1} chosen by validation NDCG@5.
* **GPRanker** (FITC-Rank, the paper's defaults): one initialisation per fold, at most 100 L-BFGS
  iterations, the iterate with the best validation NDCG@5, stop after 20 without improvement.
* **LightGBM lambdarank**: ``benchmarks/gp_rank.py``'s settings (``num_leaves=15, min_data_in_leaf=50``,
  <= 300 rounds, early stopping after 50 on validation NDCG@5, learning rate from {0.03, 0.1, 0.3} by
  mean validation NDCG@5), and on MQ2008 ``stochrank.softrank(k=10, variance=v)`` with v the PreferenceGP's
  posterior variance of f at the training documents, rescaled to mean 1 (as gp_rank.py does for SparseGP).

Data:

* **CatBoost query-wise** (``tests/data/catboost_querywise``; 1,500 train rows in 91 queries, 500 test rows
  in 26 queries, 50 features, real-valued targets in [0, 0.61]): PreferenceGP on CatBoost's own
  ``train.pairs`` (975 duels over 333 documents), and, for comparison, on pairs from the targets (at most
  20 per query). GPRanker and LightGBM train on the targets (LightGBM on the grades round(5·target), its
  lambdarank needs integers) with 20 % of the training queries held out for validation; PreferenceGP uses
  all training pairs and no validation. Test: NDCG@k with linear gain on the targets (the query-wise data's
  probabilities, as in ``catboost_parity.py``) and the fraction of CatBoost's ``test.pairs`` (310 duels)
  each method orders correctly.
* **MQ2008** (5 folds, train / vali / test): PreferenceGP on ``pairs_from_labels`` (at most 20 per query,
  about 5,600 duels on 4,800 documents per fold). NDCG in LightGBM's convention (exponential gain).

Cost table: one fit at fixed hyperparameters (EP to tol 1e-6, no optimisation) and one log Z_EP + gradient
evaluation, against the number of duels (MQ2008 Fold 1 pairs from labels), exact vs FITC (m = 100).

Run: ``nice -n 5 python benchmarks/preference_gp.py`` (``--quick``: Fold 1 and short runs, no RESULTS.md).
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial

import numpy as np
from _common import median, write_results_section
from catboost_parity import QUERYWISE, load_querywise
from gp_rank import LEARNING_RATES, train_lightgbm

import stochrank
from stochrank.bench.results import markdown_table, section_header
from stochrank.datasets import RankingSplit, load_mq2008, split_queries
from stochrank.gp import GPRanker, PreferenceGP, pairs_from_labels
from stochrank.metrics import ndcg

CUTOFFS = (1, 3, 5, 10)
ALPHAS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
EXACT_MAX_DUELS = 2000
N_INDUCING = 100
PAIRS_PER_QUERY = 20


def scaler(train: RankingSplit):
    mean, scale = train.X.mean(0), train.X.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    return lambda X: (X - mean) / scale


def fit_preference(
    X: np.ndarray, pairs: np.ndarray, seed: int, max_iter: int, ard: bool = True
) -> tuple[PreferenceGP, float]:
    start = time.perf_counter()
    sparse = len(pairs) > EXACT_MAX_DUELS
    gp = PreferenceGP(
        lengthscale=np.sqrt(X.shape[1]), noise=1.0, ard=ard, n_inducing=N_INDUCING if sparse else None,
        optimizer_max_iter=max_iter, random_state=seed,
    ).fit(X, pairs)  # fmt: skip
    return gp, time.perf_counter() - start


def fit_gpranker(train: RankingSplit, vali: RankingSplit, seed: int, max_iter: int) -> tuple[GPRanker, float]:
    start = time.perf_counter()
    model = GPRanker(form="fitc", random_state=seed, max_iter=max_iter, early_stopping_rounds=20).fit(
        train.X, train.y, group=train.group, eval_set=[(vali.X, vali.y)], eval_group=[vali.group]
    )
    return model, time.perf_counter() - start


def lightgbm_runs(objective, train, vali, rounds, patience, score_vali):
    """One run per learning rate: (vali score, predict function, seconds)."""
    runs = {}
    for lr in LEARNING_RATES:
        start = time.perf_counter()
        predict = train_lightgbm(objective(), lr, train, vali, rounds, patience)
        runs[lr] = (score_vali(predict), predict, time.perf_counter() - start)
    return runs


def pair_accuracy(scores: np.ndarray, pairs: np.ndarray) -> float:
    """Fraction of duels whose winner scores higher, a tie counting one half."""
    won, lost = scores[pairs[:, 0]], scores[pairs[:, 1]]
    return float(np.mean((won > lost) + 0.5 * (won == lost)))


def mean_std(values) -> str:
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}" if len(values) > 1 else f"{values[0]:.4f}"


# ------------------------------------------------------------------------------ CatBoost query-wise
def catboost_querywise(args) -> str:
    train, test = load_querywise("train"), load_querywise("test")
    own = {s: np.loadtxt(QUERYWISE / f"{s}.pairs.gz", dtype=np.int64) for s in ("train", "test")}
    fit_rows, vali = split_queries(train, 0.2, seed=0)
    scale = scaler(train)

    def linear_ndcg(split, scores, k):
        return float(ndcg(split.y, scores, split.group, k=k, gain="linear", ties="input"))

    rows = []

    def report(name, scores, duels, seconds):
        rows.append([name, *(f"{linear_ndcg(test, scores, k):.4f}" for k in CUTOFFS),
                     f"{pair_accuracy(scores, own['test']):.3f}", duels, f"{seconds:.1f}"])  # fmt: skip
        print(rows[-1])

    max_iter = 10 if args.quick else 50
    from_targets = pairs_from_labels(
        train.y, train.group, max_pairs_per_query=PAIRS_PER_QUERY, random_state=0
    )
    for label, pairs, ard in (
        ("PreferenceGP, CatBoost's train pairs", own["train"], True),
        (f"PreferenceGP, pairs from targets (<= {PAIRS_PER_QUERY}/query)", from_targets, True),
        ("PreferenceGP, CatBoost's train pairs, one shared lengthscale (ablation)", own["train"], False),
    ):
        gp, seconds = fit_preference(scale(train.X), pairs, 0, max_iter, ard=ard)
        form = "exact" if gp.inducing_points_ is None else f"FITC m={N_INDUCING}"
        report(f"{label} ({form})", gp.predict(scale(test.X)), f"{len(pairs)} duels", seconds)

    rng = np.random.default_rng(0)
    draws = [rng.permutation(test.y.size).astype(np.float64) for _ in range(200)]
    rows.append(["random order (mean of 200 draws)",
                 *(f"{np.mean([linear_ndcg(test, d, k) for d in draws]):.4f}" for k in CUTOFFS),
                 f"{np.mean([pair_accuracy(d, own['test']) for d in draws]):.3f}", "-", "-"])  # fmt: skip
    ranker, seconds = fit_gpranker(fit_rows, vali, 0, 20 if args.quick else 100)
    report("GPRanker (FITC-Rank)", ranker.predict(test.X), "targets", seconds)

    graded = [RankingSplit(s.X, np.round(5 * s.y), s.qid, s.group) for s in (fit_rows, vali)]
    rounds, patience = (50, 10) if args.quick else (300, 50)
    runs = lightgbm_runs(lambda: "lambdarank", *graded, rounds, patience,
                         lambda predict: linear_ndcg(vali, predict(vali.X), 5))  # fmt: skip
    lr = max(runs, key=lambda r: runs[r][0])
    report(f"LightGBM lambdarank (lr {lr})", runs[lr][1](test.X), "grades round(5·target)", runs[lr][2])
    headers = ["method", *(f"test NDCG@{k}" for k in CUTOFFS), "test.pairs ordered", "trained on", "fit s"]
    return markdown_table(headers, rows, align="lrrrrrlr")


# ------------------------------------------------------------------------------------------- MQ2008
def mq2008(args) -> tuple[str, dict[str, list[float]], list[tuple[float, float]]]:
    folds = (1,) if args.quick else (1, 2, 3, 4, 5)
    rounds, patience = (50, 10) if args.quick else (300, 50)
    results: dict[str, list] = {}  # method -> per fold ([test NDCG@k], seconds)
    lgb: dict[str, dict] = {}  # method -> lr -> per fold (vali NDCG@5, [test NDCG@k], seconds)
    alphas_chosen, fold1 = [], None

    def score(split, scores, k):
        return float(ndcg(split.y, scores, split.group, k=k, ties="input"))

    def vali_ndcg5(vali, predict):
        return score(vali, predict(vali.X), 5)

    for fold in folds:
        train, vali, test = (load_mq2008(fold, s) for s in ("train", "vali", "test"))
        scale = scaler(train)
        pairs = pairs_from_labels(
            train.y, train.group, max_pairs_per_query=PAIRS_PER_QUERY, random_state=fold
        )
        gp, seconds = fit_preference(scale(train.X), pairs, fold, 10 if args.quick else 50)
        if fold1 is None:
            fold1 = (gp, scale(train.X), train)
        (mv, sv), (mt, st) = (gp.predict(scale(s.X), return_std=True) for s in (vali, test))
        alpha = max(ALPHAS, key=lambda a: score(vali, mv + a * sv, 5))
        alphas_chosen.append(alpha)
        name = f"PreferenceGP (FITC m={N_INDUCING}, {len(pairs)} duels in fold {fold})"
        for label, scores in (
            ("PreferenceGP, alpha = 0", mt),
            ("PreferenceGP, alpha on vali", mt + alpha * st),
        ):
            results.setdefault(label, []).append(([score(test, scores, k) for k in CUTOFFS], seconds))
        print(f"fold {fold} {name}: test NDCG@5 {results['PreferenceGP, alpha = 0'][-1][0][2]:.4f} "
              f"({seconds:.0f} s), alpha {alpha}")  # fmt: skip

        ranker, seconds = fit_gpranker(train, vali, fold, 20 if args.quick else 100)
        test_scores = [score(test, ranker.predict(test.X), k) for k in CUTOFFS]
        results.setdefault("GPRanker (FITC-Rank)", []).append((test_scores, seconds))
        print(f"fold {fold} GPRanker: test NDCG@5 {test_scores[2]:.4f} ({seconds:.0f} s)")

        std = gp.predict(scale(train.X), return_std=True)[1]
        objectives = {
            "LightGBM lambdarank": lambda: "lambdarank",
            "LightGBM + softrank(k=10, variance=PreferenceGP)": partial(
                stochrank.softrank, k=10, variance=std**2 / np.mean(std**2)
            ),
        }
        for name, objective in objectives.items():
            runs = lightgbm_runs(objective, train, vali, rounds, patience, partial(vali_ndcg5, vali))
            for lr, (vali_score, predict, secs) in runs.items():
                test_scores = [score(test, predict(test.X), k) for k in CUTOFFS]
                lgb.setdefault(name, {}).setdefault(lr, []).append((vali_score, test_scores, secs))
            print(f"fold {fold} {name}: " + ", ".join(f"lr {lr} vali {r[0]:.4f}" for lr, r in runs.items()))

    for name, by_lr in lgb.items():
        lr = max(by_lr, key=lambda r: np.mean([run[0] for run in by_lr[r]]))
        results[f"{name} (lr {lr})"] = [(run[1], run[2]) for run in by_lr[lr]]
    rows = [[name, *(mean_std([r[0][i] for r in runs]) for i in range(len(CUTOFFS))),
             f"{np.mean([r[1] for r in runs]):.1f}"] for name, runs in results.items()]  # fmt: skip
    table = markdown_table(["method", *(f"test NDCG@{k}" for k in CUTOFFS), "s per fit"], rows)
    return table, {"alpha": alphas_chosen}, cost_table(*fold1, quick=args.quick)


# --------------------------------------------------------------------------------------------- cost
def cost_table(fitted: PreferenceGP, X: np.ndarray, train: RankingSplit, quick: bool):
    """Seconds of one EP fit and one log Z_EP + gradient at the fitted hyperparameters, against duels."""
    sizes = (250, 500, 1000) if quick else (250, 500, 1000, 2000, 4000, 8000, 16000)
    rng = np.random.default_rng(0)
    fixed = {
        "lengthscale": fitted.lengthscale_,
        "variance": fitted.variance_,
        "noise": 1.0,
        "optimize": False,
    }
    rows = []
    all_pairs = pairs_from_labels(train.y, train.group)
    for t in sizes:
        sample = all_pairs[rng.choice(len(all_pairs), t, replace=False)]
        row = [f"{t:,}", f"{len(np.unique(sample)):,}"]
        for n_inducing in (None, N_INDUCING):
            if n_inducing is None and t > EXACT_MAX_DUELS:
                row += ["-", "-", "-"]
                continue
            fit_s, grad_s, sweeps = [], [], 0
            for _ in range(1 if t >= 4000 else 3):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    gp = PreferenceGP(n_inducing=n_inducing, random_state=0, **fixed).fit(X, sample)
                fit_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                gp.log_marginal_likelihood(gp.theta_, eval_gradient=True)
                grad_s.append(time.perf_counter() - start)
                sweeps = gp.n_iter_
            row += [f"{median(fit_s):.2f}", f"{median(grad_s):.2f}", str(sweeps)]
        rows.append(row)
        print(rows[-1])
    headers = ["duels t", "documents", "exact: EP fit s", "exact: log Z + grad s", "exact: sweeps",
               f"FITC m={N_INDUCING}: EP fit s", "FITC: log Z + grad s", "FITC: sweeps"]  # fmt: skip
    return markdown_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Fold 1 and short runs; RESULTS.md untouched")
    args = parser.parse_args()
    start = time.perf_counter()
    qw_table = catboost_querywise(args)
    mq_table, extra, cost = mq2008(args)
    wall = time.perf_counter() - start
    print(
        qw_table, mq_table, cost, f"alpha chosen per fold: {extra['alpha']}", f"wall {wall:.0f} s", sep="\n\n"
    )
    if args.quick:
        return
    body = "\n".join([
        section_header("9. PreferenceGP (preference GP by EP) against GPRanker and LightGBM"),
        (f"Wall time {wall / 60:.1f} min. Protocol in the docstring of `benchmarks/preference_gp.py` "
         "(PreferenceGP: z-scored features, ARD RBF, σ = 1 fixed, lengthscales and variance by log Z_EP; "
         f"exact EP up to {EXACT_MAX_DUELS:,} duels, FITC with {N_INDUCING} inducing points beyond; "
         "single-threaded BLAS in the GP code)."),
        "", "**CatBoost query-wise data** (one train/test split; NDCG with linear gain on the real-valued "
        "targets; `test.pairs ordered`: fraction of CatBoost's 310 test duels whose winner scores higher, "
        "ties counting one half):",
        "", qw_table, "",
        f"**MQ2008**, 5 folds, mean ± std over folds (alpha chosen on vali per fold: {extra['alpha']}):",
        "", mq_table, "",
        ("**Cost** of PreferenceGP against the number of duels t (MQ2008 Fold 1 pairs from labels, sampled; "
         "fixed hyperparameters of the Fold-1 fit; median of 3 runs below 4,000 duels, one run above). Exact "
         "EP is O(t³) per sweep (a t×t Cholesky and triangular solve); FITC O(t·m²). `log Z + grad`: one "
         "evaluation of the evidence and its gradient as the optimiser calls it (EP from no sites)."),
        "", cost,
    ])  # fmt: skip
    write_results_section("preference_gp", body)


if __name__ == "__main__":
    main()
