"""GP-Rank / FITC-Rank (Guiver & Snelson, SIGIR 2008) on MQ2008, against LightGBM with SoftRank
(constant and GP variance), stochrank.ndcg and lambdarank; and the paper's NDCG@5-against-alpha
experiment for the risk-adjusted ranking mean + alpha·std.

Protocol (5 folds of MQ2008; train / vali / test):

* LightGBM (``num_leaves=15, min_data_in_leaf=50``, at most 300 rounds, early stopping after 50 rounds
  without a better vali NDCG@5, best iteration kept, 1 thread; learning rate from {0.03, 0.1, 0.3} by mean
  vali NDCG@5 over the folds, per objective, as in the test suite's shared protocol) with four objectives:
  ``lambdarank``; ``stochrank.ndcg(k=5)``; ``stochrank.softrank(k=10)`` (σ = 1); and
  ``stochrank.softrank(k=10, variance=v)`` with v the predictive variance of a FITC ``SparseGP`` fitted to
  the fold's training labels, rescaled to mean 1 (the same average smoothing as σ = 1, the per-document
  shape from the GP).
* GPRanker, both forms (paper defaults: 2 prototypes per label value for FITC, 4 for GP-Rank; linear
  training discount over the whole list; L-BFGS-B with the iterate of best vali NDCG@5 kept, at most 100
  iterations, stop after 20 without improvement), ``--trials`` (10, as in the paper) random prototype
  initialisations per fold.
* Alpha experiment (paper section 6.2, Fig. 2): for each alpha in -0.5..0.5 (step 0.1) and each fold, the
  trial with the best vali NDCG@5 of ``mean + alpha·std``; train / vali / test NDCG@5 of that model at that
  alpha, mean ± std over folds, plotted to ``benchmarks/gp_alpha.png``. The method table reports GPRanker
  at alpha = 0.

NDCG is LightGBM's convention (exp gain, ties in input order, a query without relevant documents counts 1).

Run: ``nice -n 5 python benchmarks/gp_rank.py`` (``--quick``: Fold 1, one trial, short runs; neither
RESULTS.md nor the figure).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import REPO, write_results_section

from stochrank import ndcg as stochrank_ndcg
from stochrank.bench.results import markdown_table, section_header
from stochrank.datasets import load_mq2008
from stochrank.gp import GPRanker, SparseGP
from stochrank.metrics import ndcg
from stochrank.objectives import softrank

CUTOFFS = (1, 3, 5, 10)
ALPHAS = np.round(np.linspace(-0.5, 0.5, 11), 1)
LGB_PARAMS = {"num_leaves": 15, "min_data_in_leaf": 50, "num_threads": 1, "deterministic": True,
              "verbosity": -1, "seed": 0}  # fmt: skip
LEARNING_RATES = (0.03, 0.1, 0.3)
FIGURE = REPO / "benchmarks" / "gp_alpha.png"


def score(split, scores, k):
    return float(ndcg(split.y, scores, split.group, k=k, ties="input"))


def train_lightgbm(objective, learning_rate, train, vali, rounds, patience):
    import lightgbm as lgb

    dtrain = lgb.Dataset(train.X, train.y, group=train.group, free_raw_data=False)
    dvali = lgb.Dataset(vali.X, vali.y, group=vali.group, reference=dtrain)
    booster = lgb.train(
        {**LGB_PARAMS, "learning_rate": learning_rate, "objective": objective, "metric": "ndcg",
         "eval_at": [5]},
        dtrain,
        num_boost_round=rounds, valid_sets=[dvali],
        callbacks=[lgb.early_stopping(patience, first_metric_only=True, verbose=False)],
    )  # fmt: skip
    best = booster.best_iteration or booster.current_iteration()
    return lambda X: booster.predict(X, num_iteration=best)


def gp_variance(train):
    """Per-document variance from a FITC SparseGP fitted to the training labels, scaled to mean 1."""
    model = SparseGP(form="fitc", random_state=0).fit(train.X, train.y)
    var = model.predict(train.X, return_std=True)[1] ** 2
    return var / var.mean()


def run_fold(fold, args, results, lgb_runs, alpha_runs, spread):
    train, vali, test = (load_mq2008(fold, s) for s in ("train", "vali", "test"))
    rounds, patience = (50, 10) if args.quick else (300, 50)
    variance = gp_variance(train)
    lgb_objectives = {
        "LightGBM lambdarank": lambda: "lambdarank",
        "LightGBM + stochrank.ndcg(k=5)": lambda: stochrank_ndcg(k=5),
        "LightGBM + softrank(k=10), σ = 1": lambda: softrank(k=10),
        "LightGBM + softrank(k=10), GP variance": lambda: softrank(k=10, variance=variance),
    }
    for name, make in lgb_objectives.items():
        for lr in LEARNING_RATES:
            start = time.perf_counter()
            predict = train_lightgbm(make(), lr, train, vali, rounds, patience)
            run = (score(vali, predict(vali.X), 5), [score(test, predict(test.X), k) for k in CUTOFFS],
                   time.perf_counter() - start)  # fmt: skip
            lgb_runs.setdefault(name, {}).setdefault(lr, []).append(run)
            print(
                f"fold {fold} {name} lr {lr}: vali NDCG@5 {run[0]:.4f}, test {run[1][2]:.4f} ({run[2]:.1f} s)"
            )

    for form, label in (("fitc", "FITC-Rank"), ("prototype", "GP-Rank")):
        trials = []
        for trial in range(args.trials):
            start = time.perf_counter()
            model = GPRanker(
                form=form,
                random_state=100 * fold + trial,
                max_iter=20 if args.quick else 100,
                early_stopping_rounds=20,
            ).fit(train.X, train.y, group=train.group, eval_set=[(vali.X, vali.y)], eval_group=[vali.group])
            moments = {name: model.predict(split.X, return_std=True) for name, split in
                       (("train", train), ("vali", vali), ("test", test))}  # fmt: skip
            trials.append((moments, time.perf_counter() - start))
        splits = {"train": train, "vali": vali, "test": test}
        for alpha in ALPHAS:
            per_trial = [{name: score(splits[name], m + alpha * s, 5) for name, (m, s) in moments.items()}
                         for moments, _ in trials]  # fmt: skip
            best = max(range(len(trials)), key=lambda t: per_trial[t]["vali"])
            alpha_runs.setdefault(label, {}).setdefault(float(alpha), []).append(per_trial[best])
            if alpha == 0.0:
                mean, std = trials[best][0]["test"]
                spread.setdefault(label, []).append(float(np.median(std) / np.std(mean)))
                name = f"GPRanker(form='{form}') = {label}"
                seconds = float(np.mean([t for _, t in trials]))
                results.setdefault(name, []).append(([score(test, mean, k) for k in CUTOFFS], seconds))
                print(
                    f"fold {fold} {name}: test NDCG@5 {results[name][-1][0][2]:.4f} ({seconds:.1f} s/trial)"
                )


def mean_std(values):
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


def plot(alpha_runs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(alpha_runs), figsize=(5.5 * len(alpha_runs), 4), sharey=True)
    for ax, (label, runs) in zip(np.atleast_1d(axes), alpha_runs.items(), strict=True):
        alphas = sorted(runs)
        for split, style in (("train", "-"), ("vali", "--"), ("test", ":")):
            values = np.array([[r[split] for r in runs[a]] for a in alphas])
            err = None if split == "train" else values.std(1)  # the paper shows 1-σ bars for vali and test
            ax.errorbar(alphas, values.mean(1), yerr=err, linestyle=style, marker="o", capsize=3, label=split)
        ax.set_title(f"{label} on MQ2008 (mean over folds)")
        ax.set_xlabel("alpha (ranking by mean + alpha·std)")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("NDCG@5")
    np.atleast_1d(axes)[0].legend()
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=120)
    print(f"figure written to {FIGURE.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="Fold 1, one trial, short runs; RESULTS.md and the figure untouched",
    )
    parser.add_argument("--trials", type=int, default=10, help="GPRanker random initialisations per fold")
    args = parser.parse_args()
    if args.quick:
        args.trials = 1
    folds = (1,) if args.quick else (1, 2, 3, 4, 5)
    start = time.perf_counter()
    results: dict[str, list] = {}
    lgb_runs: dict[str, dict] = {}  # method -> learning rate -> per-fold (vali NDCG@5, test NDCG@k, seconds)
    alpha_runs: dict[str, dict] = {}
    spread: dict[str, list] = {}  # median predictive std / std of the predictive means, test documents
    for fold in folds:
        run_fold(fold, args, results, lgb_runs, alpha_runs, spread)
    wall = time.perf_counter() - start
    chosen_lr = {}
    for name, by_lr in lgb_runs.items():
        chosen_lr[name] = max(by_lr, key=lambda lr: np.mean([run[0] for run in by_lr[lr]]))
        results[f"{name} (lr {chosen_lr[name]})"] = [(run[1], run[2]) for run in by_lr[chosen_lr[name]]]
    results = dict(sorted(results.items(), key=lambda item: not item[0].startswith("LightGBM")))

    rows = [[name] + [mean_std([r[0][i] for r in runs]) for i in range(len(CUTOFFS))]
            + [f"{np.mean([r[1] for r in runs]):.1f}"] for name, runs in results.items()]  # fmt: skip
    table = markdown_table(["method"] + [f"test NDCG@{k}" for k in CUTOFFS] + ["s per fit"], rows)
    alpha_rows = []
    for alpha in ALPHAS:
        row = [f"{alpha:+.1f}"]
        for runs in alpha_runs.values():
            row += [mean_std([r[split] for r in runs[float(alpha)]]) for split in ("train", "vali", "test")]
        alpha_rows.append(row)
    headers = ["alpha"] + [f"{label} {split}" for label in alpha_runs for split in ("train", "vali", "test")]
    alpha_table = markdown_table(headers, alpha_rows)
    print(table, "\n", alpha_table, f"\nstd / spread {spread}\nwall time {wall:.0f} s", sep="\n")
    if args.quick:
        return
    plot(alpha_runs)
    body = "\n".join([
        section_header("8. GP-Rank / FITC-Rank and SoftRank on MQ2008"),
        (f"Wall time {wall / 60:.1f} min ({len(folds)} folds, {args.trials} GPRanker trials per fold and "
        "form). Protocol in the docstring of `benchmarks/gp_rank.py`: LightGBM `num_leaves=15, "
        "min_data_in_leaf=50`, learning rate from {0.03, 0.1, 0.3} by mean vali NDCG@5 per objective, "
        "early stopping on vali NDCG@5; GPRanker with the paper's defaults, best vali iterate, best of "
        f"{args.trials} initialisations by vali NDCG@5. Mean ± std over the folds."),
        "", table, "",
        ("**Risk-adjusted ranking** (paper Fig. 2): NDCG@5 of `mean + alpha·std`, for each alpha the trial "
        "with the best vali NDCG@5 at that alpha; train / vali / test, mean ± std over folds."),
        "", alpha_table, "",
        "Scale of the uncertainty: median predictive std / std of the predictive means over the test "
        "documents (alpha = 0 models, mean over folds): "
        + ", ".join(f"{label} {np.mean(v):.3f}" for label, v in spread.items())
        + ": with |alpha| <= 0.5 a typical document moves by at most half that fraction of the score spread.",
        "", f"![NDCG@5 against alpha]({FIGURE.name})",
    ])  # fmt: skip
    write_results_section("gp_rank", body)


if __name__ == "__main__":
    main()
