"""Gaussian processes for ranking and for learning gradients.

Sparse Gaussian processes for ranking (Guiver & Snelson, *Learning to rank with SoftRank and Gaussian
processes*, SIGIR 2008):

* :class:`SparseGP` — sparse GP regressor with an ARD + linear kernel in the paper's two forms,
  ``form="prototype"`` (GP-Rank, eq. 11) and ``form="fitc"`` (FITC, eqs. 29-30); ``predict(X,
  return_std=True)`` gives the per-document predictive mean and standard deviation, so a fitted model is
  a variance source for ``stochrank.softrank(variance=model)``.
* :class:`GPRanker` — GP-Rank / FITC-Rank: the same model trained on SoftNDCG by L-BFGS with exact
  gradients, ranking by the risk-adjusted score ``mean + alpha * std``.
* :class:`SoftNDCG` — the training objective (SoftRank's rank distributions; O(n²) per query for the
  default whole-list linear discount) and its gradient in the score means and variances.
* :class:`PreferenceGP` — a GP utility learned from duels (winner, loser) by expectation propagation
  (Takeno et al. 2023: EP on the truncated multivariate normal of the duel variables, or probit sites),
  exact or sparse (FITC); :func:`pairs_from_labels` builds within-query duels from graded labels.
* :class:`TraceNormMVGP` — matrix-variate GP regression over rows (tasks) × columns (items) with row and
  column kernels and a trace-norm constrained posterior mean (Koyejo, Lee & Ghosh 2013): accelerated
  proximal gradient with singular-value thresholding, warm-started λ paths of the spectral elastic net,
  closed-form posterior covariance, predictions for unseen rows and columns.
* :class:`BipartiteMVGPRanker` — the same model with the seed's generative bipartite ranking layer:
  per-task scores retargeted on the ordered simplex (monotone retargeting), alternating with the GP fit.

Learning gradients:

* :class:`GradientGP` — Gaussian-process gradient learning (GPGL, Jiang et al. 2010): a GP posterior over
  the gradient field from first-order Taylor pairs, with credible intervals, the GOP/EGM/ECM matrices,
  e.d.r. directions and per-feature relevance; exact or inducing-point inference.
* :class:`RKHSGradientLearner` — the regularised RKHS gradient learner of Mukherjee & Zhou (2006).
"""

from ._bipartite import BipartiteMVGPRanker
from ._ep import CholeskyJitterWarning
from ._gradient import GradientGP
from ._model import SparseGP
from ._mvgp import TraceNormMVGP
from ._pairs import pairs_from_labels
from ._preference import PreferenceGP
from ._ranker import GPRanker, SoftNDCG
from ._rkhs_gradient import RKHSGradientLearner

__all__ = [
    "BipartiteMVGPRanker",
    "CholeskyJitterWarning",
    "GPRanker",
    "GradientGP",
    "PreferenceGP",
    "RKHSGradientLearner",
    "SoftNDCG",
    "SparseGP",
    "TraceNormMVGP",
    "pairs_from_labels",
]
