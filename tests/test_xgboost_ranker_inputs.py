"""stochrank.xgboost.XGBRanker: a stochrank metric with a string objective, training continued from a fitted
ranker, constructor feature_weights, and labels that do not match the rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

import stochrank
from stochrank import metrics as M
from stochrank.xgboost import XGBRanker

from .test_boosters import make_queries

PARAMS = {"n_estimators": 6, "max_depth": 3, "n_jobs": 1, "tree_method": "hist"}


SMALL = {"size": 10, "n_features": 4}  # queries of 5-10 documents, 4 features


@pytest.fixture(scope="module")
def data():
    return make_queries(30, **SMALL), make_queries(15, seed=1, **SMALL)


# ----------------------------------------------------------------- stochrank metric, string objective
def test_feval_metric_with_a_string_objective_is_an_xgb_train_custom_metric(data):
    """XGBRanker(objective="rank:ndcg", eval_metric=feval(...)) raised "This objective was called as
    f(y_true, y_pred) without query groups": the metric went through xgboost's per-query sklearn wrapper."""
    (X, y, sizes, qid), (Xv, yv, sizes_v, qv) = data
    metric = M.feval("ndcg", k=3, ties="input")
    ranker = XGBRanker(objective="rank:ndcg", eval_metric=metric, **PARAMS)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])

    params = {"objective": "rank:ndcg", "max_depth": 3, "nthread": 1, "tree_method": "hist"}
    params["disable_default_eval_metric"] = 1
    dtrain, dvalid = xgb.DMatrix(X, y, group=sizes), xgb.DMatrix(Xv, yv, group=sizes_v)
    history: dict = {}
    booster = xgb.train(
        params, dtrain, 6, evals=[(dvalid, "validation_0")], custom_metric=metric, maximize=True,
        evals_result=history, verbose_eval=False,
    )  # fmt: skip
    assert ranker.evals_result() == history
    np.testing.assert_array_equal(ranker.predict(Xv), booster.predict(dvalid, output_margin=True))
    curve = history["validation_0"]["sr-ndcg@3"]  # XGBoost logs custom metrics to 6 decimals
    expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=3, ties="input")
    assert curve[-1] == pytest.approx(expected, abs=1e-6)
    # XGBoost's own ndcg@3 agrees where the conventions do (exp gain, row-order ties, no empty queries)
    builtin = XGBRanker(objective="rank:ndcg", eval_metric="ndcg@3", **PARAMS)
    builtin.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    np.testing.assert_allclose(curve, builtin.evals_result()["validation_0"]["ndcg@3"], atol=1e-6)
    # score() evaluates the same metric per query, in full precision
    assert ranker.score(Xv, yv, qid=qv) == pytest.approx(expected, rel=1e-12)


def test_feval_metric_with_a_string_objective_early_stops_by_maximising(data):
    (X, y, _, qid), (Xv, yv, _, qv) = data
    ranker = XGBRanker(
        objective="rank:pairwise", eval_metric=M.feval("ndcg", k=3), early_stopping_rounds=3,
        **{**PARAMS, "n_estimators": 60, "learning_rate": 0.8},
    )  # fmt: skip
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    curve = ranker.evals_result()["validation_0"]["sr-ndcg@3"]
    assert ranker.best_iteration == int(np.argmax(curve)) < len(curve) - 1  # stopped early, at the maximum
    assert ranker.score(Xv, yv, qid=qv) == pytest.approx(max(curve), abs=1e-6)


def test_feval_in_a_metric_list_is_the_custom_metric_for_any_objective(data):
    (X, y, _, qid), (Xv, yv, sizes_v, qv) = data
    for objective in ("rank:ndcg", stochrank.ndcg(k=3, seed=1)):
        ranker = XGBRanker(objective=objective, eval_metric=["ndcg@5", M.feval("ndcg", k=3)], **PARAMS)
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
        curves = ranker.evals_result()["validation_0"]
        assert list(curves) == ["ndcg@5", "sr-ndcg@3"]
        expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=3)
        assert ranker.score(Xv, yv, qid=qv) == pytest.approx(expected, rel=1e-12)  # the last metric


