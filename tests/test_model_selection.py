"""Model selection with stochrank's rankers: per-query scores, a query-aware scorer, GridSearchCV & co.

Issue 11, item 1: ``GridSearchCV`` refused ``CatBoostRanker`` (no ``__sklearn_tags__``), ``XGBRanker.score``
scored a whole fold as one query (0.2025 where the per-query NDCG@5 was 0.7433) and refused a DataFrame with
a ``qid`` column. Every expected value here is recomputed independently: a plain loop over the
``GroupKFold`` splits, fresh fits, and ``stochrank.metrics`` on each test fold's queries.
"""

from __future__ import annotations

import json
import pickle
import textwrap

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, RandomizedSearchCV, cross_val_score

import stochrank
from stochrank import metrics as M
from stochrank.metrics import make_ranking_scorer

from .readme import code_block, run
from .test_boosters import make_queries

OBJECTIVE = stochrank.ndcg(k=5)


@pytest.fixture(scope="module")
def data():
    return make_queries(n_queries=45, seed=4)


def _frame(X, qid):
    """X as a DataFrame with XGBoost's special 'qid' column."""
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(qid=qid)


def _by_hand(estimator, X, y, qid, fit_key, score):
    """Per-fold scores of GroupKFold(3) computed without scikit-learn's model selection."""
    out = []
    for train, test in GroupKFold(3).split(X, y, qid):
        fitted = clone(estimator).fit(X[train], y[train], **{fit_key: qid[train]})
        out.append(score(fitted, X[test], y[test], M.group_sizes(qid[test])))
    return np.array(out)


# ----------------------------------------------------------------------------------------- scorer
def test_ranking_scorer_scores_per_query_and_refuses_data_without_queries(data):
    X, y, sizes, qid = data
    ranker = stochrank.xgboost.XGBRanker(objective=OBJECTIVE, n_estimators=5, max_depth=3, n_jobs=1)
    ranker.fit(X, y, qid=qid)
    scorer = make_ranking_scorer("ndcg", k=5, ties="input")
    expected = M.ndcg(y, ranker.predict(X), sizes, k=5, ties="input")
    assert scorer(ranker, X, y, groups=qid) == pytest.approx(expected, rel=1e-12)
    assert (
        scorer(ranker, X, y, qid=qid)
        == scorer(ranker, X, y, group=sizes)
        == scorer(ranker, _frame(X, qid), y)
    )
    whole = M.ndcg(y, ranker.predict(X), [y.size], k=5, ties="input")
    assert abs(whole - expected) > 1e-3  # scoring the data as one query says something else
    with pytest.raises(ValueError, match=r"needs the query structure.*enable_metadata_routing.*'qid' column"):
        scorer(ranker, X, y)
    with pytest.raises(ValueError, match="both groups= and qid="):
        scorer(ranker, X, y, groups=qid, qid=qid)
    with pytest.raises(TypeError, match=r"make_ranking_scorer\('ndcg'\) got unknown convention"):
        make_ranking_scorer("ndcg", gains="exp")
    copy = pickle.loads(pickle.dumps(scorer))
    assert repr(copy) == repr(scorer) == "make_ranking_scorer('ndcg', k=5, ties='input')"
    # It asks for scikit-learn's `groups` (what GroupKFold splits by); the request can be changed.
    with sklearn.config_context(enable_metadata_routing=True):
        assert scorer.get_metadata_routing().consumes("score", ["groups", "qid"]) == {"groups"}
        scorer.set_score_request(groups=False, qid=True)
        assert scorer.get_metadata_routing().consumes("score", ["groups", "qid"]) == {"qid"}


# ---------------------------------------------------------------------------------------- XGBRanker
def test_xgbranker_score_is_per_query_at_the_best_iteration(data):
    """XGBRanker.score(X, y) scored the whole data as one query (0.2025 for a per-query NDCG@5 of 0.7433)."""
    X, y, _, qid = data
    Xv, yv, sizes_v, qv = make_queries(n_queries=20, seed=5)
    ranker = stochrank.xgboost.XGBRanker(
        objective=OBJECTIVE,
        n_estimators=60,
        learning_rate=0.5,
        max_depth=3,
        early_stopping_rounds=3,
        n_jobs=1,
    )
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    curve = ranker.evals_result()["validation_0"]["ndcg@5"]
    assert ranker.best_iteration < len(curve) - 1  # stopped early: the best iteration is not the last
    assert ranker.score(Xv, yv, qid=qv) == pytest.approx(curve[ranker.best_iteration], abs=1e-6)
    # XGBoost's ndcg@5: exp gain, ties in row order, a query without relevant documents scores 1.
    expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=5, ties="input", empty="one")
    assert ranker.score(Xv, yv, group=sizes_v) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match=r"XGBRanker.score needs the query structure.*make_ranking_scorer"):
        ranker.score(Xv, yv)


