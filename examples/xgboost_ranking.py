"""Train XGBoost on stochrank's NDCG@5 objective: ``xgb.train(obj=...)``, then ``XGBRanker``.

Run ``python examples/xgboost_ranking.py`` (bundled MQ2008, fold 1). ``xgboost.XGBRanker`` refuses callable
objectives; ``stochrank.xgboost.XGBRanker`` is the same estimator that accepts them.
"""

import os

# OpenMP runtimes (LightGBM's, XGBoost's) spin between parallel regions and starve Numba's threads on a
# busy machine: set this before they load (README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import xgboost as xgb

import stochrank
from stochrank.datasets import load_mq2008
from stochrank.metrics import ndcg

train, vali, test = (load_mq2008(1, split) for split in ("train", "vali", "test"))

dtrain = xgb.DMatrix(train.X, train.y, group=train.group)
dvali = xgb.DMatrix(vali.X, vali.y, group=vali.group)
# base_score 0: a ranking objective has no "mean label" to start from.
params = {"base_score": 0, "eta": 0.1, "max_depth": 4, "eval_metric": "ndcg@5"}
booster = xgb.train(
    params,
    dtrain,
    num_boost_round=200,
    evals=[(dvali, "vali")],
    obj=stochrank.ndcg(k=5),
    early_stopping_rounds=30,
    verbose_eval=False,
)
scores = booster.predict(xgb.DMatrix(test.X), iteration_range=(0, booster.best_iteration + 1))
test_ndcg = ndcg(test.y, scores, test.group, k=5)
print(f"xgb.train:  {booster.best_iteration + 1} trees, test NDCG@5 = {test_ndcg:.4f}")

# qid: one (sorted) query id per row, as xgboost.XGBRanker takes it; query_index numbers the queries 0, 1, ...
ranker = stochrank.xgboost.XGBRanker(
    objective=stochrank.ndcg(k=5), n_estimators=60, learning_rate=0.1, max_depth=4
)
ranker.fit(train.X, train.y, qid=train.query_index)
scores = ranker.predict(test.X)
print(f"XGBRanker:  60 trees, test NDCG@5 = {ndcg(test.y, scores, test.group, k=5):.4f}")
