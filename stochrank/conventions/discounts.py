r"""Position discounts shared by the objectives and the evaluation metrics.

The objectives are StochasticRank, SoftRank and GP-Rank's SoftNDCG; the metrics DCG / NDCG.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DISCOUNTS", "position_weights"]

DISCOUNTS = ("log", "position", "linear", "none")


def position_weights(discount: str, length: int, k: int | None = None) -> np.ndarray:
    r"""Discount :math:`w_r` of the 0-based ranks :math:`r < \text{length}`, zero from rank ``k`` on.

    * ``"log"``: :math:`w_r = 1/\log_2(r + 2)` (the usual DCG discount);
    * ``"position"``: :math:`w_r = 1/(r + 1)`;
    * ``"linear"``: :math:`w_r = \max(0, 1 - r/k)` (Taylor et al.'s milder training discount; needs ``k``);
    * ``"none"``: :math:`w_r = 1` (PFound: its cascade does the discounting).
    """
    r = np.arange(length, dtype=np.float64)
    if discount == "log":
        w = 1.0 / np.log2(r + 2.0)
    elif discount == "position":
        w = 1.0 / (r + 1.0)
    elif discount == "linear":
        if k is None:
            raise ValueError("The linear discount 1 - r/k needs a cut-off k.")
        w = np.maximum(1.0 - r / float(k), 0.0)
    elif discount == "none":
        w = np.ones(length)
    else:
        raise ValueError(f"Unknown discount {discount!r}; expected one of {', '.join(map(repr, DISCOUNTS))}.")
    if k is not None:
        w[k:] = 0.0
    return w