def test_xgbranker_takes_a_qid_column_and_a_feval_eval_metric(data):
    """A DataFrame with a 'qid' column was refused; score() with eval_metric=feval(...) raised
    "Invalid `group_ptr`"."""
    X, y, _, qid = data
    Xv, yv, sizes_v, qv = make_queries(n_queries=20, seed=5)
    params = {"objective": OBJECTIVE, "n_estimators": 8, "max_depth": 3, "n_jobs": 1}
    reference = stochrank.xgboost.XGBRanker(**params).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    framed = stochrank.xgboost.XGBRanker(**params).fit(_frame(X, qid), y, eval_set=[(_frame(Xv, qv), yv)])
    np.testing.assert_array_equal(framed.predict(_frame(Xv, qv)), reference.predict(Xv))
    assert framed.evals_result() == reference.evals_result()
    assert framed.score(_frame(Xv, qv), yv) == reference.score(Xv, yv, qid=qv)
    with pytest.raises(ValueError, match="'qid' column and group= or qid= is given as well"):
        stochrank.xgboost.XGBRanker(**params).fit(_frame(X, qid), y, qid=qid)

    feval = M.feval("ndcg", k=5, gain="linear")
    ranker = stochrank.xgboost.XGBRanker(**params, eval_metric=feval).fit(X, y, qid=qid)
    expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=5, gain="linear")
    assert ranker.score(Xv, yv, qid=qv) == pytest.approx(expected, rel=1e-12)
    assert ranker.score(_frame(Xv, qv), yv) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------- CatBoostRanker
def test_catboostranker_is_a_scikit_learn_estimator(data):
    """GridSearchCV(CatBoostRanker(...)) failed: "object has no attribute '__sklearn_tags__'"."""
    X, y, _, qid = data
    ranker = stochrank.catboost.CatBoostRanker(
        OBJECTIVE, engine="stochrank", iterations=5, depth=3, thread_count=1
    )
    assert isinstance(ranker, sklearn.base.BaseEstimator)
    params = ranker.get_params()
    assert params == {
        "objective": OBJECTIVE,
        "engine": "stochrank",
        "iterations": 5,
        "depth": 3,
        "thread_count": 1,
    }
    twin = clone(ranker)
    assert twin.get_params() == params and twin.get_params()["objective"] is not OBJECTIVE  # deep-copied
    assert ranker.set_params(depth=2, engine="native") is ranker
    assert ranker.get_params()["depth"] == 2 and ranker.engine == "native"
    assert type(ranker)(**ranker.get_params()).get_params() == ranker.get_params()
    # The call: without metadata routing the scorer cannot know the test fold's queries, so it
    # says how to give them (error_score="raise" shows the message GridSearchCV would otherwise warn with).
    search = GridSearchCV(twin, {"depth": [2, 3]}, cv=GroupKFold(3), error_score="raise")
    with pytest.raises(ValueError, match=r"CatBoostRanker.score needs the query structure.*group_id="):
        search.fit(X, y, groups=qid, group_id=qid)
    # With the ids as a DataFrame column they travel with the rows.
    search.fit(_frame(X, qid), y, groups=qid)

    def ndcg_catboost(model, Xt, yt, sizes):  # CatBoost's conventions: worst ties, empty queries 1
        return M.ndcg(yt, model.predict(Xt), sizes, k=5, ties="worst", empty="one")

    for i, depth in enumerate((2, 3)):
        expected = _by_hand(twin.set_params(depth=depth), X, y, qid, "group_id", ndcg_catboost)
        folds = [search.cv_results_[f"split{j}_test_score"][i] for j in range(3)]
        np.testing.assert_allclose(folds, expected, rtol=1e-12)
    with pytest.raises(sklearn.exceptions.NotFittedError, match="not fitted yet"):
        clone(ranker).predict(X)


