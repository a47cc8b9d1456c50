"""Argument handling shared by the public metric functions (pure Python, no kernels)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_labels, check_optional_int, check_scores
from ..conventions import offsets_from_sizes, query_weights
from ._ordering import AVERAGE, TIES

EMPTY_VALUES = {"one": 1.0, "zero": 0.0, "skip": math.nan}


def owner(name: str) -> str:
    return f"stochrank.metrics.{name}"


def prepare(
    labels: Any,
    scores: Any,
    group: Any,
    weight: Any,
    name: str,
    *,
    label_high: float = math.inf,
    label_hint: str = "",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate into ``(labels, scores, offsets, query_weights)``; every row belongs to one query."""
    scores = check_scores(scores)
    labels = check_labels(labels, None, owner(name), high=label_high, hint=label_hint)
    if labels.size != scores.size:
        raise ValueError(
            f"'labels' has {labels.size} entries but 'scores' has {scores.size}. Pass one label and one "
            "score per document, in the same row order."
        )
    offsets = offsets_from_sizes(group, scores.size)
    return labels, scores, offsets, query_weights(weight, offsets)


def k_code(k: Any, name: str, *, none_ok: bool = True) -> int:
    """``k`` for the kernels: ``-1`` means the whole list."""
    if not none_ok:
        return check_int(k, "k", owner(name), low=1)
    value = check_optional_int(k, "k", owner(name), low=1, none_means="the whole list")
    return -1 if value is None else value


def ties_code(ties: Any, name: str, *, average_ok: bool) -> int:
    """Kernel code of the tie rule; 'average' only where the metric is linear in the gains."""
    code = TIES[check_choice(ties, "ties", owner(name), tuple(TIES))]
    if code == AVERAGE and not average_ok:
        raise ValueError(
            f"ties='average' is not supported by {owner(name)}: the metric is not linear in the gains, so "
            "the expectation over orders of tied documents has no closed form here. Use ties='worst' "
            "(CatBoost, pessimistic) or ties='input' (LightGBM/XGBoost, row order)."
        )
    return code


def empty_value(empty: Any, name: str) -> float:
    """Value of a query with nothing to find; NaN marks 'skip'."""
    return EMPTY_VALUES[check_choice(empty, "empty", owner(name), tuple(EMPTY_VALUES))]


def reduce(values: np.ndarray, weights: np.ndarray | None, per_query: bool) -> float | np.ndarray:
    """Per-query values, or their weighted mean over non-skipped (non-NaN) queries."""
    if per_query:
        return values
    keep = ~np.isnan(values)
    w = np.ones(values.size) if weights is None else weights
    total = w[keep].sum()
    if total == 0.0:
        # Every query skipped (or zero weight): the mean is undefined, as np.mean of nothing.
        return math.nan
    return float(np.dot(w[keep], values[keep]) / total)
