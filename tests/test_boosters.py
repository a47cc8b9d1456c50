"""One objective object in every booster entry point: lgb.train, lgb.cv, LGBMRanker, xgb.train, xgb.cv,
stochrank.xgboost.XGBRanker — with weights, init scores, copies, pickling and reproducibility."""

from __future__ import annotations

import copy
import pickle

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

import stochrank
from stochrank.xgboost import XGBRanker


def make_queries(n_queries=40, size=12, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(size // 2, size + 1, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    score = X @ rng.normal(size=n_features) + 0.5 * rng.normal(size=n)
    y = np.clip(np.round(score - score.min()) // 2, 0, 4).astype(float)
    qid = np.repeat(np.arange(n_queries), sizes)
    return X, y, sizes, qid


LGB_PARAMS = {"learning_rate": 0.3, "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1}


def lgb_train(obj, X, y, sizes, rounds=8, **extra):
    ds = lgb.Dataset(X, y, group=sizes, **extra)
    return lgb.train({**LGB_PARAMS, "objective": obj}, ds, rounds)


def test_lgb_train_and_lgbmranker_give_the_same_model():
    X, y, sizes, _ = make_queries()
    obj = stochrank.ndcg(k=5, seed=3)
    booster = lgb_train(obj, X, y, sizes)
    ranker = lgb.LGBMRanker(
        objective=obj,
        n_estimators=8,
        learning_rate=0.3,
        num_leaves=7,
        min_child_samples=5,
        verbose=-1,
        n_jobs=1,
    )
    ranker.fit(X, y, group=sizes)
    np.testing.assert_array_equal(booster.predict(X), ranker.predict(X))
    # and the model actually learned: train NDCG@5 improves on a random ranking
    before = stochrank.metrics.ndcg(y, np.zeros_like(y), sizes, k=5)
    after = stochrank.metrics.ndcg(y, booster.predict(X), sizes, k=5)
    assert after > before + 0.1


def test_same_object_trains_the_same_model_twice_lightgbm_and_xgboost():
    X, y, sizes, qid = make_queries()
    obj = stochrank.ndcg(k=5, sglb=stochrank.SGLB(temperature=100.0, learning_rate=0.3))
    p1 = lgb_train(obj, X, y, sizes).predict(X)
    p2 = lgb_train(obj, X, y, sizes).predict(X)
    np.testing.assert_array_equal(p1, p2)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    params = {"eta": 0.3, "max_depth": 3, "base_score": 0.0, "nthread": 1}
    b1 = xgb.train(params, dtrain, 8, obj=obj)
    b2 = xgb.train(params, dtrain, 8, obj=obj)  # same object, same DMatrix: the call counter restarts
    np.testing.assert_array_equal(b1.predict(dtrain), b2.predict(dtrain))
    other = xgb.train(params, dtrain, 8, obj=stochrank.ndcg(k=5, seed=1, sglb=obj.sglb))
    assert not np.array_equal(b1.predict(dtrain), other.predict(dtrain))


def test_a_run_from_a_base_margin_restarts_when_trained_again():
    # The start of a non-constant base_margin is kept element by element (a constant one as one number).
    X, y, _, qid = make_queries()
    margin = np.random.default_rng(3).normal(size=y.size)
    dtrain = xgb.DMatrix(X, y, qid=qid, base_margin=margin)
    obj = stochrank.ndcg(k=5, sglb=stochrank.SGLB(temperature=100.0, learning_rate=0.3))
    params = {"eta": 0.3, "max_depth": 3, "nthread": 1}
    b1 = xgb.train(params, dtrain, 8, obj=obj)
    b2 = xgb.train(params, dtrain, 8, obj=obj)
    np.testing.assert_array_equal(b1.predict(dtrain), b2.predict(dtrain))


def test_scores_that_never_move_do_not_restart_the_noise():
    X, y, sizes, _ = make_queries(n_queries=10)
    obj = stochrank.ndcg(k=5, hessian="unit")  # booster gradient = -ascent: compared below
    ds = lgb.Dataset(X, y, group=sizes).construct()
    first, _ = obj(np.zeros(y.size), ds)  # e.g. a run whose trees cannot split: same scores again
    second, _ = obj(np.zeros(y.size), ds)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(second, -obj.gradient(np.zeros(y.size), y, sizes, call=1))


def test_lgb_cv_and_xgb_cv_run_with_groups():
    X, y, sizes, qid = make_queries(n_queries=60)
    obj = stochrank.ndcg(k=5)
    res = lgb.cv(
        {**LGB_PARAMS, "objective": obj, "metric": "ndcg", "eval_at": [5]},
        lgb.Dataset(X, y, group=sizes),
        num_boost_round=5,
        folds=GroupKFold(n_splits=3),  # query-wise: lgb.cv splits rows for objective objects
    )
    assert len(res["valid ndcg@5-mean"]) == 5
    xres = xgb.cv(
        {"eta": 0.3, "max_depth": 3, "base_score": 0.0, "eval_metric": "ndcg@5", "nthread": 1},
        xgb.DMatrix(X, y, qid=qid),
        num_boost_round=5,
        nfold=3,
        obj=obj,
    )
    assert xres["test-ndcg@5-mean"].iloc[-1] > 0.5


def test_xgbranker_early_stopping_eval_qid_clone_and_string_objective():
    X, y, _, qid = make_queries(n_queries=60)
    Xv, yv, _, qv = make_queries(n_queries=20, seed=1)
    ranker = XGBRanker(objective=stochrank.ndcg(k=5), n_estimators=40, learning_rate=0.3, max_depth=3,
                       early_stopping_rounds=5, n_jobs=1)  # fmt: skip
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    curve = ranker.evals_result()["validation_0"]["ndcg@5"]
    assert ranker.best_iteration == int(np.argmax(curve))
    twin = clone(ranker).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    np.testing.assert_array_equal(ranker.predict(Xv), twin.predict(Xv))
    native = XGBRanker(n_estimators=5, max_depth=3).fit(X, y, qid=qid)  # plain xgboost path
    assert native.predict(Xv).shape == (Xv.shape[0],)
    with pytest.raises(ValueError, match="eval_set\\[0\\] has no query structure"):
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)])
    with pytest.raises(ValueError, match="ranking objective"):
        XGBRanker(objective="reg:squarederror")


@pytest.mark.parametrize("hessian", ["unit", "newton"])
def test_query_weights_scale_gradient_and_hessian(hessian):
    X, y, sizes, qid = make_queries(n_queries=10)
    obj = stochrank.ndcg(k=5, hessian=hessian)
    w = np.arange(sizes.size) / 4.0  # exact in float32, as LightGBM stores weights
    g1, h1 = obj(np.zeros(y.size), lgb.Dataset(X, y, group=sizes).construct())
    gw, hw = obj(np.zeros(y.size), lgb.Dataset(X, y, group=sizes, weight=np.repeat(w, sizes)).construct())
    np.testing.assert_allclose(gw, g1 * np.repeat(w, sizes), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hw, h1 * np.repeat(w, sizes), rtol=1e-12, atol=1e-15)
    if hessian == "unit":
        np.testing.assert_array_equal(h1, 1.0)
    gx, _ = obj(np.zeros(y.size, np.float32), xgb.DMatrix(X, y, qid=qid, weight=w))
    np.testing.assert_allclose(gx, gw, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="varies within query"):
        obj(np.zeros(y.size), lgb.Dataset(X, y, group=sizes, weight=np.arange(y.size) % 3).construct())
    with pytest.raises(ValueError, match="non-negative"):
        obj(np.zeros(y.size), lgb.Dataset(X, y, group=sizes, weight=-np.ones(y.size)).construct())


def test_init_score_and_base_margin_are_where_training_starts():
    X, y, sizes, qid = make_queries(n_queries=10)
    start = np.random.default_rng(5).normal(size=y.size)
    obj = stochrank.ndcg(k=5, hessian="unit")  # booster gradient = -ascent: compared below
    expected = -obj.gradient(start, y, sizes, call=0)
    seen = {}

    class Spy:
        def __call__(self, preds, data):
            seen.setdefault("first", np.array(preds, dtype=float))
            return obj(preds, data)

    lgb.train({**LGB_PARAMS, "objective": Spy()}, lgb.Dataset(X, y, group=sizes, init_score=start), 2)
    np.testing.assert_array_equal(seen["first"], start)
    unit = stochrank.ndcg(k=5, hessian="unit")
    grad, _ = unit(start, lgb.Dataset(X, y, group=sizes, init_score=start).construct())
    np.testing.assert_allclose(grad, expected)
    dm = xgb.DMatrix(X, y, qid=qid, base_margin=start)
    booster = xgb.train({"base_score": 0.0, "max_depth": 2}, dm, 2, obj=stochrank.ndcg(k=5))
    assert booster.num_boosted_rounds() == 2


def test_copies_and_pickles_are_clean_and_equal():
    obj = stochrank.err(
        k=3, max_grade=4, n_samples=2, sglb=stochrank.SGLB(shrink_mode="decreasing", learning_rate=0.1)
    )
    X, y, sizes, _ = make_queries(n_queries=5)
    obj(np.zeros(y.size), lgb.Dataset(X, y, group=sizes).construct())  # fills the cache
    for twin in (copy.deepcopy(obj), pickle.loads(pickle.dumps(obj)), copy.copy(obj)):
        assert twin == obj and repr(twin) == repr(obj)
    assert len(copy.deepcopy(obj)._cache) == 0
    assert "stochrank.err(k=3" in repr(obj)


def test_every_constructor_trains_lightgbm():
    X, y, sizes, _ = make_queries(n_queries=20)
    for obj in (
        stochrank.ndcg(k=3),
        stochrank.dcg(k=3, gain="linear", discount="position"),
        stochrank.err(max_grade=4),
        stochrank.pfound(k=5, max_grade=4, decay=0.5),
        stochrank.mrr(k=3),
        stochrank.lso(k=3),
        stochrank.lso(order="score", sfa=0.5),
    ):
        booster = lgb_train(obj, X, y, sizes, rounds=3)
        assert np.isfinite(booster.predict(X)).all(), obj


def test_lso_warns_about_xgboost_base_score():
    X, y, _, qid = make_queries(n_queries=5)
    with pytest.warns(UserWarning, match="base_score=0"):
        xgb.train({"max_depth": 2}, xgb.DMatrix(X, y, qid=qid), 1, obj=stochrank.lso())


@pytest.mark.parametrize("objective", [stochrank.ndcg(k=5, seed=1), "rank:ndcg"])
def test_xgbranker_reads_string_query_ids_as_their_runs(objective):
    """XGBoost's DMatrix refuses string qid ('Unicode-N is not supported'): XGBRanker passes their runs as
    group sizes, and trains exactly the model of numeric ids; split runs raise with the reorder hint."""
    X, y, _, qid = make_queries(n_queries=12)
    names = np.array([f"query-{q:03d}" for q in qid])
    Xv, yv, _, qv = make_queries(n_queries=6, seed=1)
    kwargs = {"n_estimators": 4, "max_depth": 3, "n_jobs": 1, "objective": objective}
    numeric = XGBRanker(**kwargs).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    strings = XGBRanker(**kwargs).fit(X, y, qid=names, eval_set=[(Xv, yv)], eval_qid=[qv.astype(str)])
    np.testing.assert_array_equal(strings.predict(X), numeric.predict(X))
    assert strings.evals_result_ == numeric.evals_result_
    shuffled = names.copy()
    shuffled[[0, -1]] = shuffled[[-1, 0]]
    with pytest.raises(ValueError, match=r"rows of query 'query-0\d\d' in 'qid' are not contiguous.*argsort"):
        XGBRanker(**kwargs).fit(X, y, qid=shuffled)
    with pytest.raises(ValueError, match=r"in 'eval_qid\[0\]' are not contiguous"):
        XGBRanker(**kwargs).fit(X, y, qid=names, eval_set=[(X, y)], eval_qid=[shuffled])


def test_xgbranker_default_metric_of_a_whole_list_objective_is_the_whole_list_ndcg():
    """XGBoost's bare "ndcg" is ndcg@32 (MQ2008 has queries of up to 121 documents): the default eval
    metric of an ndcg(k=None) objective must be the whole-list NDCG, not a silently truncated one."""
    from stochrank.datasets import load_mq2008

    train, test = load_mq2008(1, "train"), load_mq2008(1, "test")
    assert test.group.max() > 32
    ranker = XGBRanker(objective=stochrank.ndcg(seed=0), n_estimators=3, max_depth=3, n_jobs=1)
    ranker.fit(train.X, train.y, group=train.group, eval_set=[(test.X, test.y)], eval_group=[test.group])
    logged = ranker.evals_result_["validation_0"]["sr-ndcg"][-1]  # feval's name, apart from XGBoost's
    scores = ranker.predict(test.X)
    whole = stochrank.metrics.ndcg(test.y, scores, test.group, ties="input")
    top32 = stochrank.metrics.ndcg(test.y, scores, test.group, k=32, ties="input")
    assert logged == pytest.approx(whole, abs=1e-6)  # XGBoost logs custom metrics to 6 decimals
    assert abs(whole - top32) > 1e-3  # so the check above tells the two apart
    # What the default was: XGBoost's own "ndcg" is the top-32 NDCG.
    dtest = xgb.DMatrix(test.X, test.y, group=test.group, base_margin=scores)
    bare = xgb.train({"objective": "rank:ndcg", "eval_metric": "ndcg"}, dtest, 0).eval(dtest)
    assert float(bare.split(":")[1]) == pytest.approx(top32, abs=1e-12)
