"""SoftRank on LightGBM with per-document score variances from a sparse Gaussian process.

Run ``python examples/softrank_gp_variance.py`` (bundled MQ2008, fold 1). SoftRank treats each document's
score as Gaussian, N(f_j, v_j), and maximises the expected NDCG@k under that uncertainty, with its exact
gradient (Taylor et al., WSDM 2008). With ``variance=`` a fitted model, v_j is the model's predictive
variance at document j (Guiver & Snelson, SIGIR 2008): here a FITC sparse GP regressed on the labels.
"""

import os

# OpenMP runtimes (LightGBM's, XGBoost's) spin between parallel regions and starve Numba's threads on a
# busy machine: set this before they load (README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import lightgbm as lgb
import numpy as np

import stochrank
from stochrank.datasets import load_mq2008
from stochrank.gp import SparseGP
from stochrank.metrics import ndcg

train, test = load_mq2008(1, "train"), load_mq2008(1, "test")

# A variance source: any fitted model with predict(X, return_std=True) -> (mean, std).
gp = SparseGP(form="fitc", max_iter=50, random_state=0).fit(train.X, train.y)
std = gp.predict(train.X, return_std=True)[1]
print(f"GP std on the training rows: median {np.median(std):.3f}, {std.min():.3f}..{std.max():.3f}")

# The objective reads the training features from the Dataset: keep them (free_raw_data=False).
train_set = lgb.Dataset(train.X, train.y, group=train.group, free_raw_data=False)
objectives = {
    "SoftRank, constant sigma": stochrank.softrank(k=10, sigma=1.0),
    "SoftRank, GP variances": stochrank.softrank(k=10, variance=gp),
}
for name, objective in objectives.items():
    params = {"objective": objective, "learning_rate": 0.05, "num_leaves": 15, "verbose": -1}
    booster = lgb.train(params, train_set, num_boost_round=100)
    scores = booster.predict(test.X)
    print(f"{name}: test NDCG@5 = {ndcg(test.y, scores, test.group, k=5):.4f}")
