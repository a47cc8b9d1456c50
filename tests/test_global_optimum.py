"""Integration: StochasticRank + SGLB reaches the global optimum of train NDCG where LambdaMART does not.

Requirement: on a small multimodal instance (queries whose ideal orders conflict on shared one-hot
documents) LightGBM's ``lambdarank`` stops at a suboptimal ranking of train NDCG, while
``stochrank.ndcg`` with SGLB reaches the global optimum, which the test finds by enumeration.

**Global optimum.** Every document is a one-hot vector, so a model can only give each *distinct* vector
one score, and the train NDCG depends only on the weak ordering (order with ties) of those scores.
The test enumerates (``stochrank.datasets.synthetic.global_optimum``) every weak ordering of the
distinct vectors (13 for three), scores each with worst-case ties (within a tie the lower label is
shown first, as in the paper), and takes the maximum.
Ties never help under worst-case resolution (a tie scores at most as well as its worst strict
refinement, query by query), so the maximum over strict orderings is the same; the test checks it.
A trained booster is scored the same way: its raw scores on the train rows, worst-case ties.

**Instances.**

* ``PAPER`` — §7.1 of Ustimenko & Prokhorenkova (2020): r1 = (3, 2, 1) on x1, x2, x3 and r2 = (3, 2)
  on x3, x1; NDCG@3. Optimum 0.917 (x1 > x2 > x3), as in the paper. LightGBM's lambdarank ends at
  0.903 (x1 > x3 > x2, the paper's LambdaMART value) with its default ``lambda_l2=0`` for every
  learning rate and tree size tried — but it reaches 0.917 with ``lambda_l2=1`` (and CatBoost
  1.2.10's LambdaMart and YetiRank reach 0.917 too), so on this instance "LambdaMART stays local"
  is a statement about LightGBM's defaults only.
* ``CYCLIC`` — three queries of two documents over three one-hot documents A, B, C whose preferences
  form a cycle: q1 (A:3, B:2) wants A > B, q2 (A:0, C:1) wants C > A, q3 (C:2, B:3) wants B > C. No
  ranking satisfies all three; the best ones drop one of the cheap queries q1 or q3 (B > C > A or
  C > A > B, NDCG@3 0.9447). LambdaMART settles on the compromise C > B > A, which keeps the expensive
  q2 and drops both cheap ones (0.8893), for every learning rate, tree size, ``lambda_l2`` and
  normalisation tried (60/60 settings). StochasticRank's deterministic drift goes to the same
  compromise (0/16 seeds without SGLB); SGLB's Langevin noise moves it off the compromise into one of
  the two optima (16/16 seeds, for sigma 0.1 and 0.3 and temperatures 3e2..3e3). This is the
  instance on which the test shows what SGLB adds.

**StochasticRank settings.** As in the paper: depth-3 trees (``num_leaves=8, max_depth=3`` separate
all documents), 1000 iterations, learning rate 0.1, diffusion temperature 1e3, model-shrink rate 1e-3;
``min_data_in_leaf=1, min_sum_hessian_in_leaf=0, min_data_in_bin=1`` so LightGBM may split single
documents. Two deviations from stochrank's defaults, ``sigma=0.3`` and ``sfa=0``: with the defaults
(sigma=1, SFA on) the radial part of every gradient is projected out, so on this 5–6 document problem
the scores stay ~0.01, far below the noise scale sigma, the smoothed objective never sharpens and the
final order is decided by Monte-Carlo noise (seeds 0..15: ``PAPER`` reaches 0.917 in 2/16 with SGLB
and 4/16 without; ``CYCLIC`` reaches its optimum in 8/16 with SGLB and 0/16 without). CatBoost 1.2.10's
own ``StochasticRank`` with the paper's settings does the same on ``PAPER`` (2/8 seeds with
``langevin=True``, 1/8 without). The test prints those default-setting outcomes but asserts nothing about
them.
"""

from __future__ import annotations

from collections.abc import Sequence

import lightgbm as lgb
import numpy as np
import pytest

import stochrank
from stochrank.datasets.synthetic import MULTIMODAL, Query, one_hot_instance
from stochrank.datasets.synthetic import global_optimum as enumerate_optimum
from stochrank.metrics import ndcg

K = 3
SEEDS = (0, 1, 2, 3, 4)
ROUNDS = 1000
LEARNING_RATE = 0.1
SGLB = stochrank.SGLB(temperature=1e3, shrink_rate=1e-3)
SIGMA = 0.3
TOL = 1e-9

# Instances and enumeration: stochrank.datasets.synthetic (scripts/make_synthetic.py writes them).
INSTANCES = MULTIMODAL

TREES = {
    "num_leaves": 8,
    "max_depth": 3,
    "min_data_in_leaf": 1,
    "min_sum_hessian_in_leaf": 0.0,
    "min_data_in_bin": 1,
    "feature_pre_filter": False,
    "verbosity": -1,
    "num_threads": 1,
    "deterministic": True,
}


