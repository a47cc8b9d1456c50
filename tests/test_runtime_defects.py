"""Defects found at run time: state leaking between XGBoost runs, all-zero query weights, SGLB learning rates
the scikit-learn rankers did not check, and XGBoost's empty groups in booster metrics."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.base import clone

import stochrank
import stochrank.metrics._feval as feval_module
import stochrank.protocol.xgboost as xgb_protocol
from stochrank.conventions.queries import query_weights
from stochrank.lightgbm import LGBMRanker
from stochrank.xgboost import XGBRanker

from .test_boosters import LGB_PARAMS, make_queries

XGB_PARAMS = {"max_depth": 2, "eta": 0.3, "nthread": 1}


@pytest.fixture(scope="module")
def data():
    return make_queries(n_queries=20)


# ---------------------------------------------------------------- one objective, several xgb.train runs


@pytest.mark.parametrize(
    "sglb", [None, stochrank.SGLB(shrink_rate=2.0, learning_rate=0.3)], ids=["plain", "sglb"]
)
def test_a_reused_objective_trains_as_a_fresh_one_from_another_base_score(data, sglb):
    """A run from another base_score used to continue the previous run's call counter (other noise
    streams) and SGLB scale (with shrink_rate=2 it overflowed: "SGLB shrinkage has scaled the model")."""
    X, y, _, qid = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    reused = stochrank.ndcg(k=3, sglb=sglb)

    def train(obj, base_score):
        booster = xgb.train({**XGB_PARAMS, "base_score": base_score}, dtrain, 40, obj=obj)
        return booster.predict(dtrain, output_margin=True)

    for base_score in (0.0, 1.0, 0.0):
        np.testing.assert_array_equal(
            train(reused, base_score), train(stochrank.ndcg(k=3, sglb=sglb), base_score)
        )


def test_a_start_from_a_base_margin_is_still_recognised_after_a_constant_start(data):
    X, y, _, qid = data
    margin = np.random.default_rng(1).normal(size=y.size)
    dtrain = xgb.DMatrix(X, y, qid=qid, base_margin=margin)
    fresh = xgb.train(XGB_PARAMS, dtrain, 10, obj=stochrank.ndcg(k=3)).predict(dtrain)
    reused = stochrank.ndcg(k=3)
    xgb.train(XGB_PARAMS, dtrain, 10, obj=reused)
    dtrain.set_base_margin(np.full(y.size, 0.5))  # a constant start in between
    np.testing.assert_array_equal(
        xgb.train(XGB_PARAMS, dtrain, 10, obj=reused).predict(dtrain),
        xgb.train(XGB_PARAMS, dtrain, 10, obj=stochrank.ndcg(k=3)).predict(dtrain),
    )
    dtrain.set_base_margin(margin)
    np.testing.assert_array_equal(xgb.train(XGB_PARAMS, dtrain, 10, obj=reused).predict(dtrain), fresh)


# ---------------------------------------------------------------- all-zero query weights


def test_all_zero_query_weights_are_refused_by_objectives_and_metrics(data):
    X, y, sizes, qid = data
    message = r"Every query weight in '.*weight' is 0.*positive weight"
    with pytest.raises(ValueError, match=message):
        lgb.train(
            {**LGB_PARAMS, "objective": stochrank.ndcg(k=3)},
            lgb.Dataset(X, y, group=sizes, weight=np.zeros(y.size)),
            3,
        )
    dtrain = xgb.DMatrix(X, y, qid=qid)
    dtrain.set_weight(np.zeros(sizes.size))
    with pytest.raises(ValueError, match=message):
        xgb.train({**XGB_PARAMS, "base_score": 0.0}, dtrain, 3, obj=stochrank.ndcg(k=3))
    with pytest.raises(ValueError, match=message):
        stochrank.metrics.ndcg(y[:5], np.arange(5.0), [5], weight=[0.0])
    with pytest.raises(ValueError, match=message):
        stochrank.metrics.feval("ndcg", k=3)(np.zeros(y.size, np.float32), dtrain)
    with pytest.raises(ValueError, match="finite and non-negative"):
        stochrank.metrics.ndcg(y[:5], np.arange(5.0), [5], weight=[-1.0])
    # Some zero weights are fine: those queries drop out.
    w = np.r_[0.0, np.ones(sizes.size - 1)]
    assert stochrank.metrics.ndcg(y, X[:, 0], sizes, weight=w) == pytest.approx(
        stochrank.metrics.ndcg(y[sizes[0] :], X[sizes[0] :, 0], sizes[1:])
    )


def test_a_distributed_workers_zero_weight_share_is_not_refused(data, monkeypatch):
    """Under xgb.dask a worker may hold only zero-weight queries while others hold the weighted ones."""
    _, y, sizes, qid = data
    dm = xgb.DMatrix(np.zeros((y.size, 1)), y, qid=qid)
    dm.set_weight(np.zeros(sizes.size))
    monkeypatch.setattr(xgb_protocol, "in_distributed_training", lambda: True)
    monkeypatch.setattr(feval_module, "in_distributed_training", lambda: True)
    assert np.isnan(stochrank.metrics.feval("ndcg", k=3)(np.zeros(y.size, np.float32), dm)[1])


def test_query_weights_with_empty_queries():
    np.testing.assert_array_equal(query_weights(np.ones(6), np.array([0, 3, 6, 6])), [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(
        query_weights([2.0, 2.0, 3.0, 4.0, 4.0, 4.0], np.array([0, 0, 2, 3, 3, 6])),
        [0.0, 2.0, 3.0, 0.0, 4.0],
    )
    with pytest.raises(ValueError, match=r"varies within query 3 \(rows 4..5\)"):
        query_weights([1.0, 1.0, 1.0, 2.0, 3.0, 4.0], np.array([0, 3, 3, 4, 6]))
    with pytest.raises(ValueError, match="Every query weight"):  # the one positive weight is an empty query's
        query_weights([0.0, 0.0, 5.0], np.array([0, 3, 6, 6]))
    with pytest.raises(ValueError, match="cannot tell one weight per row from one per query"):
        query_weights([5.0, 5.0, 7.0], np.array([0, 2, 3, 3]))  # 3 rows, 3 queries, one of them empty


# ---------------------------------------------------------------- SGLB's learning rate in the rankers


def test_rankers_refuse_an_sglb_learning_rate_that_contradicts_theirs(data):
    X, y, sizes, _ = data
    objective = stochrank.ndcg(k=3, sglb=stochrank.SGLB(learning_rate=0.5))
    with pytest.raises(
        ValueError, match=r"SGLB\(learning_rate=0.5\) disagrees with LGBMRanker's learning_rate=0.1"
    ):
        LGBMRanker(objective=objective, learning_rate=0.1, n_estimators=2, verbose=-1).fit(X, y, group=sizes)
    with pytest.raises(
        ValueError, match=r"SGLB\(learning_rate=0.5\) disagrees with XGBRanker's learning_rate=0.1"
    ):
        XGBRanker(objective=objective, learning_rate=0.1, n_estimators=2).fit(X, y, group=sizes)
    with pytest.raises(ValueError, match=r"disagrees with XGBRanker's learning_rate=0.2"):
        XGBRanker(objective=objective, eta=0.2, n_estimators=2).fit(X, y, group=sizes)
    with pytest.raises(
        ValueError, match=r"disagrees with XGBRanker's learning_rate=0.3"
    ):  # XGBoost's default
        XGBRanker(objective=objective, n_estimators=2).fit(X, y, group=sizes)


def test_lgbmranker_gives_sglb_its_learning_rate_as_lgb_train_does(data):
    X, y, sizes, _ = data
    sglb = stochrank.SGLB(temperature=100.0)
    objective = stochrank.ndcg(k=3, sglb=sglb)
    booster = lgb.train({**LGB_PARAMS, "objective": objective}, lgb.Dataset(X, y, group=sizes), 8)
    ranker = LGBMRanker(
        objective=objective, n_estimators=8, learning_rate=0.3, num_leaves=7, min_child_samples=5,
        verbose=-1, n_jobs=1,
    )  # fmt: skip
    ranker.fit(X, y, group=sizes)
    np.testing.assert_array_equal(ranker.predict(X), booster.predict(X))
    assert ranker.objective is objective and clone(ranker).objective.sglb == sglb  # parameters untouched
    # A matching SGLB rate trains the same model.
    same = clone(ranker).set_params(
        objective=stochrank.ndcg(k=3, sglb=stochrank.SGLB(100.0, learning_rate=0.3))
    )
    np.testing.assert_array_equal(same.fit(X, y, group=sizes).predict(X), booster.predict(X))


# ---------------------------------------------------------------- empty XGBoost groups in booster metrics


@pytest.mark.parametrize("where", [0, 10, 20])
def test_feval_leaves_empty_xgboost_groups_out(data, where):
    """An empty group contributes nothing, as to the objective. (XGBoost's own ndcg counts it as 1.)"""
    X, y, sizes, _ = data
    with_empty = np.insert(sizes, where, 0)
    metric = stochrank.metrics.feval("ndcg", k=2)
    params = {**XGB_PARAMS, "base_score": 0.0, "disable_default_eval_metric": 1}
    logs = []
    for group in (with_empty, sizes):
        dm = xgb.DMatrix(X, y, group=group)
        log: dict = {}
        booster = xgb.train(
            params, dm, 5, obj=stochrank.ndcg(k=2), evals=[(dm, "train")], custom_metric=metric,
            evals_result=log, verbose_eval=False,
        )  # fmt: skip
        logs.append(log["train"]["sr-ndcg@2"])
        assert metric(booster.predict(dm, output_margin=True), dm)[1] == stochrank.metrics.ndcg(
            y, booster.predict(dm, output_margin=True), sizes, k=2
        )
    assert logs[0] == logs[1]
    weights = np.insert(
        np.arange(1.0, sizes.size + 1), where, 7.0
    )  # an empty group's weight counts for nothing
    dm = xgb.DMatrix(X, y, group=with_empty, weight=weights)
    scores = X[:, 0].astype(np.float32)
    assert metric(scores, dm)[1] == stochrank.metrics.ndcg(
        y, scores, sizes, k=2, weight=np.arange(1.0, sizes.size + 1)
    )
