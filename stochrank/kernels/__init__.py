"""Numba kernels: pure math on flat arrays with query offsets. No booster imports here."""

from ._finite import count_nonfinite, float64_count_nonfinite
from ._random import query_keys
from .bipartite import bipartite_query
from .ccs import ccs_query
from .lso import lso_query
from .softrank import (
    add_spread_gradient,
    query_spread,
    softrank_batch,
    softrank_linear_batch,
    softrank_linear_query,
    softrank_query,
    softrank_rank_distribution,
)
from .stochastic_rank import (
    KIND_AUC,
    KIND_FILTERED,
    KIND_LSO,
    KIND_MAP,
    KIND_RANKING,
    NO_CASCADE,
    CascadeArrays,
    SmoothingParams,
    booster_gradients,
    langevin_noise,
    positive_sum_count,
    smoothed_gradient,
    translation_invariant,
)

__all__ = [
    "KIND_AUC",
    "KIND_FILTERED",
    "KIND_LSO",
    "KIND_MAP",
    "KIND_RANKING",
    "NO_CASCADE",
    "CascadeArrays",
    "SmoothingParams",
    "add_spread_gradient",
    "bipartite_query",
    "booster_gradients",
    "ccs_query",
    "count_nonfinite",
    "float64_count_nonfinite",
    "langevin_noise",
    "lso_query",
    "positive_sum_count",
    "query_keys",
    "query_spread",
    "smoothed_gradient",
    "softrank_batch",
    "softrank_linear_batch",
    "softrank_linear_query",
    "softrank_query",
    "softrank_rank_distribution",
    "translation_invariant",
]