def build(queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = one_hot_instance(queries)
    return data.X, data.y, data.group


def train_ndcg(X: np.ndarray, y: np.ndarray, group: np.ndarray, scores: np.ndarray) -> float:
    """Mean train NDCG@3 with worst-case ties (the paper's convention for the optimum)."""
    return float(ndcg(y, scores, group, k=K, ties="worst"))


def global_optimum(X: np.ndarray, y: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    """(max over weak orderings, max over strict orderings) of train NDCG@3 for one score per vector."""
    return enumerate_optimum(X, y, group, k=K)


def fit_scores(X: np.ndarray, y: np.ndarray, group: np.ndarray, objective: object, seed: int = 0,
               **params: object) -> np.ndarray:  # fmt: skip
    """Train LightGBM on the instance and return its raw scores on the train rows."""
    full = {**TREES, "objective": objective, "learning_rate": LEARNING_RATE, "seed": seed, **params}
    dataset = lgb.Dataset(X, y, group=group, params={"min_data_in_bin": 1, "feature_pre_filter": False})
    return lgb.train(full, dataset, num_boost_round=ROUNDS).predict(X)


def stochrank_value(instance: str, seed: int, sglb: stochrank.SGLB | None, **objective: object) -> float:
    X, y, group = build(INSTANCES[instance])
    obj = stochrank.ndcg(k=K, seed=seed, sglb=sglb, **objective)
    return train_ndcg(X, y, group, fit_scores(X, y, group, obj, seed=seed))


@pytest.fixture(scope="module")
def optimum() -> dict[str, float]:
    out = {}
    for name, queries in INSTANCES.items():
        weak, strict = global_optimum(*build(queries))
        assert weak == pytest.approx(strict, abs=TOL), "a tie can never beat its worst-case strict refinement"
        out[name] = weak
    print(f"\nglobal optimum of train NDCG@3 (worst-case ties): { {k: round(v, 4) for k, v in out.items()} }")
    return out


def test_enumerated_optima_match_the_paper_and_the_cyclic_construction(optimum: dict[str, float]) -> None:
    assert round(optimum["paper"], 3) == 0.917  # the paper's Table 1 value
    # CYCLIC: drop one cheap 2-document query: (1 + 1 + (3 + 7/log2(3)) / (7 + 3/log2(3))) / 3
    dropped = (3 + 7 / np.log2(3)) / (7 + 3 / np.log2(3))
    assert optimum["cyclic"] == pytest.approx((2 + dropped) / 3, abs=TOL)


@pytest.mark.parametrize(
    ("instance", "extra"),
    [("paper", {})]  # LightGBM defaults (lambda_l2=0); lambda_l2=1 reaches 0.917 here, see module doc
    + [
        ("cyclic", e)
        for e in ({}, {"lambda_l2": 1.0}, {"lambdarank_truncation_level": K}, {"lambdarank_norm": False})
    ],
)
def test_lambdarank_stops_below_the_global_optimum(
    optimum: dict[str, float], instance: str, extra: dict[str, object]
) -> None:
    X, y, group = build(INSTANCES[instance])
    reached = {
        (lr, leaves): train_ndcg(
            X, y, group, fit_scores(X, y, group, "lambdarank", learning_rate=lr, num_leaves=leaves, **extra)
        )
        for lr in (0.03, 0.1, 0.3)
        for leaves in (4, 8)
    }
    values = sorted({round(v, 4) for v in reached.values()})
    print(
        f"\n{instance} {extra or 'defaults'}: lambdarank train NDCG@3 {values} "
        f"vs optimum {optimum[instance]:.4f}"
    )
    assert all(v < optimum[instance] - TOL for v in reached.values()), reached


@pytest.mark.parametrize("instance", sorted(INSTANCES))
def test_stochrank_with_sglb_reaches_the_global_optimum(optimum: dict[str, float], instance: str) -> None:
    reached = [stochrank_value(instance, seed, SGLB, sigma=SIGMA, sfa=0.0) for seed in SEEDS]
    print(f"\n{instance}: stochrank+SGLB train NDCG@3 by seed {np.round(reached, 4).tolist()} "
          f"vs optimum {optimum[instance]:.4f}")  # fmt: skip
    assert reached == pytest.approx([optimum[instance]] * len(SEEDS), abs=TOL)


def test_control_without_sglb(optimum: dict[str, float]) -> None:
    """Plain StochasticRank (same settings, no SGLB) finds the optimum of PAPER but not of CYCLIC,
    where it stays on LambdaMART's compromise: on CYCLIC the global optimum is SGLB's doing."""
    paper = [stochrank_value("paper", seed, None, sigma=SIGMA, sfa=0.0) for seed in SEEDS]
    cyclic = [stochrank_value("cyclic", seed, None, sigma=SIGMA, sfa=0.0) for seed in SEEDS]
    print(f"\nwithout SGLB: paper {np.round(paper, 4).tolist()}, cyclic {np.round(cyclic, 4).tolist()}")
    assert paper == pytest.approx([optimum["paper"]] * len(SEEDS), abs=TOL)
    assert all(v < optimum["cyclic"] - TOL for v in cyclic), cyclic


def test_report_default_settings(optimum: dict[str, float]) -> None:
    """Informational: stochrank's defaults (sigma=1, SFA on) with and without SGLB. Not asserted —
    their outcome on these tiny instances is decided by Monte-Carlo noise (see the module doc)."""
    for instance in sorted(INSTANCES):
        for label, sglb in (("SGLB", SGLB), ("no SGLB", None)):
            reached = [stochrank_value(instance, seed, sglb) for seed in SEEDS]
            hits = sum(v > optimum[instance] - TOL for v in reached)
            print(
                f"\n{instance}, defaults, {label}: {np.round(reached, 4).tolist()} "
                f"({hits}/{len(SEEDS)} at optimum)"
            )
