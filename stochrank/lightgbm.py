"""The LightGBM adapter (layer 3): :class:`LGBMRanker`, LightGBM's ranker set up for stochrank objectives.

``lightgbm.LGBMRanker`` trains stochrank objectives as they are; this subclass fixes what it does around
them: its default evaluation (NDCG at 1, 2, 3, 4, 5) early-stops on NDCG@1 after a few trees, it takes no
per-row query ids (the only query structure scikit-learn's splitters can slice), it has no ``score``, and
it cannot tell a constructor (``objective=stochrank.ndcg``) from an objective. ``lgb.train`` needs no
adapter: pass the objective as ``params["objective"]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np

from .conventions import pop_qid_column, query_offsets, rows_and_queries
from .metrics import ndcg
from .objectives import RankingObjective
from .objectives._docs import check_not_constructor

__all__ = ["LGBMRanker"]

_LIGHTGBM_EVAL_AT = (1, 2, 3, 4, 5)  # lightgbm.LGBMRanker.fit's default
_HAS_EVAL_X = "eval_X" in inspect.signature(lgb.LGBMRanker.fit).parameters  # LightGBM >= 4.7


class LGBMRanker(lgb.LGBMRanker):
    """``lightgbm.LGBMRanker`` whose evaluation watches the optimised metric and whose ``score`` is per query.

    The constructor is LightGBM's (same parameters); ``fit`` takes LightGBM's arguments and:

    * ``eval_at`` defaults to the objective's cut-off, ``(k,)`` for ``stochrank.ndcg(k=5)`` (LightGBM's
      ``(1, 2, 3, 4, 5)`` for string objectives and objectives without one), so that early stopping
      (``callbacks=[lgb.early_stopping(n)]``) watches NDCG@k rather than stopping on NDCG@1;
    * the query structure is ``group`` (documents per query), ``qid`` (one query id per row, a query's
      rows contiguous, the ids need not be sorted) or a ``qid`` column of a pandas DataFrame ``X``
      (XGBoost's convention), and likewise ``eval_group`` / ``eval_qid`` / a column per eval set; they are
      checked with stochrank's messages;
    * a stochrank constructor passed as the objective (``objective=stochrank.ndcg``) is refused with
      the fix;
    * ``SGLB`` gets this ranker's ``learning_rate`` unless it names one, which must then agree (as with
      ``lgb.train``).

    ``score(X, y, qid=...)`` is LightGBM's NDCG at the largest ``eval_at`` position over the queries it is
    given, and ``predict`` drops a DataFrame's ``qid`` column.

    Examples
    --------
    >>> ranker = LGBMRanker(objective=stochrank.ndcg(k=5), n_estimators=500)  # doctest: +SKIP
    >>> ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv],           # doctest: +SKIP
    ...            callbacks=[lgb.early_stopping(20)])
    """

    def fit(  # type: ignore[override]  # LightGBM's parameters plus qid= / eval_qid=, eval_at=None
        self,
        X: Any,
        y: Any,
        sample_weight: Any = None,
        init_score: Any = None,
        group: Any = None,
        eval_set: list[tuple[Any, Any]] | None = None,
        eval_names: list[str] | None = None,
        eval_sample_weight: list[Any] | None = None,
        eval_init_score: list[Any] | None = None,
        eval_group: list[Any] | None = None,
        eval_metric: Any = None,
        eval_at: int | Sequence[int] | None = None,
        feature_name: Any = "auto",
        categorical_feature: Any = "auto",
        callbacks: list[Callable[..., Any]] | None = None,
        init_model: Any = None,
        *,
        qid: Any = None,
        eval_qid: list[Any] | None = None,
        eval_X: Any = None,
        eval_y: Any = None,
    ) -> LGBMRanker:
        """Fit as ``lightgbm.LGBMRanker.fit``, with ``qid`` / ``eval_qid`` and ``eval_at`` from the objective.

        Parameters beyond LightGBM's: ``qid`` (one query id per row) instead of ``group``; ``eval_qid``
        (one array per eval set) instead of ``eval_group``; ``eval_at=None`` means ``(k,)`` for an objective
        with cut-off k. As in LightGBM, ``eval_at`` may be one position (``eval_at=3``), ``eval_set`` a list
        of ``(X, y)`` pairs or one pair, and ``eval_X`` / ``eval_y`` (given together) replace ``eval_set``
        (not both). Returns self.
        """
        check_not_constructor(self.objective)
        X, group = _query_sizes(X, group, qid, "group", "qid")
        if group is None:
            raise ValueError(
                "LGBMRanker.fit needs the query structure: pass group=<sizes> or qid=<one id per row>."
            )
        kwargs = _eval_arguments(eval_set, eval_X, eval_y, eval_group, eval_qid)
        if isinstance(self.objective, RankingObjective):
            # LightGBM passes LGBMRanker's learning rate to no objective, and trains what _objective holds
            # (its own set_params keeps it in step with objective): SGLB gets the rate here, checked.
            self._objective = self.objective.at_learning_rate(self.learning_rate, "LGBMRanker")
        positions = self._default_eval_at() if eval_at is None else _positions(eval_at)
        super().fit(
            X, y, sample_weight=sample_weight, init_score=init_score, group=group, eval_names=eval_names,
            eval_sample_weight=eval_sample_weight, eval_init_score=eval_init_score, eval_metric=eval_metric,
            eval_at=positions, feature_name=feature_name,
            categorical_feature=categorical_feature, callbacks=callbacks, init_model=init_model, **kwargs,
        )  # fmt: skip
        self.eval_at_ = tuple(int(k) for k in np.atleast_1d(self.booster_.params["eval_at"]))
        return self

    def _default_eval_at(self) -> tuple[int, ...]:
        k = self.objective.k if isinstance(self.objective, RankingObjective) else None
        return _LIGHTGBM_EVAL_AT if k is None else (k,)

    def predict(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        """Predict as ``lightgbm.LGBMRanker.predict``; a DataFrame's ``qid`` column is dropped first."""
        X, _ = pop_qid_column(X)
        return super().predict(X, *args, **kwargs)

    def score(self, X: Any, y: Any, *, qid: Any = None, group: Any = None) -> float:
        """Return LightGBM's NDCG@k over the queries of ``(X, y)``, k the largest ``eval_at`` position.

        With the default ``eval_at`` k is the objective's cut-off. LightGBM's conventions: gain
        :math:`2^r - 1`, ties in row order, a query without relevant documents scores 1. The queries are
        ``qid`` (one id per row), ``group`` (documents per query) or a DataFrame's ``qid`` column; without
        any it raises ``ValueError`` (the whole data as one query would be a meaningless number).
        """
        labels = np.asarray(y, dtype=np.float64).reshape(-1)
        X, offsets = rows_and_queries(X, labels.size, group=group, qid=qid, where="LGBMRanker.score")
        scores = np.asarray(self.predict(X), dtype=np.float64)
        k = max(getattr(self, "eval_at_", _LIGHTGBM_EVAL_AT))
        return float(ndcg(labels, scores, np.diff(offsets), k=k, ties="input", empty="one"))


