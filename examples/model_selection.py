"""Choose hyper-parameters with scikit-learn's GridSearchCV, splitting and scoring by query.

Run ``python examples/model_selection.py`` (bundled MQ2008, fold 1). Two things make a search over a ranker
meaningful: the folds must not cut a query in two (``GroupKFold`` on the query ids), and every candidate must
be scored per query (``stochrank.metrics.make_ranking_scorer``: mean NDCG@5 over the held-out queries, not one
NDCG over the whole fold as if it were a single query). The features travel as a DataFrame with a ``qid``
column, XGBoost's own convention, so that the scorer sees the query of every row.
"""

import os

# OpenMP runtimes (LightGBM's, XGBoost's) spin between parallel regions and starve Numba's threads on a
# busy machine: set this before they load (README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pandas as pd
from sklearn.model_selection import GridSearchCV, GroupKFold

import stochrank
from stochrank.datasets import load_mq2008
from stochrank.metrics import make_ranking_scorer, ndcg

train, test = load_mq2008(1, "train"), load_mq2008(1, "test")
X = pd.DataFrame(train.X).rename(columns=str)
X.insert(0, "qid", train.query_index)

search = GridSearchCV(
    stochrank.xgboost.XGBRanker(objective=stochrank.ndcg(k=5), n_estimators=40),
    {"max_depth": [3, 6], "learning_rate": [0.05, 0.2]},
    cv=GroupKFold(n_splits=3),
    scoring=make_ranking_scorer("ndcg", k=5),
)
search.fit(X, train.y, groups=train.query_index)
print(f"best {search.best_params_}: cross-validated NDCG@5 = {search.best_score_:.4f}")

X_test = pd.DataFrame(test.X).rename(columns=str)
scores = search.best_estimator_.predict(X_test)
print(f"test NDCG@5 = {ndcg(test.y, scores, test.group, k=5):.4f}")
