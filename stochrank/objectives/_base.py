r"""The booster-facing half of every stochrank objective: configuration, caches and the booster call.

A subclass of :class:`RankingObjective` says *what* it optimises — a per-dataset encoding
(:meth:`RankingObjective._dataset_encoding`, computed once per training set) and the ascent direction of
the metric at the current scores (:meth:`RankingObjective._ascent`). This class does the rest, the same
way for every objective:

* one object works unchanged as ``lgb.train({"objective": obj}, ...)`` / ``lgb.cv`` (``obj(preds,
  Dataset)``), ``lightgbm.LGBMRanker(objective=obj)`` (``obj(y_true, y_pred, weight, group)``),
  ``xgb.train(params, dtrain, obj=obj)`` / ``xgb.cv`` (``obj(preds, DMatrix)``), ``stochrank.xgboost.
  XGBRanker(objective=obj)`` and stochrank's own loops (``obj(preds, RankingTarget)``);
* it returns ``(grad, hess)`` for *minimisation*: ``grad = -w_q g`` (plus SGLB noise) and ``hess = w_q``
  with g the ascent direction and w_q the query weight (boosters do not weight custom gradients; weights
  must be constant within a query, and a zero-weight query drops out);
* per-dataset state (the encoding, the call counter, SGLB shrinkage) lives in a cache keyed weakly by the
  Dataset / DMatrix, which deep copies and pickles drop;
* a call whose predictions return to the first call's on that dataset, after they had moved away, starts
  a new training run (XGBoost does not copy the objective between runs): the call counter (which selects
  the noise streams of Monte-Carlo objectives) and SGLB restart, so training twice gives the same model;
* SGLB (``config['sglb']``): Langevin noise and the shrinkage rescaling F/C_t (see :class:`SGLB`).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._parallel import run_parallel
from .._validation import MAX_EXP_LABEL, check_labels
from ..adapters._dispatch import BoosterCall, DatasetCache, DatasetInfo
from ..kernels import booster_gradients, langevin_noise
from .sglb import SGLB

__all__ = ["RankingObjective"]

# Below this SGLB scale the booster's unshrunk model (and the gradients handed to it, divided by the
# scale) would leave float32, which both boosters use for gradients and XGBoost for margins.
_MIN_SGLB_SCALE = 1e-25


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    return bool(a is b or a == b)


class RankingObjective:
    """Base class of stochrank's booster objectives: ``obj(preds, data) -> (grad, hess)`` with
    ``grad = -w_q g`` (g the subclass's ascent direction of its metric, plus SGLB noise) and ``hess = w_q``,
    for every booster calling convention (see the module docs).

    Subclasses implement ``_dataset_encoding(booster_call)`` and ``_ascent(scores, labels, offsets,
    encoding, call)``. Attributes are read-only configuration (``obj.k``, ``obj.sigma``, …).
    """

    _constructor: str | None = None  # public constructor name for repr, when it is not the metric's

    def __init__(self, metric: str, **config: Any) -> None:
        self._metric = metric
        self._config = dict(config)
        self._cache = DatasetCache()

    # ------------------------------------------------------------------ configuration
    @property
    def metric(self) -> str:
        """Which metric is optimised, e.g. 'ndcg'."""
        return self._metric

    @property
    def config(self) -> dict[str, Any]:
        """The constructor's keyword arguments (a copy).

        Deliberately not ``get_params``: scikit-learn would take the objective for a nested estimator
        and try to re-create it through ``get_params`` / ``set_params`` when cloning an estimator.
        """
        return dict(self._config)

    def __getattr__(self, name: str) -> Any:
        config = self.__dict__.get("_config", {})
        if name in config:
            return config[name]
        raise AttributeError(name)

    @property
    def name(self) -> str:
        """Short name such as ``'ndcg@5'`` (the metric to watch while training)."""
        k = self._config.get("k")
        return self._metric if k is None else f"{self._metric}@{k}"

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._config.items())
        return f"stochrank.{self._constructor or self._metric}({args})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other._metric == self._metric  # type: ignore[attr-defined]
            and other._config.keys() == self._config.keys()  # type: ignore[attr-defined]
            and all(_same_value(v, other._config[key]) for key, v in self._config.items())  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._metric, repr(self._config)))

    def __getstate__(self) -> dict[str, Any]:
        return {"metric": self._metric, "config": self._config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["metric"], **state["config"])  # type: ignore[misc]

    def __deepcopy__(self, memo: dict[int, Any]) -> RankingObjective:
        return type(self)(self._metric, **copy.deepcopy(self._config, memo))

    # ------------------------------------------------------------------ subclass hooks
    def _dataset_encoding(self, booster_call: BoosterCall) -> Any:
        """Everything the ascent needs that stays fixed for one training set (computed once)."""
        raise NotImplementedError

    def _ascent(
        self, scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, encoding: Any, call: int
    ) -> np.ndarray:
        """Ascent direction of the metric at ``scores`` (without weights or SGLB); ``call`` is the
        0-based booster call of the current run."""
        raise NotImplementedError

    def _gains(self, labels: np.ndarray) -> np.ndarray:
        """Gains of the labels under ``config['gain']``: 'exp' is 2**label - 1, 'linear' the label."""
        owner = f"stochrank.{self._constructor or self._metric}"
        if self._config["gain"] == "exp":
            check_labels(
                labels, None, owner, low=0.0, high=MAX_EXP_LABEL,
                hint="gain='exp' uses 2**label - 1; use gain='linear' for large or real-valued relevance.",
            )  # fmt: skip
            return np.exp2(labels) - 1.0
        return check_labels(labels, None, owner, low=0.0).copy()

    def _check_start(self, info: DatasetInfo, preds: np.ndarray) -> None:
        """Warn about the booster's starting scores (first call on a dataset); nothing by default."""

    # ------------------------------------------------------------------ booster call
    def __call__(
        self, a: Any, b: Any, weight: Any = None, group: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Booster entry point: ``(preds, Dataset | DMatrix | RankingTarget)`` or
        ``(y_true, y_pred, weight, group)``."""
        booster_call = self._cache.unpack(a, b, weight, group)
        info, preds = booster_call.info, booster_call.preds
        state = info.state
        if "encoding" not in state:
            state["encoding"] = self._dataset_encoding(booster_call)
            state["lr"] = self._sglb_learning_rate(info)
            self._check_start(info, preds)
        at_start = "first_preds" in state and np.array_equal(preds, state["first_preds"])
        if "first_preds" not in state or (at_start and state["moved"]):
            # A (new) training run starts from these scores: restart the noise streams and SGLB.
            # (Scores that never moved, e.g. trees without splits, are the same run going on.)
            state["first_preds"] = preds.copy()
            state["call"] = 0
            state["scale"] = 1.0
            at_start = True
        state["moved"] = not at_start
        call = state["call"]
        sglb: SGLB | None = self._config.get("sglb")
        if sglb is not None:
            state["scale"] *= sglb.shrink(call, state["lr"])
            if state["scale"] < _MIN_SGLB_SCALE:
                raise ValueError(
                    f"SGLB shrinkage has scaled the model by {state['scale']:.3g} after {call} iterations. "
                    "LightGBM and XGBoost keep the unshrunk model F/C_t, whose gradients and scores would now "
                    "overflow float32. Use fewer iterations, a smaller shrink_rate (rate * learning_rate * "
                    "iterations must stay below ~57), or shrink_mode='decreasing'."
                )
        scale = state["scale"]
        ascent = self._ascent(
            preds * scale if scale != 1.0 else preds, info.labels, info.offsets, state["encoding"], call
        )
        weights = info.weights if info.weights is not None else np.ones(info.offsets.size - 1)
        grad = np.empty(preds.size)
        hess = np.empty(preds.size)
        if sglb is not None:
            rate = sglb.noise_rate(state["lr"])
            noise = run_parallel(langevin_noise, preds.size, info.offsets, self._config["seed"], call)
        else:
            rate, noise = 0.0, ascent  # any array: multiplied by a zero rate
        run_parallel(
            booster_gradients, preds.size, ascent, info.offsets, weights, noise, rate, 1.0 / scale, grad, hess
        )
        state["call"] = call + 1
        return grad, hess

    def _sglb_learning_rate(self, info: DatasetInfo) -> float | None:
        sglb: SGLB | None = self._config.get("sglb")
        if sglb is None:
            return None
        lr = sglb.booster_learning_rate(info.learning_rate)
        if lr is None:
            raise ValueError(
                f"SGLB needs the booster's learning rate, which {info.library} does not pass to objectives. "
                f"Give it explicitly: stochrank.{self._constructor or self._metric}(..., sglb=stochrank.SGLB(..., "
                "learning_rate=<the same value as the booster's eta / learning_rate>))."
            )
        return lr


# ---------------------------------------------------------------------- constructor machinery
def strict_kwargs(
    func: Callable[..., RankingObjective], renamed: Mapping[str, str] | None = None
) -> Callable[..., RankingObjective]:
    """Reject unknown keyword arguments with a suggestion (CatBoost silently ignores typos).

    ``renamed`` maps names people bring from elsewhere (CatBoost's loss string) to the parameter to use.
    """
    valid = set(inspect.signature(func).parameters)
    renamed = renamed or {}

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> RankingObjective:
        unknown = sorted(set(kwargs) - valid)
        if unknown:
            hints = [f"'{u}' (use '{renamed[u]}')" if renamed.get(u) in valid else f"'{u}'" for u in unknown]
            raise TypeError(
                f"stochrank.{func.__name__}() got unknown parameter(s) {', '.join(hints)}. "
                f"Valid parameters: {', '.join(sorted(valid))}."
            )
        return func(*args, **kwargs)

    return wrapper


def documented(
    common_doc: str, renamed: Mapping[str, str] | None = None
) -> Callable[[Callable[..., RankingObjective]], Callable[..., RankingObjective]]:
    """Decorator for constructors: put ``common_doc`` in place of ``    {common}`` in the docstring and
    make the keyword arguments strict (:func:`strict_kwargs`)."""

    def decorate(func: Callable[..., RankingObjective]) -> Callable[..., RankingObjective]:
        if func.__doc__:
            func.__doc__ = func.__doc__.replace("    {common}", common_doc.strip("\n"))
        return strict_kwargs(func, renamed)

    return decorate
