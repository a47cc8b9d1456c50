"""The configuration a method keeps on a fold: the first seed's finalists, then the best mean over seeds.

Steps 3 and 4 of :mod:`stochrank.bench.protocol`. Every comparison is on the validation target metric; a NaN
(no finite metric) ranks last, and ties go to the earlier configuration.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .cache import Run

__all__ = ["ranked_by_validation", "select_finalists"]


def _validation_score(run: Run) -> float:
    return -math.inf if math.isnan(run.vali) else run.vali


def ranked_by_validation(runs: Iterable[Run]) -> dict[tuple[str, int], list[Run]]:
    """Per (method, fold), the first seed's runs from best to worst validation (ties: earlier config)."""
    ranked: dict[tuple[str, int], list[Run]] = {}
    for run in sorted(runs, key=lambda r: (-_validation_score(r), r.config_index)):
        ranked.setdefault((run.method, run.fold), []).append(run)
    return ranked


def select_finalists(
    finalists: dict[tuple[str, int], list[Run]], reseeded: Iterable[Run]
) -> dict[tuple[str, int], list[Run]]:
    """Per (method, fold), the finalist with the best mean validation over its seeds, its runs by seed.

    ``finalists`` holds each (method, fold)'s first-seed runs, ``reseeded`` their runs with the further
    seeds; ties go to the earlier configuration.
    """
    by_config: dict[tuple[str, int, int], list[Run]] = {}
    for run in sorted(reseeded, key=lambda r: r.seed):
        by_config.setdefault((run.method, run.fold, run.config_index), []).append(run)
    selected: dict[tuple[str, int], list[Run]] = {}
    for (method, fold), candidates in finalists.items():
        seeds = [[run, *by_config.get((method, fold, run.config_index), [])] for run in candidates]
        selected[method, fold] = max(
            seeds, key=lambda rs: (sum(map(_validation_score, rs)) / len(rs), -rs[0].config_index)
        )
    return selected