def _eval_arguments(
    eval_set: Any, eval_X: Any, eval_y: Any, eval_group: Any, eval_qid: Any
) -> dict[str, Any]:
    """Return LightGBM's eval-set arguments with each set's queries checked and turned into sizes.

    ``eval_set=[(X, y), ...]`` (or one ``(X, y)`` tuple) and ``eval_X=``/``eval_y=`` (one array or a tuple of
    them) are both taken, under LightGBM 4.7's rules (:func:`_eval_sets`), and passed on as
    ``eval_X``/``eval_y`` where LightGBM has them (>= 4.7, which deprecates ``eval_set``).
    """
    sets = _eval_sets(eval_set, eval_X, eval_y)
    if sets is None:
        return {}
    sizes: list[Any] = []
    for i, (Xe, ye) in enumerate(sets):
        Xe, s = _query_sizes(
            Xe, _entry(eval_group, i), _entry(eval_qid, i), f"eval_group[{i}]", f"eval_qid[{i}]"
        )
        if s is None:
            raise ValueError(
                f"eval set {i} has no query structure: pass eval_group=[sizes, ...] or eval_qid=[qid, ...] "
                "with one entry per eval set (ranking metrics are per query)."
            )
        sets[i] = (Xe, ye)
        sizes.append(s)
    if not _HAS_EVAL_X:
        return {"eval_set": sets, "eval_group": sizes}
    return {"eval_X": tuple(e[0] for e in sets), "eval_y": tuple(e[1] for e in sets), "eval_group": sizes}


