"""The random-search spaces of the benchmark: distributions, one space per booster, each method's own.

Ranges. From the StochasticRank paper (Appendix F, random search with 500 samples), used here as given:

* depth uniform on {6, ..., 10};
* CatBoost's L2 leaf regularisation ``l2_leaf_reg`` log-uniform on [0.1, 10] -- the paper's range for the
  baselines; the paper fixes it at 0 for StochasticRank, whereas here every method on a booster shares one
  space, so StochasticRank is tuned over the baselines' L2 range too. On LightGBM and XGBoost trees L2 is
  drawn in documents' worth of curvature, ``l2_documents``, on a range chosen here, [0.1, 300] (below);
* SGLB: model shrink rate log-uniform on [1e-5, 1e-2], diffusion temperature log-uniform on [1e8, 1e11]
  (CatBoost's semantics, which :class:`stochrank.SGLB` follows).

Chosen here, not the paper's:

* **learning rate log-uniform on [0.01, 0.5]** for every method on every booster (the paper: [1e-3, 1]). With
  at most 1000 trees, a third of the paper's draws fall below 0.01, where the whole budget adds up to fewer
  than ten default-sized steps and every method is still improving at the cap (the tuned full comparison
  with [1e-3, 1] kept LambdaMART at ~21 trees: the search found the upper end), and a tenth above 0.5, where
  boosting overshoots on the first trees;
* **the Newton-leaf stochrank methods run the objective's defaults except for one knob, the training
  cut-off** (``sr-lgb``, ``sr-xgb``, ``sr-cb``: mu = 0, sigma = 1, one draw; issue 9 asks whether
  ``stochrank.ndcg(k)`` *with its defaults* beats the booster's tuned LambdaMART). The cut-off the objective
  is built with is drawn from {k, 2k, 4k} for a target judged at k (``stochrank.ndcg(k=10)`` for NDCG@5,
  and so on; whole-list targets such as MRR keep none): the counterpart of LambdaMART's own
  ``lambdarank_truncation_level`` / ``lambdarank_num_pair_per_sample``, which are in its space. Measured
  (benchmarks/RESULTS.md "Quality levers"): judged at NDCG@5 on generated nonlinear data, training at
  k = 10 or 20 raised validation NDCG@5 on LightGBM and XGBoost trees, where it let relevant documents
  below the fifth position feel a pull. sigma does not change what Newton leaves learn (the whole
  trajectory from zero scores scales with it: exact scale-equivariance). mu was in their space (uniform
  on [0, 1]) until measured (validation NDCG@5 at mu = 0.5): on synthetic data where the number of trees
  binds LightGBM fell from 0.8900 to 0.8630 (0.7713 at mu = 0.9); on MQ2008 it moved by noise only
  (LightGBM -0.002, XGBoost +0.001); so half of the draws went where the defaults were at least as good;
* StochasticRank's relevance shift mu uniform on [0, 1] and sigma log-uniform on [0.1, 10] (around
  CatBoost's default 1; Appendix F gives no range for it) for the unit-Hessian variants: the SGLB methods
  (SGLB's default is ``hessian='unit'``), CatBoost's own StochasticRank and SoftRank, where sigma sets the
  smoothing against the score scale. The paper draws mu log-uniform on [1e-2, 10] (for StochasticRank-R1);
  this benchmark does not, because with mu = 10 training on MQ2008 stops after about 4 trees (measured),
  so a large share of the paper's range would spend the budget on dead configurations;
* LightGBM's ``num_leaves`` log-uniform on [8, 256] and ``min_data_in_leaf`` on [1, 200], XGBoost's
  ``min_leaf_documents`` on [1, 200] (below; the paper tunes CatBoost's symmetric trees, which have none);
* LambdaMART's own knobs: LightGBM ``lambdarank_truncation_level`` log-uniform on {3..40} (spans LightGBM's
  advice k + 3 for k <= 10 and its default 30) and ``lambdarank_norm`` {true, false}; XGBoost
  ``lambdarank_pair_method`` {topk, mean}, ``lambdarank_num_pair_per_sample`` log-uniform on {1..40} (the
  truncation for topk, default 32; pairs sampled per document for mean, default 1) and
  ``lambdarank_normalization`` {true, false}. LightGBM's ``sigmoid`` is not searched: at equal scores the
  lambdas scale with sigmoid and their Hessians with its square, so it rescales the first steps, which the
  learning rate already spans.

XGBoost has no minimum number of documents per leaf, only ``min_child_weight``, a sum of Hessians, and the
Hessians of ``rank:ndcg`` (lambda derivatives) and of stochrank (normalised to mean 1 per document) live on
different scales: XGBoost's default weight 1 asks a ``rank:ndcg`` leaf for 6-64 documents' worth of
curvature and a stochrank leaf for one, and at depth 10 on 2,000 generated queries stochrank gained
0.007-0.008 test NDCG@5 from ``min_child_weight=50`` (benchmarks/RESULTS.md "Quality levers"). So XGBoost's
space draws a **minimum leaf weight in documents' worth of curvature**, ``min_leaf_documents``
log-uniform on {1..200} (the range of LightGBM's ``min_data_in_leaf``), and the trainer turns it into
``min_child_weight`` = documents x the method's mean Hessian per document at the first tree
(:func:`stochrank.bench.trainers.xgboost_hessian_per_document`): the same draw asks every method's leaves for
the same number of documents' worth of curvature at the first tree. It is not a document count, and
later in training the two scales drift apart again: ``rank:ndcg``'s Hessians follow the margins of its
pairs (a pair ordered with a wide margin adds little), stochrank's are renormalised to mean 1 at every call.

L2 leaf regularisation has the same unit problem on both boosters: a leaf is ``-G / (H + lambda)``, so
``lambda_l2`` / ``reg_lambda`` is so many Hessian units. On MQ2008 fold 1 LightGBM's ``lambdarank`` has 0.035
per document, XGBoost's ``rank:ndcg`` 0.070, stochrank 0.515 (benchmarks/leaf_l2.py), so a raw draw on
[0.1, 10] shrank the leaves of ``lambdarank`` as 2.9-288 documents' worth of curvature would, of
``rank:ndcg`` as 1.4-144, of stochrank as 0.2-19. Both spaces therefore draw **``l2_documents``**, and the
trainers pass ``lambda_l2`` / ``reg_lambda`` = ``l2_documents`` x the method's mean Hessian per document at
the first tree (:func:`stochrank.bench.trainers.lightgbm_hessian_per_document`,
:func:`~stochrank.bench.trainers.xgboost_hessian_per_document`). Its range is **log-uniform on [0.1, 300]**:
it covers every L2 the raw-unit draw gave any method in documents' worth at the objectives' default
settings on MQ2008 fold 1 (``lambdarank`` up to 288), and drawn on the paper's [0.1, 10] read as documents'
worth, ``lambdarank`` could not reach the values it chooses when allowed (on [0.1, 300] up to 137 documents'
worth on MQ2008; benchmarks/RESULTS.md footnote 12). The real-data comparisons in benchmarks/RESULTS.md and
the synthetic NDCG@5 pairs of its footnotes 13 to 16 ran on [0.1, 300]; those whose protocol line lists
``lambda_l2`` / ``reg_lambda`` (the other synthetic ones) ran before documents' worth, in raw units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BOOSTER_SPACES",
    "LGB_LAMBDARANK_SPACE",
    "NEWTON_SPACE",
    "SGLB_SPACE",
    "SIGMA",
    "SPACE_NOTES",
    "TRAINING_CUTOFF",
    "UNIT_SPACE",
    "XGB_LAMBDARANK_SPACE",
    "Choice",
    "Distribution",
    "LogUniform",
    "LogUniformInt",
    "Uniform",
]


# ----------------------------------------------------------------------------------- distributions
@dataclass(frozen=True)
class Uniform:
    """Uniform on [low, high]."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        """Draw one value from ``rng``."""
        return float(rng.uniform(self.low, self.high))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"U[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniform:
    """Log-uniform on [low, high] (low > 0)."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        """Draw one value from ``rng``."""
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"logU[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniformInt:
    """Log-uniform on [low, high + 1), rounded down: integers from low to high."""

    low: int
    high: int

    def sample(self, rng: np.random.Generator) -> int:
        """Draw one value from ``rng``."""
        return min(self.high, int(math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"logU{{{self.low}..{self.high}}}"


@dataclass(frozen=True)
class Choice:
    """Uniform over a finite set of values (``options`` may hold ``"2k"``, resolved by the method)."""

    options: tuple[Any, ...]

    def sample(self, rng: np.random.Generator) -> Any:
        """Draw one option from ``rng`` (a plain Python value)."""
        value = self.options[int(rng.integers(len(self.options)))]
        return value.item() if isinstance(value, np.generic) else value

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return "{" + ", ".join(str(o) for o in self.options) + "}"


Distribution = Uniform | LogUniform | LogUniformInt | Choice

LEARNING_RATE = LogUniform(0.01, 0.5)
DEPTH = Choice((6, 7, 8, 9, 10))
L2 = LogUniform(0.1, 10.0)
L2_DOCUMENTS = LogUniform(0.1, 300.0)  # documents' worth of curvature; see above

BOOSTER_SPACES: dict[str, dict[str, Distribution]] = {
    "lightgbm": {
        "learning_rate": LEARNING_RATE,
        "max_depth": DEPTH,
        "num_leaves": LogUniformInt(8, 256),
        "min_data_in_leaf": LogUniformInt(1, 200),
        "l2_documents": L2_DOCUMENTS,
    },
    "xgboost": {
        "learning_rate": LEARNING_RATE,
        "max_depth": DEPTH,
        "l2_documents": L2_DOCUMENTS,
        "min_leaf_documents": LogUniformInt(1, 200),
    },
    "catboost": {"learning_rate": LEARNING_RATE, "depth": DEPTH, "l2_leaf_reg": L2},
}

# What a booster's space line in the report needs besides the distributions.
SPACE_NOTES: dict[str, str] = {
    "lightgbm": "LightGBM's l2_documents is L2 leaf regularisation in documents' worth of curvature at the "
    "first tree, the same for every method: it is passed as lambda_l2 = l2_documents x the method's mean "
    "Hessian per document at the first tree, whose scale differs by objective.",
    "xgboost": "XGBoost's min_leaf_documents and l2_documents are a minimum leaf weight and L2 leaf "
    "regularisation in documents' worth of curvature at the first tree, the same for every method: they are "
    "passed as min_child_weight and reg_lambda = that many x the method's mean Hessian per document at the "
    "first tree, whose scale differs by objective.",
}

SIGMA = LogUniform(0.1, 10.0)
MU = Uniform(0.0, 1.0)
TRAINING_CUTOFF = Choice(("k", "2k", "4k"))  # resolved against the target's k by the method
NEWTON_SPACE: dict[str, Distribution] = {"training_cutoff": TRAINING_CUTOFF}  # else the objective's defaults
UNIT_SPACE: dict[str, Distribution] = {"sigma": SIGMA, "mu": MU}
SGLB_SPACE: dict[str, Distribution] = {
    "temperature": LogUniform(1e8, 1e11),
    "shrink_rate": LogUniform(1e-5, 1e-2),
}
LGB_LAMBDARANK_SPACE: dict[str, Distribution] = {
    "lambdarank_truncation_level": LogUniformInt(3, 40),
    "lambdarank_norm": Choice((True, False)),
}
XGB_LAMBDARANK_SPACE: dict[str, Distribution] = {
    "lambdarank_pair_method": Choice(("topk", "mean")),
    "lambdarank_num_pair_per_sample": LogUniformInt(1, 40),
    "lambdarank_normalization": Choice((True, False)),
}
