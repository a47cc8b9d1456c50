"""scikit-learn's estimator checks on every stochrank ranker (issue 11, item 1).

The checks call ``fit(X, y)`` and ``score(X, y)`` with nothing else, but a ranker cannot train or score
without queries, and refusing to (rather than treating all rows as one query) is the point of
``test_rankers_refuse_data_without_queries``. So each ranker is checked through a subclass that, *only
when the call gives no query structure*, supplies one: consecutive blocks of four rows. Everything the
checks exercise (parameters, cloning, pickling, input validation, dtypes, sparse input, NaN, fitted state,
idempotent and order-invariant predictions, ``n_features_in_``) is the real class. The data are sklearn's
small check sets and the boosters train 3 trees, so the whole run takes a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import stochrank
from stochrank.catboost import CatBoostRanker
from stochrank.lightgbm import LGBMRanker
from stochrank.xgboost import XGBRanker

# Linear gain: the checks' labels are small non-negative integers but not always <= 50 (exp gain's range).
OBJECTIVE = stochrank.ndcg(k=3, gain="linear")
QUERY_SIZE = 4


class _Queries:
    """Give ``fit`` / ``score`` calls without a query structure blocks of QUERY_SIZE rows as queries."""

    _query_key = "qid"

    def fit(self, X, y, **kwargs):
        if all(kwargs.get(key) is None for key in ("group", "qid", "group_id")):
            kwargs[self._query_key] = np.arange(np.shape(X)[0]) // QUERY_SIZE
        return super().fit(X, y, **kwargs)

    def score(self, X, y, **kwargs):
        if not kwargs:
            kwargs[self._query_key] = np.arange(np.shape(X)[0]) // QUERY_SIZE
        return super().score(X, y, **kwargs)


class LGBMRankerQ(_Queries, LGBMRanker):
    pass


class XGBRankerQ(_Queries, XGBRanker):
    pass


class CatBoostRankerQ(_Queries, CatBoostRanker):
    _query_key = "group_id"


ESTIMATORS = [
    LGBMRankerQ(objective=OBJECTIVE, n_estimators=3, min_child_samples=1, verbose=-1, n_jobs=1),
    XGBRankerQ(objective=OBJECTIVE, n_estimators=3, n_jobs=1),
    CatBoostRankerQ(OBJECTIVE, iterations=3, thread_count=1),  # engine 'auto': CatBoost's StochasticRank
    CatBoostRankerQ(OBJECTIVE, engine="stochrank", iterations=3, thread_count=1),
]

# Every check that fails, and why; all other checks pass.
EXPECTED_FAILURES = {
    LGBMRankerQ: {
        "check_no_attributes_set_in_init": (
            "lightgbm.LGBMModel.__init__ stores keyword arguments it does not name (here verbose=-1) as "
            "attributes; LGBMRanker inherits LightGBM's constructor unchanged"
        ),
    },
    XGBRankerQ: {
        "check_do_not_raise_errors_in_init_or_set_params": (
            "like xgboost.XGBRanker, XGBRanker(objective=...) refuses a string objective that is not a "
            "ranking one at construction (asserted in tests/test_boosters.py)"
        ),
    },
}


def _expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator), {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    ("ranker", "match"),
    [
        (
            LGBMRanker(objective=OBJECTIVE, n_estimators=2, min_child_samples=1, verbose=-1),
            r"LGBMRanker.fit needs the query structure",
        ),
        (XGBRanker(objective=OBJECTIVE, n_estimators=2), r"XGBRanker.fit needs the query structure"),
        (
            CatBoostRanker(OBJECTIVE, iterations=2),
            r"X needs its query structure.*group_id=.*group=.*'qid' column",
        ),
    ],
    ids=["lightgbm", "xgboost", "catboost"],
)
def test_rankers_refuse_data_without_queries(ranker, match):
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 3
    with pytest.raises(ValueError, match=match):
        ranker.fit(X, y)
    fitted = ranker.fit(
        X, y, **{"group_id" if isinstance(ranker, CatBoostRanker) else "qid": np.arange(40) // 4}
    )
    with pytest.raises(ValueError, match=r"score needs the query structure.*make_ranking_scorer"):
        fitted.score(X, y)