# ------------------------------------------------------------------------------------- LGBMRanker
@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")  # lightgbm.LGBMRanker, 4.7
def test_lgbmranker_watches_the_objectives_cutoff_and_scores_per_query(data):
    """stochrank.lightgbm.LGBMRanker: eval_at = (k,) by default, qid / eval_qid / a qid column, score."""
    import lightgbm as lgb

    X, y, sizes, qid = data
    Xv, yv, sizes_v, qv = make_queries(n_queries=20, seed=5)
    params = {"objective": OBJECTIVE, "n_estimators": 100, "learning_rate": 0.3, "verbose": -1, "n_jobs": 1}
    stop = [lgb.early_stopping(5, verbose=False)]
    ranker = stochrank.lightgbm.LGBMRanker(**params).fit(
        X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv], callbacks=stop
    )
    assert list(ranker.evals_result_["valid_0"]) == ["ndcg@5"] and ranker.eval_at_ == (5,)
    curve = ranker.evals_result_["valid_0"]["ndcg@5"]
    assert ranker.best_iteration_ < len(curve) and curve[ranker.best_iteration_ - 1] == max(curve)
    # score: LightGBM's NDCG@5 (ties in row order, empty queries 1) per query = the logged value.
    assert ranker.score(Xv, yv, qid=qv) == pytest.approx(curve[ranker.best_iteration_ - 1], abs=1e-12)
    expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=5, ties="input", empty="one")
    assert ranker.score(_frame(Xv, qv), yv) == ranker.score(Xv, yv, group=sizes_v) == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"LGBMRanker.score needs the query structure"):
        ranker.score(Xv, yv)
    # lightgbm.LGBMRanker evaluates NDCG@1..5 and stops as soon as any of them stalls.
    plain = lgb.LGBMRanker(**params).fit(
        X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sizes_v], callbacks=stop
    )
    assert list(plain.evals_result_["valid_0"]) == [f"ndcg@{k}" for k in range(1, 6)]

    # The same model from group=, unsorted contiguous qid, or DataFrames with a 'qid' column.
    shuffled = np.random.default_rng(0).permutation(sizes.size)[qid]
    small = {**params, "n_estimators": 5}
    reference = stochrank.lightgbm.LGBMRanker(**small).fit(X, y, group=sizes).predict(Xv)
    for kwargs in ({"X": X, "qid": shuffled}, {"X": _frame(X, qid)}):
        fitted = stochrank.lightgbm.LGBMRanker(**small).fit(y=y, **kwargs)
        np.testing.assert_array_equal(
            fitted.predict(_frame(Xv, qv) if "qid" not in kwargs else Xv), reference
        )
    framed = stochrank.lightgbm.LGBMRanker(**small).fit(
        _frame(X, qid), y, eval_X=(_frame(Xv, qv),), eval_y=(yv,)
    )
    assert list(framed.evals_result_["valid_0"]) == ["ndcg@5"]
    with pytest.raises(ValueError, match=r"eval set 0 has no query structure"):
        stochrank.lightgbm.LGBMRanker(**small).fit(X, y, qid=qid, eval_set=[(Xv, yv)])
    with pytest.raises(ValueError, match=r"'group' sums to .*stochrank\.group_sizes\(qid\)"):
        stochrank.lightgbm.LGBMRanker(**small).fit(X, y, group=qid + 1)
    with pytest.raises(TypeError, match=r"call it, stochrank\.ndcg\(k=\.\.\.\)"):
        stochrank.lightgbm.LGBMRanker(objective=stochrank.ndcg).fit(X, y, qid=qid)


# -------------------------------------------------------------------------- GridSearchCV & co.
RANKERS = {
    "lightgbm": (
        lambda: stochrank.lightgbm.LGBMRanker(
            objective=OBJECTIVE, n_estimators=5, learning_rate=0.3, verbose=-1, n_jobs=1
        ),
        "qid",
        {"num_leaves": [3, 7]},
    ),
    "xgboost": (
        lambda: stochrank.xgboost.XGBRanker(objective=OBJECTIVE, n_estimators=5, learning_rate=0.3, n_jobs=1),
        "qid",
        {"max_depth": [2, 3]},
    ),
    "catboost": (
        lambda: stochrank.catboost.CatBoostRanker(
            OBJECTIVE, engine="stochrank", iterations=5, thread_count=1
        ),
        "group_id",
        {"depth": [2, 3]},
    ),
}


def _splits(search, i):
    return [search.cv_results_[f"split{j}_test_score"][i] for j in range(3)]


