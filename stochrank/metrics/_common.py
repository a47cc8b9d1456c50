"""Argument handling shared by the public metric functions (pure Python, no kernels)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_labels, check_optional_int, check_scores
from ..conventions import offsets_from_sizes, query_weights
from ._ordering import AVERAGE, INPUT, TIES

EMPTY_VALUES = {"one": 1.0, "zero": 0.0, "skip": math.nan}
# Ties broken by an external key (``tiebreak=``): +1 orders equal scores by ascending key (the MS MARCO
# evaluation), -1 by descending key (trec_eval and gdeval sort by docno descending).
KEY_TIES = {"key_ascending": 1, "key_descending": -1}


def owner(name: str) -> str:
    return f"stochrank.metrics.{name}"


def prepare(
    labels: Any,
    scores: Any,
    group: Any,
    weight: Any,
    name: str,
    *,
    ties: str = "worst",
    tiebreak: Any = None,
    label_high: float = math.inf,
    label_hint: str = "",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate into ``(labels, scores, offsets, query_weights)``; every row belongs to one query.

    With ``ties`` one of :data:`KEY_TIES` the rows of every query are reordered by the ``tiebreak`` key
    (stable, queries stay in place), so that the kernels' row-order tie rule breaks ties by the key.
    """
    scores = check_scores(scores)
    labels = check_labels(labels, None, owner(name), high=label_high, hint=label_hint)
    if labels.size != scores.size:
        raise ValueError(
            f"'labels' has {labels.size} entries but 'scores' has {scores.size}. Pass one label and one "
            "score per document, in the same row order."
        )
    offsets = offsets_from_sizes(group, scores.size)
    qweights = query_weights(weight, offsets)
    if ties in KEY_TIES:
        order = key_order(tiebreak, offsets, KEY_TIES[ties], name)
        labels, scores = labels[order], scores[order]
    elif tiebreak is not None:
        raise ValueError(
            f"{owner(name)} got a 'tiebreak' key but ties={ties!r}; the key is used only with "
            "ties='key_descending' (trec_eval, gdeval: docno descending) or ties='key_ascending' (MS MARCO)."
        )
    return labels, scores, offsets, qweights


def key_order(tiebreak: Any, offsets: np.ndarray, direction: int, name: str) -> np.ndarray:
    """Row permutation sorting every query's rows by the key (``direction`` +1 ascending, -1 descending).

    Keys are numbers or strings (compared as Python compares them: code points, which is ``strcmp``'s
    byte order for UTF-8); rows with equal keys keep their order.
    """
    n_rows = int(offsets[-1])
    if tiebreak is None:
        raise ValueError(
            f"ties='key_{'ascending' if direction > 0 else 'descending'}' of {owner(name)} needs "
            "tiebreak=<one key per document>, e.g. the document ids (docno), in the rows' order."
        )
    keys = np.asarray(tiebreak)
    if keys.shape != (n_rows,):
        raise ValueError(
            f"'tiebreak' of {owner(name)} must be 1-D with one key per document ({n_rows}); got shape "
            f"{keys.shape}. Pass the document ids in the same row order as 'scores'."
        )
    kind = {"U": str, "S": bytes}.get(keys.dtype.kind)
    if (
        kind is not None
        and not isinstance(tiebreak, np.ndarray)
        and not all(isinstance(k, kind) for k in tiebreak)
    ):
        keys = np.asarray(tiebreak, dtype=object)  # numpy turned numbers mixed with strings into strings
    if keys.dtype.kind not in "biufUS":
        try:
            text = next((t for t in (str, bytes) if all(isinstance(k, t) for k in keys)), None)
            keys = keys.astype(text) if text is not None else keys.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"'tiebreak' of {owner(name)} must hold numbers or strings (one kind); got "
                f"{sorted({type(k).__name__ for k in keys})}."
            ) from None
    if keys.dtype.kind in "fc" and not np.isfinite(keys).all():  # after conversion: None and NaN objects too
        raise ValueError(f"'tiebreak' of {owner(name)} contains NaN, None or inf; keys must be comparable.")
    rank = np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64)
    query = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    order: np.ndarray = np.lexsort((direction * rank, query))  # stable: equal keys keep row order
    return order


def k_code(k: Any, name: str, *, none_ok: bool = True) -> int:
    """``k`` for the kernels: ``-1`` means the whole list."""
    if not none_ok:
        return check_int(k, "k", owner(name), low=1)
    value = check_optional_int(k, "k", owner(name), low=1, none_means="the whole list")
    return -1 if value is None else value


def ties_code(ties: Any, name: str, *, average_ok: bool) -> int:
    """Kernel code of the tie rule; 'average' only where the metric is linear in the gains.

    The key rules run as row order (``INPUT``) on rows that :func:`prepare` sorted by the key.
    """
    if ties in KEY_TIES:
        return INPUT
    code = TIES[check_choice(ties, "ties", owner(name), (*TIES, *KEY_TIES))]
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
