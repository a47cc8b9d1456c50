r"""The booster-facing half of every stochrank objective: the booster call, per-dataset runs, SGLB.

A subclass says *what* it optimises: a per-dataset encoding (:meth:`RankingObjective._prepare`, computed
once per training set) and the ascent direction of the metric at the current scores
(:meth:`RankingObjective._ascent`). This class does the rest, the same way for every objective:

* one object works unchanged as ``lgb.train({"objective": obj}, ...)`` / ``lgb.cv`` with query-wise
  ``folds`` (``obj(preds, Dataset)``), ``lightgbm.LGBMRanker(objective=obj)`` (``obj(y_true, y_pred,
  weight, group)``), ``xgb.train(params, dtrain, obj=obj)`` / ``xgb.cv`` (``obj(preds, DMatrix)``),
  ``stochrank.xgboost.XGBRanker(objective=obj)`` and stochrank's own loops (``obj(preds,
  RankingTarget)``), see :mod:`stochrank.protocol`;
* it returns ``(grad, hess)`` for *minimisation*: ``grad = -w_q g`` (plus SGLB noise) and ``hess = w_q``
  with unit Hessians and ``hess = w_q κ h`` with Newton leaves: g the ascent direction, h the subclass's
  curvature (:class:`Ascent`), κ scaling h to mean 1 over the documents that have curvature, and w_q the
  query weight (boosters do not weight custom gradients; weights must be constant within a query, and a
  zero-weight query drops out);
* per-dataset state (:class:`~._run.TrainingRun`: the encoding, the call counter, SGLB shrinkage) lives in
  a cache keyed weakly by the Dataset / DMatrix, which deep copies and pickles drop;
* SGLB: Langevin noise and the shrinkage rescaling F/C_t (see :class:`~.sglb.SGLB`);
* no silent collapse: at the first call of every training run, an ascent direction that is (nearly) zero
  on every query whose metric can change, or a training set in which no query can change its metric,
  raises a :class:`StartWarning` naming the likely cause and fix (the booster would otherwise find no
  split and return a constant model without a word).
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import warnings
from abc import ABC, abstractmethod
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from .._parallel import release_kernel_threads, run_parallel
from ..conventions import every_query_has_one_document
from ..kernels import booster_gradients, langevin_noise, positive_sum_count
from ..protocol import BoosterCall, DatasetCache, DatasetInfo, sum_over_workers
from ..protocol.xgboost import in_distributed_training
from ._run import DatasetRuns, TrainingRun
from .sglb import SGLB

__all__ = ["START_TOLERANCE", "Ascent", "RankingObjective", "StartWarning"]

E = TypeVar("E")  # the per-dataset encoding of a subclass
_FLOAT32_MAX = float(np.finfo(np.float32).max)
FloatArray = npt.NDArray[np.float64]


class Ascent(NamedTuple):
    """The metric's ascent direction at the current scores and, for Newton leaves, its curvature.

    ``curvature`` is a non-negative float64 array (one value per document) or an empty one for unit
    Hessians.
    """

    gradient: npt.NDArray[np.float64]
    curvature: npt.NDArray[np.float64]


UNIT_HESSIAN: npt.NDArray[np.float64] = np.empty(0)

# A first-call gradient below this fraction of the largest query scale (1/IDCG for NDCG) counts as zero.
# Measured at all-zero scores on 100-300-document queries (benchmarks/RESULTS.md, "SoftRank on long
# queries"): exact SoftRank@5 1e-11 of it (a constant model), StochasticRank's CCS 0.05 (it trains); the
# smallest healthy start, sigma = 1e6 with the exact SoftRank of short queries, is about 1e-7.
START_TOLERANCE = 1e-8


class StartWarning(UserWarning):
    """The gradients at the start of a training run are all (nearly) zero: the booster will not learn.

    Raised by every stochrank objective at the first booster call of a run when the largest ascent
    component over the queries whose metric can change is below ``START_TOLERANCE`` (1e-8) times the
    largest query scale (1/IDCG for NDCG), or when no query's metric can change with the order of its
    documents (every query's documents share one label, for instance). Trees fitted to such gradients find
    no split, so the booster returns a constant model. The message names the likely cause and the fix for
    the objective at hand.
    """


class RankingObjective(ABC, Generic[E]):
    """Base class of stochrank's booster objectives: ``obj(preds, data) -> (grad, hess)``.

    ``grad = -w_q g`` (g the subclass's ascent direction of its metric, plus SGLB noise) and ``hess = w_q``
    (unit Hessians) or ``w_q κ h`` (Newton leaves: h the subclass's curvature, κ normalising its mean to
    1), for every booster calling convention (see the module docs). Configuration is read-only; equality,
    hashing, pickling and deep copies use the configuration only (:meth:`_config`), never the caches.
    """

    def __init__(self) -> None:
        self._prepare_lock = threading.Lock()
        self._cache: DatasetCache[DatasetRuns[E]] = DatasetCache()

    # ------------------------------------------------------------------ configuration
    @abstractmethod
    def _config(self) -> tuple[Any, ...]:
        """Return the constructor's arguments, in order: ``type(self)(*self._config())`` is an equal copy."""

    @property
    @abstractmethod
    def metric(self) -> str:
        """Which metric family is optimised, e.g. ``'ndcg'``."""

    @property
    @abstractmethod
    def k(self) -> int | None:
        """The cut-off of the optimised metric (None: the whole list)."""

    @property
    @abstractmethod
    def seed(self) -> int:
        """Seed of the objective's noise streams (Monte-Carlo smoothing and SGLB's Langevin noise)."""

    @property
    @abstractmethod
    def sglb(self) -> SGLB | None:
        """SGLB settings, or None."""

    @abstractmethod
    def with_sglb(self, sglb: SGLB | None) -> RankingObjective[E]:
        """Return a copy of this objective with other SGLB settings."""

    def at_learning_rate(self, learning_rate: float | None, booster: str) -> RankingObjective[E]:
        """Return this objective with SGLB's learning rate set to the booster's ``learning_rate``.

        For the scikit-learn rankers, which know their rate but pass it to no objective: as ``lgb.train``
        does, a rate given in ``SGLB(learning_rate=...)`` must agree with the booster's (``ValueError``
        naming ``booster`` otherwise) and a missing one is filled in. Without SGLB, the objective itself.
        """
        sglb = self.sglb
        if sglb is None:
            return self
        lr = sglb.booster_learning_rate(learning_rate, booster)
        if sglb.learning_rate is not None or lr is None:
            return self
        return self.with_sglb(dataclasses.replace(sglb, learning_rate=lr))

    def parameters(self) -> dict[str, Any]:
        """Return the constructor's parameters by name, e.g. ``{'k': 5, 'sigma': 1.0, ...}`` (a new dict).

        The public constructor takes them back: ``stochrank.<name>(**obj.parameters()) == obj``.
        Deliberately not ``get_params``: scikit-learn would take the objective for a nested estimator and
        try to re-create it through ``get_params`` / ``set_params`` when cloning an estimator.
        """
        out: dict[str, Any] = {}
        for part in self._config():  # SGLB's settings are one argument, not the constructor's own
            if dataclasses.is_dataclass(part) and not isinstance(part, (type, SGLB)):
                out.update((f.name, getattr(part, f.name)) for f in dataclasses.fields(part) if f.init)
        out["sglb"] = self.sglb
        return out

    @property
    def name(self) -> str:
        """Short name such as ``'ndcg@5'`` (the metric to watch while training)."""
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and _same(self._config(), other._config())

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self)))

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self._config()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(*state["config"])  # type: ignore[misc]

    def __deepcopy__(self, memo: dict[int, Any]) -> RankingObjective[E]:
        return type(self)(*copy.deepcopy(self._config(), memo))

    # ------------------------------------------------------------------ subclass hooks
    @abstractmethod
    def _prepare(self, booster_call: BoosterCall[DatasetRuns[E]]) -> E:
        """Everything the ascent needs that stays fixed for one training set (computed once)."""

    @abstractmethod
    def _ascent(self, scores: FloatArray, info: DatasetInfo, encoding: E, call: int) -> Ascent:
        """Return the metric's ascent direction at ``scores`` (no weights, no SGLB) and its curvature.

        ``call`` is the 0-based booster call of the current run.
        """

    def _check_start(self, info: DatasetInfo, preds: FloatArray) -> None:
        """Warn about the booster's starting scores (first call on a dataset); nothing by default."""

    @abstractmethod
    def _gradient_scale(self, encoding: E) -> float:
        """Return the largest per-query scale of the ascent (1/IDCG for NDCG) over queries that can change.

        0 when no query can change.
        """

    @abstractmethod
    def _collapse_hint(self, encoding: E) -> str:
        """Explain why this objective's gradients can vanish at the start, and what to change."""

    def _check_start_gradient(self, ascent: FloatArray, encoding: E, info: DatasetInfo) -> None:
        """Warn (:class:`StartWarning`) when the first call's ascent is (nearly) zero on every query.

        Also when no query can change its metric, except on a worker of a distributed XGBoost training,
        which holds only part of the set (a collective here could fall out of step with the workers' others)
        and on a set whose queries all have one document (:func:`~..conventions.warn_if_nothing_to_rank`
        says so). On ``lightgbm.dask`` a worker judges its own part: LightGBM gives objectives no way to
        tell.
        """
        scale = self._gradient_scale(encoding)
        if scale == 0.0:
            if not (in_distributed_training() or every_query_has_one_document(info.offsets)):
                warnings.warn(
                    f"{self!r}: no query of this training set can change its {self.name} (for instance, "
                    "every document of each query has the same label, or none is relevant), so every "
                    "gradient is zero and the booster will return a constant model. Check the labels and "
                    "the query structure (group / qid) passed with them.",
                    StartWarning,
                    stacklevel=3,
                )
            return
        peak = float(np.max(np.abs(ascent), initial=0.0))
        if not peak >= START_TOLERANCE * scale:
            warnings.warn(
                f"{self!r}: the gradients at the start of training are all (nearly) zero (largest "
                f"|gradient| {peak:.3g}, below {START_TOLERANCE:g} x the largest query scale {scale:.3g}), "
                "so the booster will find no split and return a constant model. "
                f"{self._collapse_hint(encoding)}",
                StartWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ booster call
    def __call__(
        self, a: Any, b: Any, weight: Any = None, group: Any = None
    ) -> tuple[FloatArray, FloatArray]:
        """Return ``(grad, hess)`` for a booster's call.

        The booster calls ``(preds, Dataset | DMatrix | RankingTarget)`` or
        ``(y_true, y_pred, weight, group)``.
        """
        booster_call = self._cache.unpack(a, b, weight, group)
        info, preds = booster_call.info, booster_call.preds
        entry = booster_call.entry
        if entry.state is None:
            with self._prepare_lock:  # two threads meeting a new dataset encode it once
                if entry.state is None:
                    lr = self._sglb_learning_rate(info)
                    entry.state = DatasetRuns.create(lambda: self._prepare(booster_call), lr)
                    self._check_start(info, preds)
        run: TrainingRun[E] = entry.state.for_this_thread()
        sglb = self.sglb
        run.begin_call(preds, sglb)
        call, scale = run.call, run.scale
        ascent, curvature = self._ascent(preds * scale if scale != 1.0 else preds, info, run.encoding, call)
        if call == 0:
            self._check_start_gradient(ascent, run.encoding, info)
        kappa = self._hessian_scale(curvature, info) if curvature.size else 1.0
        weights = info.weights if info.weights is not None else np.ones(info.offsets.size - 1)
        grad = np.empty(preds.size)
        hess = np.empty(preds.size)
        if sglb is not None:
            assert run.learning_rate is not None
            rate = sglb.noise_rate(run.learning_rate)
            noise = run_parallel(langevin_noise, preds.size, info.offsets, info.query_keys, self.seed, call)
        else:
            rate, noise = 0.0, ascent  # any array: multiplied by a zero rate
        peak = run_parallel(
            booster_gradients,
            preds.size,
            ascent,
            curvature,
            kappa,
            info.offsets,
            weights,
            noise,
            rate,
            1.0 / scale,
            grad,
            hess,
        )
        run.call = call + 1
        if not info.library.startswith("lightgbm"):  # LightGBM's OpenMP workers are Numba's own
            release_kernel_threads(preds.size)
        if not peak < _FLOAT32_MAX:  # also NaN and inf
            sglb_fix = "lower the SGLB Langevin noise (a higher temperature), " if sglb is not None else ""
            raise ValueError(
                f"{self!r} produced a gradient or Hessian of {peak:.3g}, which overflows float32 (max "
                "3.4e38), the type LightGBM and XGBoost take gradients in: the model would silently stop "
                f"learning. Scale the query weights down (only their ratios matter), {sglb_fix}or use a "
                "larger sigma (scores many noise scales apart leave curvatures too small to normalise)."
            )
        return grad, hess

    @staticmethod
    def _hessian_scale(curvature: FloatArray, info: DatasetInfo) -> float:
        """Scale Newton Hessians so their mean over the documents with curvature is 1.

        This keeps min_sum_hessian_in_leaf / min_child_weight / lambda in per-document units. The mean is
        over the whole training set, also when workers hold parts of it (XGBoost on Dask adds the
        workers' sums up), so every worker scales its documents alike and a leaf mixing them stays a
        Newton step.
        """
        total, count = sum_over_workers(
            info, np.array(run_parallel(positive_sum_count, curvature.size, curvature, info.offsets))
        )
        with np.errstate(over="ignore", divide="ignore"):  # an underflowed mean: inf, which the guard names
            return 1.0 / (total / count) if count > 0.0 else 1.0

    def _sglb_learning_rate(self, info: DatasetInfo) -> float | None:
        sglb = self.sglb
        if sglb is None:
            return None
        lr = sglb.booster_learning_rate(info.learning_rate)
        if lr is None:
            raise ValueError(
                f"SGLB needs the booster's learning rate, which {info.library} does not pass to objectives. "
                f"Give it explicitly: stochrank.{self._constructor_name()}(..., sglb=stochrank.SGLB(..., "
                "learning_rate=<the same value as the booster's eta / learning_rate>))."
            )
        return lr

    def _constructor_name(self) -> str:
        return self.metric


def _same(a: Any, b: Any) -> bool:
    """Equality of configurations that may hold arrays (compared by value) or fitted models (by identity)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b):
        return _same(*(tuple(getattr(c, f.name) for f in dataclasses.fields(a)) for c in (a, b)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    return bool(a is b or a == b)