@pytest.mark.parametrize("name", list(RANKERS))
def test_searches_and_cross_validation_score_every_test_fold_per_query(data, name):
    """GridSearchCV, RandomizedSearchCV and cross_val_score with GroupKFold on the query ids, through
    metadata routing (the query-aware scorer or the ranker's own score) or a DataFrame 'qid' column, give
    the per-query scores of a plain loop over the folds."""
    X, y, _, qid = data
    make, key, grid = RANKERS[name]
    scorer = make_ranking_scorer("ndcg", k=5)

    def with_scorer(model, Xt, yt, sizes):
        return M.ndcg(yt, model.predict(Xt), sizes, k=5)

    def own_score(model, Xt, yt, sizes):
        return model.score(Xt, yt, group=sizes)

    with sklearn.config_context(enable_metadata_routing=True):
        ranker = make().set_fit_request(**{key: "groups"})  # the ranker's query ids are GroupKFold's groups
        grid_search = GridSearchCV(ranker, grid, cv=GroupKFold(3), scoring=scorer, error_score="raise")
        grid_search.fit(X, y, groups=qid)
        ranker = make().set_fit_request(**{key: "groups"}).set_score_request(**{key: "groups"})
        random_search = RandomizedSearchCV(
            ranker, grid, n_iter=2, cv=GroupKFold(3), random_state=0, error_score="raise"
        )
        random_search.fit(X, y, groups=qid)
        routed = cross_val_score(ranker, X, y, params={"groups": qid}, cv=GroupKFold(3), error_score="raise")
    framed = cross_val_score(make(), _frame(X, qid), y, groups=qid, cv=GroupKFold(3), error_score="raise")
    framed_scorer = cross_val_score(make(), _frame(X, qid), y, groups=qid, cv=GroupKFold(3), scoring=scorer)

    for search, score in ((grid_search, with_scorer), (random_search, own_score)):
        for i, params in enumerate(search.cv_results_["params"]):
            expected = _by_hand(make().set_params(**params), X, y, qid, key, score)
            np.testing.assert_allclose(_splits(search, i), expected, rtol=1e-12)
    np.testing.assert_allclose(routed, _by_hand(make(), X, y, qid, key, own_score), rtol=1e-12)
    np.testing.assert_allclose(framed, routed, rtol=1e-12)
    np.testing.assert_allclose(framed_scorer, _by_hand(make(), X, y, qid, key, with_scorer), rtol=1e-12)
    assert (
        grid_search.best_params_
        == grid_search.cv_results_["params"][int(np.argmax(grid_search.cv_results_["mean_test_score"]))]
    )


@pytest.mark.slow
def test_readme_model_selection_runs_as_written():
    """The README's two ways, run as written; the printed scores are recomputed by a loop over the folds."""
    checks = textwrap.dedent(
        """
        import json
        import numpy as np
        from sklearn.base import clone
        from stochrank.metrics import group_sizes, ndcg

        def by_hand(model, score):
            out = []
            for train, test in GroupKFold(3).split(X, y, qid):
                fitted = clone(model).fit(X[train], y[train], qid=qid[train])
                out.append(score(fitted, X[test], y[test], group_sizes(qid[test])))
            return out

        best = stochrank.lightgbm.LGBMRanker(**{**ranker.get_params(), **search.best_params_})
        best_folds = by_hand(best, lambda m, Xt, yt, g: ndcg(yt, m.predict(Xt), g, k=5))
        def xgb_ndcg(m, Xt, yt, g):  # XGBoost's ndcg@5: ties in row order, empty queries 1
            return ndcg(yt, m.predict(Xt), g, k=5, ties="input", empty="one")

        xgb_folds = by_hand(xr, xgb_ndcg)
        cv = cross_val_score(xr, frame, y, groups=qid, cv=GroupKFold(3))
        print(json.dumps([search.best_score_, best_folds, list(cv), xgb_folds]))
        """
    )
    out = run(code_block("Model selection") + checks).splitlines()
    best_score, best_folds, cv, xgb_folds = json.loads(out[-1])
    assert best_score == pytest.approx(np.mean(best_folds), rel=1e-12)
    np.testing.assert_allclose(cv, xgb_folds, atol=1e-6)  # XGBoost's ndcg@5 through Booster.eval
    assert out[1] == str(np.array(cv).round(4))  # what the snippet printed
