"""Sparse Gaussian processes for ranking.

After Guiver & Snelson, *Learning to rank with SoftRank and Gaussian processes*, SIGIR 2008:

* :class:`SparseGP` — sparse GP regressor with an ARD + linear kernel in the paper's two forms,
  ``form="prototype"`` (GP-Rank, eq. 11) and ``form="fitc"`` (FITC, eqs. 29–30); ``predict(X,
  return_std=True)`` gives the per-document predictive mean and standard deviation, so a fitted model is
  a variance source for ``stochrank.softrank(variance=model)``.
* :class:`GPRanker` — GP-Rank / FITC-Rank: the same model trained on SoftNDCG by L-BFGS with exact
  gradients, ranking by the risk-adjusted score ``mean + alpha * std``.
* :class:`SoftNDCG` — the training objective (SoftRank's rank distributions; O(n²) per query for the
  default whole-list linear discount) and its gradient in the score means and variances.
"""

from ._model import SparseGP
from ._ranker import GPRanker, SoftNDCG

__all__ = ["GPRanker", "SoftNDCG", "SparseGP"]
