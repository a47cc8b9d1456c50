"""Shared ranking conventions, one home each: label gains, position discounts, query boundaries.

Layer 1 of the package: the objectives, the metrics and the GP rankers all encode labels, discount
positions and read query structure through these functions, so a convention (the gain ``2**r - 1``,
``1/log2(r + 2)``, LightGBM-style query sizes) is written exactly once. Nothing here imports a booster.
"""

from .discounts import DISCOUNTS, position_weights
from .queries import (
    check_offsets,
    every_query_has_one_document,
    group_sizes,
    labels_per_row,
    offsets_from_qid,
    offsets_from_sizes,
    per_query_sums,
    pop_qid_column,
    query_offsets,
    query_weights,
    rows_and_queries,
    warn_if_nothing_to_rank,
)
from .relevance import (
    MAX_EXP_LABEL,
    GainKind,
    binary_relevance,
    check_graded_labels,
    gains,
    ideal_dcg,
    ndcg_scaling,
    stop_probabilities,
    varying_queries,
)

__all__ = [
    "DISCOUNTS",
    "MAX_EXP_LABEL",
    "GainKind",
    "binary_relevance",
    "check_graded_labels",
    "check_offsets",
    "every_query_has_one_document",
    "gains",
    "group_sizes",
    "ideal_dcg",
    "labels_per_row",
    "ndcg_scaling",
    "offsets_from_qid",
    "offsets_from_sizes",
    "per_query_sums",
    "pop_qid_column",
    "position_weights",
    "query_offsets",
    "query_weights",
    "rows_and_queries",
    "stop_probabilities",
    "varying_queries",
    "warn_if_nothing_to_rank",
]