def _eval_sets(eval_set: Any, eval_X: Any, eval_y: Any) -> list[tuple[Any, Any]] | None:
    """Return the eval sets as ``[(X, y), ...]`` or None, by LightGBM 4.7's rules (``_validate_eval_set_Xy``).

    ``eval_set`` is a list of ``(X, y)`` pairs or one such tuple, and excludes ``eval_X``/``eval_y``;
    ``eval_X`` and ``eval_y`` come together, both one array or both tuples of the same length.
    """
    if eval_set is not None:
        if eval_X is not None or eval_y is not None:
            raise ValueError(
                "Pass the eval sets once: either eval_set=[(X, y), ...] or eval_X= and eval_y=, not both "
                "(LightGBM refuses both as well)."
            )
        sets = [eval_set] if isinstance(eval_set, tuple) else list(eval_set)
        for i, pair in enumerate(sets):
            try:
                Xe, ye = pair
            except (TypeError, ValueError):
                what = type(pair).__name__
                raise ValueError(f"eval_set[{i}] must be an (X, y) pair; got {what}.") from None
            sets[i] = (Xe, ye)
        return sets
    if (eval_X is None) != (eval_y is None):
        given, missing = ("eval_X", "eval_y") if eval_y is None else ("eval_y", "eval_X")
        raise ValueError(
            f"{given}= is given without {missing}=: pass both (as LightGBM requires), one array each or "
            "tuples of the same length, one entry per eval set."
        )
    if eval_X is None:
        return None
    if isinstance(eval_X, tuple) != isinstance(eval_y, tuple) or (
        isinstance(eval_X, tuple) and len(eval_X) != len(eval_y)
    ):
        raise ValueError(
            "eval_X and eval_y must both be one array or both tuples of the same length (one entry per eval "
            "set), as LightGBM requires."
        )
    return list(zip(eval_X, eval_y, strict=True)) if isinstance(eval_X, tuple) else [(eval_X, eval_y)]


def _positions(eval_at: int | Sequence[int]) -> tuple[int, ...]:
    """Return ``eval_at`` as a tuple: one position (``eval_at=3``, which LightGBM takes) or a sequence."""
    return (int(eval_at),) if isinstance(eval_at, (int, np.integer)) else tuple(eval_at)


def _entry(values: Sequence[Any] | None, i: int) -> Any:
    """Return ``values[i]``, or None when there is no such entry (one list entry per eval set)."""
    return values[i] if values is not None and i < len(values) else None


def _query_sizes(X: Any, group: Any, qid: Any, group_name: str, qid_name: str) -> tuple[Any, Any]:
    """Return ``(X without a qid column, query sizes or None)`` from ``group``, ``qid`` or the column."""
    X, column = pop_qid_column(X)
    if column is not None:
        if group is not None or qid is not None:
            raise ValueError(
                f"X has a 'qid' column and {group_name}= or {qid_name}= is given as well: pass the query "
                "structure once."
            )
        qid = column
    offsets = query_offsets(
        int(np.shape(X)[0]), group=group, qid=qid, group_name=group_name, qid_name=qid_name
    )
    return X, None if offsets is None else np.diff(offsets)
