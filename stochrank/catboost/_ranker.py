"""The :class:`CatBoostRanker` estimator: parameters, engine choice, fit, predict and score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._validation import check_choice, check_int
from ..conventions import pop_qid_column, rows_and_queries, warn_if_nothing_to_rank
from ..metrics import BoosterMetric
from ..objectives._docs import check_not_constructor
from ._data import _RankingData, checked_features, checked_labels, eval_data
from ._engine import MAXIMISED_METRICS, UNSUPPORTED_PARAMS, Fitted, StochrankEngine, fit_native
from ._native import (
    OWNED_PARAMS,
    NoCatBoostEquivalent,
    _default_eval_metric,
    native_crash,
    objective_settings,
    translate,
)

__all__ = ["CatBoostRanker"]

# CatBoost's defaults for a StochasticRank model (1.2.10): used by the stochrank engine too, so that both
# engines boost with the same step and number of trees unless told otherwise.
_DEFAULT_LEARNING_RATE = 0.03
_DEFAULT_ITERATIONS = 1000

# Parameter aliases CatBoost accepts for the settings this package reads, canonical name first.
_ALIASES = {
    "iterations": ("iterations", "n_estimators", "num_boost_round", "num_trees"),
    "learning_rate": ("learning_rate", "eta"),
    "random_seed": ("random_seed", "random_state"),
    "thread_count": ("thread_count", "n_jobs"),
    "early_stopping_rounds": ("early_stopping_rounds",),
    "use_best_model": ("use_best_model",),
    "eval_metric": ("eval_metric",),
    "verbose": ("verbose", "verbose_eval"),
}


class CatBoostRanker(BaseEstimator):  # type: ignore[misc]  # scikit-learn ships no type information
    r"""CatBoost ranker trained with a stochrank objective: the same object as ``lightgbm.LGBMRanker``'s.

    A scikit-learn estimator: ``get_params`` / ``set_params`` / ``clone`` cover ``objective``, ``engine``
    and the CatBoost parameters, and it works in ``GridSearchCV`` & co. with the query ids routed to
    ``fit(group_id=...)`` (see the README's "Model selection").

    Parameters
    ----------
    objective : stochrank objective
        A stochrank objective (``stochrank.ndcg(k=5)``, ``stochrank.softrank(k=10)``, ...) or any callable
        with stochrank's protocol ``grad, hess = objective(preds, RankingTarget)`` (gradients for
        minimisation).
    engine : {'auto', 'native', 'stochrank'}, default 'auto'
        ``'native'``: CatBoost's built-in ``StochasticRank`` loss (:func:`native_loss`; SGLB as
        ``langevin`` etc.). ``'stochrank'``: stochrank's gradients, one CatBoost tree per iteration
        (see the package docs). ``'auto'``: native when CatBoost has the objective (warning with
        :class:`CatBoostDeviationWarning` where CatBoost is documented to differ), stochrank otherwise
        and for ``mrr(k=K)``, on which CatBoost 1.2.10 crashes (``'native'`` refuses it).
    **catboost_params
        CatBoost training parameters (``iterations``, ``learning_rate``, ``depth``, ``l2_leaf_reg``,
        ``random_strength``, ``bootstrap_type``, ``border_count``, ``thread_count``, ``eval_metric``,
        ``early_stopping_rounds``, ...), passed to CatBoost unchanged; CatBoost rejects unknown names.
        Refused: the loss and SGLB settings (they come from the objective) and, for the stochrank
        engine, settings that need CatBoost's own loss (ordered boosting, categorical features, ...).
        Defaults as CatBoost's for StochasticRank (``learning_rate=0.03``, ``iterations=1000``, depth 6,
        ``l2_leaf_reg=3``, MVS bootstrap) except ``verbose=False`` and ``allow_writing_files=False``.
        ``random_seed`` defaults to the objective's ``seed`` (for the native engine it seeds CatBoost's
        own Monte-Carlo draws, which are not stochrank's; for the stochrank engine tree t uses
        ``random_seed + t`` for its bootstrap and split randomness). ``eval_metric`` defaults to the
        CatBoost metric of the objective (``NDCG:top=5;type=Exp;denominator=LogPosition`` for
        ``stochrank.ndcg(k=5)``; NDCG with the objective's k, gain and discount for ``softrank``), none for
        ``err`` / ``pfound`` with ``max_grade`` (give one with an eval set); the stochrank engine evaluates
        it with ``catboost.utils.eval_metric`` and accepts only ranking metrics (it maximises).
        ``verbose=True`` (or n) makes the stochrank engine print the eval metric every (n-th) iteration.

    Attributes
    ----------
    model_ : catboost.CatBoost
        The trained model: an ordinary CatBoost model (``save_model``, ``load_model``, ``predict``).
    engine_ : str
        The engine used, 'native' or 'stochrank'.
    n_features_in_ : int
        Features seen in ``fit`` (a DataFrame's ``qid`` column excluded); ``feature_names_in_`` too for a
        DataFrame.
    loss_function_ : str or None
        The CatBoost loss string of the native engine.
    catboost_params_ : dict
        The parameters CatBoost trained with (stochrank engine: those of every tree).
    best_iteration_ : int or None
        0-based best iteration on the eval set (None without one).
    evals_result_ : dict
        ``{'validation': {eval_metric: [...]}}`` per iteration (native: CatBoost's own record).
    timing_ : dict
        Stochrank engine: seconds spent in the objective, fitting trees and predicting, and the number
        of iterations run.

    Notes
    -----
    Where the engines differ beyond Monte-Carlo noise (measured in ``benchmarks/catboost_parity.py``):
    CatBoost draws separate noise for the split search and for the leaf values of a tree (and separate
    Langevin noise for both), stochrank one draw per iteration; ERR, MRR@k and sigma != 1 are different
    gradients (:func:`native_loss`); CatBoost ignores query weights in StochasticRank's derivatives and
    uses them only in leaf denominators, stochrank weights gradients and Hessians.

    Examples
    --------
    >>> ranker = CatBoostRanker(stochrank.ndcg(k=5), iterations=500, learning_rate=0.1)  # doctest: +SKIP
    >>> ranker.fit(X, y, group_id=qid, eval_set=(Xv, yv), eval_group_id=qv,  # doctest: +SKIP
    ...            early_stopping_rounds=50)
    >>> ranker.model_.save_model("ranker.cbm")  # doctest: +SKIP
    """

    def __init__(self, objective: Any, *, engine: str = "auto", **catboost_params: Any) -> None:
        self.objective = objective
        self.engine = engine
        self._catboost_params = dict(catboost_params)

    # ------------------------------------------------------------------------- scikit-learn protocol
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Return the constructor arguments, as given (``objective``, ``engine``, the CatBoost parameters)."""
        return {"objective": self.objective, "engine": self.engine, **self._catboost_params}

    def set_params(self, **params: Any) -> CatBoostRanker:
        """Set ``objective``, ``engine`` or CatBoost parameters (scikit-learn's protocol); return self."""
        for key, value in params.items():
            if key in ("objective", "engine"):
                setattr(self, key, value)
            else:
                self._catboost_params[key] = value
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_params().items())
        return f"CatBoostRanker({args})"

    # ---------------------------------------------------------------------------------- parameters
    def _resolved_engine(self) -> str:
        engine = check_choice(self.engine, "engine", "CatBoostRanker", ("auto", "native", "stochrank"))
        if isinstance(self.objective, BoosterMetric):
            raise TypeError(
                f"CatBoostRanker's objective got {self.objective!r}, an evaluation metric "
                "(stochrank.metrics.feval), not an objective: pass an objective such as "
                "stochrank.ndcg(k=5). To watch a metric, pass a CatBoost metric string as eval_metric, e.g. "
                "eval_metric='NDCG:top=5'."
            )
        check_not_constructor(self.objective)
        if isinstance(self.objective, str) or not callable(self.objective):
            raise TypeError(
                f"CatBoostRanker's objective must be a stochrank objective such as stochrank.ndcg(k=5) (or a "
                f"callable objective(preds, RankingTarget) -> (grad, hess)); got {self.objective!r}. For "
                "CatBoost's own losses use catboost.CatBoostRanker(loss_function=...)."
            )
        crash = native_crash(self.objective)
        if engine == "native" and crash:
            raise ValueError(crash + " Use engine='stochrank' (or 'auto', which does so).")
        if engine != "auto":
            return engine
        try:
            translate(self.objective)
        except NoCatBoostEquivalent:
            return "stochrank"
        return "stochrank" if crash else "native"

    def _params(self, engine: str) -> dict[str, Any]:
        """Return CatBoost parameters with canonical names, checked against what objective and engine own."""
        params: dict[str, Any] = {}
        given = dict(self._catboost_params)
        for canonical, names in _ALIASES.items():
            present = [name for name in names if name in given]
            if len(present) > 1:
                raise ValueError(f"CatBoostRanker got both {present[0]!r} and {present[1]!r}; pass only one.")
            if present:
                params[canonical] = given.pop(present[0])
        for key, value in given.items():
            if key in OWNED_PARAMS:
                raise ValueError(f"CatBoostRanker does not take {key!r}: {OWNED_PARAMS[key]}.")
            if engine == "stochrank" and key in UNSUPPORTED_PARAMS:
                if (key, value) in (("boosting_type", "Plain"), ("task_type", "CPU")):
                    continue
                raise ValueError(
                    f"CatBoostRanker(engine='stochrank') does not support {key!r}: {UNSUPPORTED_PARAMS[key]}."
                )
        params.update(given)
        params.setdefault("learning_rate", _DEFAULT_LEARNING_RATE)
        params.setdefault("iterations", _DEFAULT_ITERATIONS)
        check_int(params["iterations"], "iterations", "CatBoostRanker", low=1)
        lr = float(params["learning_rate"])
        if not lr > 0.0 or not math.isfinite(lr):
            raise ValueError(
                f"CatBoostRanker needs a finite learning_rate > 0; got {params['learning_rate']!r}."
            )
        settings = objective_settings(self.objective)
        if "random_seed" not in params:
            params["random_seed"] = 0 if settings.seed is None else settings.seed
        elif settings.seed not in (None, 0) and params["random_seed"] != settings.seed:
            raise ValueError(
                f"The objective's seed={settings.seed} and CatBoostRanker's "
                f"random_seed={params['random_seed']} disagree. random_seed defaults to the objective's "
                "seed: pass only one of them."
            )
        check_int(params["random_seed"], "random_seed", "CatBoostRanker", low=0)
        if settings.sglb is not None:
            settings.sglb.booster_learning_rate(lr, "CatBoostRanker")
        if "verbose" not in params and "logging_level" not in params and "silent" not in params:
            params["verbose"] = False
        params.setdefault("allow_writing_files", False)
        if "eval_metric" not in params:
            params["eval_metric"] = _default_eval_metric(self.objective)
            if (
                params["eval_metric"] is None
            ):  # err / pfound with max_grade, auc: checked in fit with an eval set
                return params
        elif not isinstance(params["eval_metric"], str):
            raise TypeError(
                f"CatBoostRanker's eval_metric must be a CatBoost metric string such as 'NDCG:top=5'; got "
                f"{params['eval_metric']!r}."
            )
        if engine == "stochrank" and params["eval_metric"].split(":")[0] not in MAXIMISED_METRICS:
            raise ValueError(
                "CatBoostRanker(engine='stochrank') early-stops by maximising eval_metric, so it must be "
                f"one of {sorted(MAXIMISED_METRICS)}; got {params['eval_metric']!r}."
            )
        return params

    # ------------------------------------------------------------------------------------------- fit
    def fit(
        self,
        X: Any,
        y: Any = None,
        *,
        group_id: Any = None,
        group: Any = None,
        sample_weight: Any = None,
        eval_set: Any = None,
        eval_group_id: Sequence[Any] | Any = None,
        eval_group: Sequence[Any] | Any = None,
        early_stopping_rounds: int | None = None,
    ) -> CatBoostRanker:
        """Train on ``X`` (array-like with ``y`` and ``group_id`` or ``group``, or a ``catboost.Pool``).

        Parameters
        ----------
        X : array-like of shape (n_documents, n_features) or catboost.Pool
            The features, or a Pool with labels, ``group_id``, optionally weights and a start ``baseline``.
        y : array-like of shape (n_documents,)
            The relevance labels (not with a Pool).
        group_id : array-like of shape (n_documents,)
            One query id per row (CatBoost style; a query's rows contiguous).
        group : array-like of int
            Documents per query in row order (LightGBM style), instead of ``group_id``.
        sample_weight : array-like
            Query weights: one per query, or one per row constant within each query. Not with a Pool:
            its own ``weight`` or ``group_weight`` are the query weights then.
        eval_set : (X, y) tuple or catboost.Pool, or a list holding one of them
            The data for ``eval_metric`` and early stopping (with ``eval_group_id`` / ``eval_group``).
        eval_group_id, eval_group : array-like, or a list holding one
            The eval set's query structure, as ``group_id`` / ``group``.
        early_stopping_rounds : int
            Stop when ``eval_metric`` has not improved for this many iterations; the model keeps the
            best iteration (``use_best_model=True``, CatBoost's default with an eval set).

        Returns
        -------
        CatBoostRanker
            self, fitted.

        Raises
        ------
        ValueError, TypeError
            For settings the objective owns or the engine cannot honour, and for inconsistent data.
        """
        engine = self._resolved_engine()
        params = self._params(engine)
        if early_stopping_rounds is not None:
            params["early_stopping_rounds"] = early_stopping_rounds
        if params.get("early_stopping_rounds") is not None:
            check_int(params["early_stopping_rounds"], "early_stopping_rounds", "CatBoostRanker.fit", low=1)
        train = _RankingData.of(X, y, group_id, group, sample_weight, "X")
        valid = eval_data(eval_set, eval_group_id, eval_group)
        if params.get("early_stopping_rounds") is not None and valid is None:
            raise ValueError("early_stopping_rounds needs an eval_set to watch.")
        if valid is not None and params["eval_metric"] is None:
            raise ValueError(
                f"{self.objective!r} has no default eval_metric: no CatBoost metric string scores it (ERR "
                "and PFound read the labels as probabilities in [0, 1] and cannot map grades to (2^r - 1)/"
                "2^max_grade; QueryAUC counts every pair of different grades, not label > threshold). Pass "
                "eval_metric= explicitly, e.g. CatBoostRanker(..., eval_metric='NDCG:top=5'), or "
                "'QueryAUC:type=Ranking' on 0/1 labels."
            )
        self.engine_ = engine
        categorical = "cat_features" in self._catboost_params
        if train.features is None:
            self.n_features_in_ = train.pool.num_col()
        else:
            train.features = checked_features(self, train.features, reset=True, categorical=categorical)
        if valid is not None and valid.features is not None:
            valid.features = checked_features(self, valid.features, reset=False, categorical=categorical)
        if engine == "native":  # the stochrank engine's objective call warns (stochrank.protocol)
            warn_if_nothing_to_rank(train.offsets, "training set", stacklevel=2)
            fitted = fit_native(self.objective, train, valid, params)
        else:
            sglb = objective_settings(self.objective).sglb
            fitted = StochrankEngine(self.objective, sglb).fit(train, valid, params)
        self._store(fitted)
        return self

    def _store(self, fitted: Fitted) -> None:
        self.model_ = fitted.model
        self.loss_function_ = fitted.loss_function
        self.catboost_params_ = fitted.catboost_params
        self.best_iteration_ = fitted.best_iteration
        self.evals_result_ = fitted.evals_result
        self.timing_ = fitted.timing

    # ------------------------------------------------------------------------------------ prediction
    def _fitted(self) -> Any:
        if not hasattr(self, "model_"):  # NotFittedError is a ValueError
            raise NotFittedError("This CatBoostRanker is not fitted yet: call fit(X, y, group_id=...) first.")
        return self.model_

    def __sklearn_tags__(self) -> Any:
        """Return scikit-learn's tags: CatBoost takes NaN features (as missing) and scipy.sparse matrices."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    @property
    def tree_count_(self) -> int:
        """Trees in the fitted model (after early stopping: the best iteration + 1)."""
        return int(self._fitted().tree_count_)

    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Return ranking scores (CatBoost's ``RawFormulaVal``) for an array-like or a ``catboost.Pool``.

        A DataFrame's ``qid`` column is dropped (the query structure); a Pool's ``baseline`` is added.
        """
        from catboost import Pool

        model = self._fitted()
        X, _ = pop_qid_column(X)
        if isinstance(X, Pool):
            if X.num_col() != self.n_features_in_:
                raise ValueError(
                    f"X has {X.num_col()} features, but CatBoostRanker is expecting {self.n_features_in_} "
                    "features as input."
                )
        else:
            X = checked_features(self, X, reset=False, categorical="cat_features" in self._catboost_params)
        return np.asarray(model.predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)

    def score(self, X: Any, y: Any = None, *, group_id: Any = None, group: Any = None) -> float:
        """Return the mean NDCG@k over queries, k the objective's cut-off (None: whole list).

        The queries are ``group_id`` (one id per row), ``group`` (documents per query), a DataFrame's
        ``qid`` column or a Pool's group_id; without any it raises ``ValueError`` (the whole data as one
        query would be a meaningless number). CatBoost's conventions (those of
        ``catboost.CatBoostRanker.score``): worst-case ties, a query without relevant documents scores 1;
        gain and discount the objective's for NDCG/DCG/lso, else exponential gain and log discount.
        """
        from catboost import Pool

        from ..metrics import ndcg

        if isinstance(X, Pool):
            data = _RankingData.of(X, y, group_id, group, None, "X", read_weights=False)
            labels, sizes = data.labels, data.sizes
        elif y is None:
            raise ValueError("CatBoostRanker.score needs the labels: score(X, y, group_id=...).")
        else:
            labels = checked_labels(X, y, "X")  # one label per row, before the queries count rows
            where = "CatBoostRanker.score"
            X, offsets = rows_and_queries(
                X, labels.size, group=group, qid=group_id, where=where, qid_name="group_id"
            )
            sizes = np.diff(offsets)
        scores = self.predict(X)
        s = objective_settings(self.objective)
        return float(
            ndcg(
                labels,
                scores,
                sizes,
                k=s.k,
                gain=s.gain,
                discount=s.discount,
                ties="worst",
                empty="one",
            )
        )