def test_a_plain_callable_metric_with_a_string_objective_keeps_xgboosts_convention(data):
    """Only stochrank metrics take the xgb.train path: xgboost.XGBRanker's f(y_true, y_score) per query
    stays for other callables."""
    (X, y, _, qid), (Xv, yv, _, qv) = data

    def top_label(y_true, y_score):
        return float(y_true[np.argmax(y_score)])

    ours = XGBRanker(objective="rank:ndcg", eval_metric=top_label, **PARAMS)
    ours.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    theirs = xgb.XGBRanker(objective="rank:ndcg", eval_metric=top_label, **PARAMS)
    theirs.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert ours.evals_result() == theirs.evals_result()


# ----------------------------------------------------------------------- continued training
@pytest.mark.parametrize("objective", [stochrank.ndcg(k=3, seed=2), "rank:ndcg"], ids=["stochrank", "string"])
def test_training_continues_from_a_fitted_ranker_as_from_its_booster(data, objective):
    """fit(xgb_model=<fitted XGBRanker>) raised TypeError ('Unknown type:', XGBRanker(...)) with a stochrank
    objective; xgboost.XGBRanker takes a Booster, a file name or a fitted XGBModel."""
    (X, y, _, qid), _ = data
    first = XGBRanker(objective=objective, **PARAMS).fit(X, y, qid=qid)
    from_ranker = XGBRanker(objective=objective, **PARAMS).fit(X, y, qid=qid, xgb_model=first)
    from_booster = XGBRanker(objective=objective, **PARAMS).fit(X, y, qid=qid, xgb_model=first.get_booster())
    assert from_ranker.get_booster().num_boosted_rounds() == 12
    np.testing.assert_array_equal(from_ranker.predict(X), from_booster.predict(X))
    assert from_ranker.get_booster().save_raw("json") == from_booster.get_booster().save_raw("json")
    assert first.get_booster().num_boosted_rounds() == 6  # the ranker continued from is left alone


def test_constructor_feature_weights_are_used_with_a_stochrank_objective(data):
    """XGBRanker(feature_weights=...) was ignored with a stochrank objective (upstream's fit applies it)."""
    (X, y, _, qid), _ = data
    params = {**PARAMS, "colsample_bynode": 0.25}
    only_last = np.array([1e-9, 1e-9, 1e-9, 1.0])
    ranker = XGBRanker(objective=stochrank.ndcg(k=3), feature_weights=only_last, **params).fit(X, y, qid=qid)
    assert set(ranker.get_booster().get_score(importance_type="weight")) == {"f3"}


# ----------------------------------------------------------------------- labels and rows
@pytest.mark.parametrize("objective", [stochrank.ndcg(k=3), "rank:ndcg"], ids=["stochrank", "string"])
def test_labels_that_do_not_match_the_rows_are_refused_by_name(data, objective):
    """y one entry short gave XGBoost's "Check failed: p_info->Size() % n_samples == 0" stack trace."""
    (X, y, sizes, qid), (Xv, yv, _, qv) = data
    ranker = XGBRanker(objective=objective, **PARAMS)
    n = X.shape[0]
    with pytest.raises(ValueError, match=rf"^y has {n - 1} labels but X has {n} rows"):
        ranker.fit(X, y[:-1], qid=qid)
    with pytest.raises(ValueError, match=rf"^y has {n + 1} labels but X has {n} rows"):
        ranker.fit(X, np.append(y, 0.0), group=sizes)
    m = Xv.shape[0]
    with pytest.raises(ValueError, match=rf"^eval_set\[0\]: y has {m - 1} labels but X has {m} rows"):
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv[:-1])], eval_qid=[qv])
    ranker.fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=rf"^y has {m - 1} labels but X has {m} rows"):
        ranker.score(Xv, yv[:-1], qid=qv)


def test_score_with_a_string_objective_and_a_plain_callable_in_a_list_is_xgboosts():
    """``xgboost.XGBRanker.score`` reports the last built-in metric when a callable is in a list: the same."""
    X, y, _, qid = make_queries(30, **SMALL)

    def top_label(y_true, y_score):  # per query, as xgboost.XGBRanker calls it
        return float(y_true[np.argmax(y_score)])

    params = {"objective": "rank:ndcg", "eval_metric": ["ndcg@3", top_label], "n_estimators": 3, "n_jobs": 1}
    ours = XGBRanker(**params).fit(X, y, qid=qid)
    theirs = xgb.XGBRanker(**params).fit(X, y, qid=qid)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(qid=qid)  # xgboost's form
    assert ours.score(X, y, qid=qid) == pytest.approx(theirs.score(frame, y), rel=1e-6)
