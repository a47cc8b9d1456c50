"""Train LightGBM on stochrank's NDCG@5 objective: ``lgb.train`` with early stopping, then ``LGBMRanker``.

Run ``python examples/lightgbm_ranking.py`` (bundled MQ2008, fold 1; seconds once Numba's cache is warm).
"""

import os

# OpenMP runtimes (LightGBM's, XGBoost's) spin between parallel regions and starve Numba's threads on a
# busy machine: set this before they load (README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import lightgbm as lgb

import stochrank
from stochrank.datasets import load_mq2008
from stochrank.metrics import ndcg

train, vali, test = (load_mq2008(1, split) for split in ("train", "vali", "test"))

# lgb.train: the objective object goes into params. LightGBM's own ndcg@5 on the validation set decides
# when to stop (a stochrank objective computes gradients only; any LightGBM metric can watch it).
train_set = lgb.Dataset(train.X, train.y, group=train.group)
vali_set = lgb.Dataset(vali.X, vali.y, group=vali.group, reference=train_set)
params = {
    "objective": stochrank.ndcg(k=5),
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "metric": "ndcg",
    "eval_at": [5],
    "verbose": -1,
}
booster = lgb.train(
    params,
    train_set,
    num_boost_round=300,
    valid_sets=[vali_set],
    callbacks=[lgb.early_stopping(30, verbose=False)],
)
scores = booster.predict(test.X, num_iteration=booster.best_iteration)
test_ndcg = ndcg(test.y, scores, test.group, k=5)
print(f"lgb.train:  {booster.best_iteration} trees, test NDCG@5 = {test_ndcg:.4f}")

# The scikit-learn interface takes the same object as `objective`.
ranker = lgb.LGBMRanker(objective=stochrank.ndcg(k=5), n_estimators=100, learning_rate=0.05, verbose=-1)
ranker.fit(train.X, train.y, group=train.group)
scores = ranker.predict(test.X)
print(f"LGBMRanker: 100 trees, test NDCG@5 = {ndcg(test.y, scores, test.group, k=5):.4f}")
