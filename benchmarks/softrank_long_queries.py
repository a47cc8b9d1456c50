"""Exact SoftRank@5 on long queries (100-300 documents) from all-zero scores: collapse and its remedy.

At equal scores SoftRank's rank law of a document is Binomial(n - 1, 1/2) (independent pairwise
comparisons), so P(rank < 5) is about 1e-52 at n = 200 and SoftNDCG@5's gradient underflows: LightGBM
finds no split and returns a constant model. This script trains LightGBM on long synthetic queries
(:func:`stochrank.datasets.synthetic.mslr_like`, 40 features of which 10 carry the grade, queries kept
if they have 100-300 documents; 300 train / 100 validation / 100 test queries per data seed) with

* ``softrank(k=5)`` as it was (σ = 1), and with the remedies ``warmup=100`` (whole-list linear
  SoftNDCG for the first 100 calls), ``relative_sigma=True`` (σ relative to each query's score spread)
  and both;
* ``stochrank.ndcg(k=5)`` (the CCS estimate of the same kind of smoothed metric, Newton leaves) and
  LightGBM's ``lambdarank`` for reference;
* a uniformly random ranking (the exact expectation: NDCG@5 with every score tied, ``ties="average"``).

Fixed settings: learning rate 0.05, 31 leaves, at most ``--trees`` trees, early stopping after 50
rounds on the validation NDCG@5 with worst-case ties (``stochrank.metrics.feval``), one thread. Reported:
test NDCG@5 (exp gain, worst ties) at the best iteration, mean over data seeds, trees kept, whether the
objective raised :class:`stochrank.StartWarning`, and the largest |gradient| of the first call.

    nice -n 15 python benchmarks/softrank_long_queries.py            # RESULTS.md section
    nice -n 15 python benchmarks/softrank_long_queries.py --quick    # smoke run, nothing written
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np
from _common import write_results_section

import stochrank
from stochrank.bench.results import fmt, markdown_table, section_header
from stochrank.datasets import RankingSplit
from stochrank.datasets.synthetic import mslr_like
from stochrank.objectives import StartWarning

K = 5
METHODS: dict[str, Callable[[], Any]] = {
    "softrank(k=5) (σ = 1, as before)": lambda: stochrank.softrank(K),
    "softrank(k=5, warmup=100)": lambda: stochrank.softrank(K, warmup=100),
    "softrank(k=5, relative_sigma=True)": lambda: stochrank.softrank(K, relative_sigma=True),
    "softrank(k=5, relative_sigma=True, warmup=100)": lambda: stochrank.softrank(
        K, relative_sigma=True, warmup=100
    ),
    "stochrank.ndcg(k=5)": lambda: stochrank.ndcg(K),
    "LightGBM lambdarank": lambda: "lambdarank",
}


def long_queries(n_queries: int, seed: int) -> RankingSplit:
    """``n_queries`` MSLR-shaped queries of 100-300 documents (longer and shorter ones are dropped)."""
    data = mslr_like(int(n_queries * 1.2) + 10, n_features=40, mean_docs=200, seed=seed)
    keep = np.flatnonzero((data.group >= 100) & (data.group <= 300))[:n_queries]
    assert keep.size == n_queries
    rows = np.isin(data.qid, data.qid[np.cumsum(data.group) - 1][keep])
    return RankingSplit(data.X[rows], data.y[rows], data.qid[rows], data.group[keep])


def ndcg5(split: RankingSplit, scores: np.ndarray, ties: str = "worst") -> float:
    """Mean NDCG@5 (exp gain, empty query = 1)."""
    return float(stochrank.metrics.ndcg(split.y, scores, split.group, k=K, ties=ties))


def start_gradients(split: RankingSplit) -> tuple[float, float]:
    """Largest |ascent| at all-zero scores: exact SoftNDCG@5 (σ = 1) and the CCS estimate of NDCG@5."""
    zeros = np.zeros(split.y.size)
    exact = stochrank.softrank(K).value_and_gradient(zeros, split.y, split.group)[1]
    ccs = stochrank.ndcg(K).derivatives(zeros, split.y, split.group).gradient
    return float(np.max(np.abs(exact))), float(np.max(np.abs(ccs)))


def train(method: str, splits: tuple[RankingSplit, ...], trees: int) -> dict[str, Any]:
    """Fit one method; return test NDCG@5, trees kept, the StartWarning and the first |gradient|."""
    tr, va, te = splits
    objective = METHODS[method]()
    dtrain = lgb.Dataset(tr.X, tr.y, group=tr.group)
    dvali = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
    params = {
        "objective": objective, "learning_rate": 0.05, "num_leaves": 31, "num_threads": 1,
        "deterministic": True, "force_row_wise": True, "verbose": -1, "metric": "None",
    }  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StartWarning)
        booster = lgb.train(
            params, dtrain, trees, valid_sets=[dvali], feval=stochrank.metrics.feval("ndcg", k=K),
            callbacks=[lgb.early_stopping(50, verbose=False)],
        )  # fmt: skip
    seconds = time.perf_counter() - start
    scores = booster.predict(te.X, num_iteration=booster.best_iteration)
    return {
        "test": ndcg5(te, scores),
        "trees": booster.best_iteration,
        "range": float(np.ptp(scores)),
        "warned": any(issubclass(w.category, StartWarning) for w in caught),
        "seconds": seconds,
    }


def main() -> None:
    """Run every method on every data seed; print (and write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="data seeds (default 2)")
    parser.add_argument("--trees", type=int, default=400, help="at most this many trees (default 400)")
    parser.add_argument("--quick", action="store_true", help="1 seed, 150 trees, nothing written")
    args = parser.parse_args()
    seeds, trees = (1, 150) if args.quick else (args.seeds, args.trees)
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
    random_ndcg, sizes, peaks = [], [], []
    for seed in range(seeds):
        splits = tuple(long_queries(n, 3 * seed + part) for part, n in enumerate((300, 100, 100)))
        te = splits[2]
        random_ndcg.append(ndcg5(te, np.zeros(te.y.size), ties="average"))
        sizes.append(np.concatenate([s.group for s in splits]))
        peaks.append(start_gradients(splits[0]))
        for method in METHODS:
            results[method].append(train(method, splits, trees))
            r = results[method][-1]
            print(
                f"seed {seed} {method}: test {r['test']:.4f}, {r['trees']} trees, {r['seconds']:.0f} s",
                flush=True,
            )
    rnd = float(np.mean(random_ndcg))
    rows: list[list[object]] = [["random ranking (exact expectation)", f"{rnd:.4f}", "", "", "", ""]]
    for method, runs in results.items():
        test = float(np.mean([r["test"] for r in runs]))
        rows.append([
            method, f"{test:.4f}", f"{test - rnd:+.4f}", " / ".join(str(r["trees"]) for r in runs),
            fmt(max(r["range"] for r in runs), 2), "yes" if any(r["warned"] for r in runs) else "no",
        ])  # fmt: skip
    table = markdown_table(
        ["method", "test NDCG@5", "− random", "trees (per seed)", "score range", "StartWarning"], rows
    )
    n = np.concatenate(sizes)
    body = "\n".join([
        section_header("SoftRank on long queries: collapse from zero scores and its remedy"),
        f"Synthetic `mslr_like` queries of {n.min()}-{n.max()} documents (mean {n.mean():.0f}), 40 features "
        f"(10 carry the grade), 300 / 100 / 100 train / validation / test queries × {seeds} data seed(s); "
        f"LightGBM, lr 0.05, 31 leaves, ≤ {trees} trees, early stopping 50 on validation NDCG@5 (worst "
        "ties), 1 thread. Test NDCG@5 (exp gain, worst ties) at the best iteration, mean over seeds. "
        f"At all-zero scores the largest |gradient| of SoftNDCG@5 (exact, σ = 1) is "
        f"{fmt(max(p[0] for p in peaks), 2)}, that of the CCS estimate of NDCG@5 "
        f"{fmt(min(p[1] for p in peaks), 2)} "
        "(both 1/IDCG-scaled; `StartWarning` fires below 1e-8 × the largest 1/IDCG).",
        "",
        table,
        "",
        "Reading: exact SoftRank@5 from zero scores has no gradient on queries this long (the rank law of "
        "independent comparisons puts P(rank < 5) ≈ 1e-52 at n = 200): LightGBM fits trees to gradients of "
        "~1e-23 and its scores move by ~1e-25 (`score range`, test set), a model that any offset of order 1 "
        "erases (all tied: worst ties rank it below random); the NDCG@5 it shows is the ordering of that "
        "numerical dust — now with a `stochrank.StartWarning`. The remedy documented in "
        "`stochrank.softrank` (\"Long queries\") trains; the CCS estimate (`stochrank.ndcg`, or "
        "`softrank(method='ccs')`) needs none and is better still. `relative_sigma` alone keeps only its "
        "first tree (the whole-list start of the tied queries): its steps are ∝ 1/spread, huge while the "
        "scores are tiny; the warm-up first builds the scale up.",
    ])  # fmt: skip
    print("\n" + table)
    if not args.quick:
        write_results_section("softrank_long_queries", body)


if __name__ == "__main__":
    main()
