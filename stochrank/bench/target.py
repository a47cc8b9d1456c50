"""The target metric of a comparison (``--metric``).

What every method early-stops on, is selected on and is judged by, and what the stochrank methods optimise.

``ndcg@k`` (the default, ``ndcg@5``), ``mrr`` (whole list), ``mrr@k`` or ``err@k``, always in the report's
conventions: worst-case ties and queries without a relevant document skipped; NDCG with the dataset's gain
(:attr:`stochrank.datasets.DatasetSpec.gain`), ERR with Chapelle's stop probabilities
``(2^r - 1) / 2^max_grade``, MRR with relevance ``label > 0``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["EVAL_METRICS", "METRICS", "NDCG_CUTOFFS", "Target", "evaluate", "metric_names"]

METRICS = ("ndcg", "mrr", "err")
_GRAMMAR = re.compile(r"^(ndcg|mrr|err)(?:@([0-9]+))?$")


@dataclass(frozen=True)
class Target:
    """One target metric with the dataset's conventions.

    Attributes
    ----------
    metric : {"ndcg", "mrr", "err"}
        Which metric.
    k : int or None
        Cutoff; None (whole list) only for MRR.
    gain : {"exp", "linear"}
        NDCG's gain, ``2^r - 1`` or ``r`` (the dataset's).
    max_grade : float
        The dataset's highest grade ``G`` (ERR's stop probability ``(2^r - 1) / 2^G``).
    """

    metric: str = "ndcg"
    k: int | None = 5
    gain: str = "exp"
    max_grade: float = 2.0

    def __post_init__(self) -> None:
        """Check the combination (``ValueError`` naming the setting)."""
        if self.metric not in METRICS:
            raise ValueError(f"Target metric must be one of {METRICS}; got {self.metric!r}.")
        if self.k is None and self.metric != "mrr":
            raise ValueError(f"{self.metric} needs a cutoff (e.g. '{self.metric}@10'); only mrr may omit it.")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1):
            raise ValueError(f"Target cutoff k must be a positive int or None; got {self.k!r}.")
        if self.gain not in ("exp", "linear"):
            raise ValueError(f"Target gain must be 'exp' or 'linear'; got {self.gain!r}.")

    @classmethod
    def parse(cls, text: str, *, gain: str = "exp", max_grade: float = 2.0) -> Target:
        """Read ``ndcg@k``, ``mrr``, ``mrr@k`` or ``err@k`` (case-insensitive); ``ValueError`` otherwise."""
        match = _GRAMMAR.match(str(text).strip().lower())
        if match is None:
            raise ValueError(
                f"--metric must be ndcg@K, mrr, mrr@K or err@K (K a positive integer); got {text!r}."
            )
        metric, k = match.group(1), match.group(2)
        if k is None and metric != "mrr":
            raise ValueError(f"--metric {text!r} needs a cutoff: {metric}@K (for example {metric}@10).")
        if k is not None and int(k) < 1:
            raise ValueError(f"--metric {text!r}: the cutoff must be a positive integer.")
        return cls(metric, None if k is None else int(k), gain, float(max_grade))

    @property
    def spec(self) -> str:
        """The command-line spelling, e.g. ``ndcg@5`` or ``mrr`` (the cache identity uses it)."""
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    @property
    def label(self) -> str:
        """The report's column name, e.g. ``NDCG@5``, ``MRR``, ``ERR@10``."""
        return self.spec.upper()

    def conventions(self) -> dict[str, Any]:
        """Keyword arguments of the :mod:`stochrank.metrics` function (besides ties, empty, per_query)."""
        if self.metric == "ndcg":
            return {"k": self.k, "gain": self.gain, "discount": "log"}
        if self.metric == "mrr":
            return {"k": self.k, "threshold": 0.0}
        return {"k": self.k, "max_grade": self.max_grade}

    def values(
        self, y: npt.ArrayLike, scores: npt.ArrayLike, group: npt.ArrayLike, *, per_query: bool = False
    ) -> Any:
        """Return the metric in the report's conventions (worst ties, empty queries skipped, NaN skipped)."""
        from stochrank import metrics

        functions: dict[str, Callable[..., Any]] = {
            "ndcg": metrics.ndcg,
            "mrr": metrics.mrr,
            "err": metrics.err,
        }
        fn = functions[self.metric]
        return fn(y, scores, group, ties="worst", empty="skip", per_query=per_query, **self.conventions())

    def mean(self, split: Any, scores: npt.ArrayLike) -> float:
        """Return the mean over the queries of ``split`` that count (the validation criterion)."""
        return float(self.values(split.y, scores, split.group))

    def per_query(self, split: Any, scores: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Return the per-query values on ``split`` (NaN for a skipped query)."""
        return np.asarray(self.values(split.y, scores, split.group, per_query=True), dtype=np.float64)

    def describe(self) -> str:
        """Return the metric and its conventions in words (for the report)."""
        if self.metric == "ndcg":
            gain = "2^r − 1" if self.gain == "exp" else "r (linear)"
            return f"{self.label} (gain {gain}, discount 1/log2(p + 2))"
        if self.metric == "mrr":
            return f"{self.label} (reciprocal rank of the first document with label > 0)"
        return f"{self.label} (stop probability (2^r − 1) / 2^{self.max_grade:g})"


# ------------------------------------------------------------------------------- reported metrics
NDCG_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
EVAL_METRICS: tuple[str, ...] = (*(f"NDCG@{c}" for c in NDCG_CUTOFFS), "ERR@10", "MRR")


def _reported(target: Target) -> list[Target]:
    """Every reported metric as a target: NDCG@1/3/5/10, ERR@10, MRR, and the target where it is none."""
    g, top = target.gain, target.max_grade
    ndcg = sorted({*NDCG_CUTOFFS, *([target.k] if target.metric == "ndcg" and target.k else [])})
    out = [Target("ndcg", c, g, top) for c in ndcg] + [Target("err", 10, g, top), Target("mrr", None, g, top)]
    if target.label not in {t.label for t in out}:
        out.append(target)
    return out


def metric_names(target: Target | int) -> tuple[str, ...]:
    """Return the test metrics of a protocol with this target (an int k: NDCG@k).

    :data:`EVAL_METRICS`, plus the target when it is not one of them (NDCG@k in cutoff order, other
    metrics last).
    """
    if not isinstance(target, Target):
        target = Target("ndcg", target)
    return tuple(t.label for t in _reported(target))


def evaluate(
    y: npt.ArrayLike, scores: npt.ArrayLike, group: npt.ArrayLike, target: Target
) -> dict[str, npt.NDArray[np.float64]]:
    """Return the per-query test metrics :func:`metric_names` ``(target)`` in the report's conventions.

    NaN marks a skipped query. NDCG with the target's gain (the dataset's), discount 1/log2(p + 2),
    worst-case ties (a tied relevant document is ranked below the tied irrelevant ones), queries without a
    relevant document skipped; ERR with stop probability (2^r - 1) / 2^max_grade; MRR with relevance =
    label > 0.
    """
    return {
        t.label: np.asarray(t.values(y, scores, group, per_query=True), dtype=np.float64)
        for t in _reported(target)
    }
