"""Train CatBoost on NDCG@5: CatBoost's own StochasticRank and stochrank's gradients on CatBoost trees.

Run ``python examples/catboost_ranking.py`` (bundled MQ2008, fold 1). ``CatBoostRanker`` trains
CatBoost's built-in ``StochasticRank`` loss when CatBoost has the objective (``engine="native"``) and
otherwise boosts with stochrank's gradients, one CatBoost tree per iteration (``engine="stochrank"``); both
give an ordinary CatBoost model in ``model_``.
"""

import os

# OpenMP runtimes (LightGBM's, XGBoost's) spin between parallel regions and starve Numba's threads on a
# busy machine: set this before they load (README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import stochrank
from stochrank.catboost import CatBoostRanker, native_loss
from stochrank.datasets import load_mq2008
from stochrank.metrics import ndcg

train, vali, test = (load_mq2008(1, split) for split in ("train", "vali", "test"))
# CatBoost's StochasticRank has gradient leaves only: its objective needs hessian="unit". stochrank's engine
# also trains the default Newton leaves.
objectives = {"native": stochrank.ndcg(k=5, hessian="unit"), "stochrank": stochrank.ndcg(k=5)}
print("CatBoost loss:", native_loss(objectives["native"]))

for engine, objective in objectives.items():
    ranker = CatBoostRanker(
        objective, engine=engine, iterations=150, learning_rate=0.1, depth=4, verbose=False
    )
    ranker.fit(
        train.X,
        train.y,
        group_id=train.qid,
        eval_set=(vali.X, vali.y),
        eval_group_id=vali.qid,
        early_stopping_rounds=30,
    )
    scores = ranker.predict(test.X)
    print(
        f"engine={engine!r}: {ranker.tree_count_} trees, "
        f"test NDCG@5 = {ndcg(test.y, scores, test.group, k=5):.4f}"
    )
