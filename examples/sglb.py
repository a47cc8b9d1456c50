"""Stochastic Gradient Langevin Boosting (SGLB) with a stochrank objective on LightGBM.

Run ``python examples/sglb.py`` (bundled MQ2008, fold 1). SGLB adds Gaussian noise to the gradients and
shrinks the model before every iteration, which makes boosting a Langevin diffusion that converges to the
global optimum of the smoothed metric instead of the nearest local one (Ustimenko & Prokhorenkova, ICML 2021).
The settings follow CatBoost: ``temperature`` is ``diffusion_temperature`` and ``shrink_rate`` is
``model_shrink_rate``. ``lgb.train`` and stochrank's rankers hand the learning rate to the objective; with
``xgb.train`` and LightGBM's own ``LGBMRanker`` pass ``SGLB(learning_rate=...)`` as well. One fold of MQ2008
cannot tell the two apart (a few hundredths of NDCG@5 either way is noise); ``benchmarks/RESULTS.md`` compares
them on 5 folds × 3 seeds.
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

train_set = lgb.Dataset(train.X, train.y, group=train.group)
vali_set = lgb.Dataset(vali.X, vali.y, group=vali.group, reference=train_set)
objectives = {
    "plain": stochrank.ndcg(k=5, mu=0.5, hessian="unit"),  # SGLB's theory is for unit Hessians
    "SGLB": stochrank.ndcg(k=5, mu=0.5, sglb=stochrank.SGLB(temperature=1e4, shrink_rate=1e-3)),
}
for name, objective in objectives.items():
    params = {
        "objective": objective,
        "learning_rate": 0.05,
        "num_leaves": 15,
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
    print(f"{name:5s}: {booster.best_iteration} trees, test NDCG@5 = {test_ndcg:.4f}")
