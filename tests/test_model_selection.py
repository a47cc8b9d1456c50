"""Model selection with stochrank's rankers: per-query scores, a query-aware scorer, GridSearchCV & co.

Issue 11, item 1: ``GridSearchCV`` refused ``CatBoostRanker`` (no ``__sklearn_tags__``), ``XGBRanker.score``
scored a whole fold as one query (0.2025 where the per-query NDCG@5 was 0.7433) and refused a DataFrame with
a ``qid`` column. Every expected value here is recomputed independently: a plain loop over the
``GroupKFold`` splits, fresh fits, and ``stochrank.metrics`` on each test fold's queries.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

import stochrank
from stochrank import metrics as M
from stochrank.metrics import make_ranking_scorer

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
