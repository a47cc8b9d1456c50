"""The state of one training run of one objective on one dataset."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .sglb import SGLB

__all__ = ["DatasetRuns", "StartScores", "TrainingRun"]

E = TypeVar("E")

# Below this SGLB scale the booster's unshrunk model (and the gradients handed to it, divided by the
# scale) would leave float32, which both boosters use for gradients and XGBoost for margins.
MIN_SGLB_SCALE = 1e-25


@dataclass(frozen=True)
class StartScores:
    """The scores of a run's first call, kept as one number when they are constant.

    Boosters start from a constant (XGBoost's base_score, LightGBM's boost_from_average or zero), so the
    usual snapshot costs nothing per document; scores from an init_score / base_margin are copied.
    """

    size: int
    value: float
    scores: npt.NDArray[np.float64] | None  # None: every score equals ``value``

    @classmethod
    def of(cls, preds: npt.NDArray[np.float64]) -> StartScores:
        """Snapshot ``preds``."""
        if preds.size == 0 or (preds == preds[0]).all():
            return cls(preds.size, float(preds[0]) if preds.size else 0.0, None)
        return cls(preds.size, 0.0, preds.copy())

    def matches(self, preds: npt.NDArray[np.float64]) -> bool:
        """Whether ``preds`` equal the snapshot element by element."""
        if self.scores is not None:
            return np.array_equal(preds, self.scores)
        return preds.size == self.size and bool((preds == self.value).all())


@dataclass
class TrainingRun(Generic[E]):
    """Per-dataset state of an objective across the booster's calls.

    Attributes
    ----------
    encoding : E
        What the objective computed once from the dataset's labels (kernel inputs).
    learning_rate : float or None
        The booster's step, which SGLB's noise and shrinkage use (None without SGLB).
    call : int
        0-based index of the next call in the current run; selects the noise streams.
    scale : float
        SGLB's shrinkage C_t: the booster holds F / C_t.
    first_preds : StartScores or None
        The scores of the run's first call.
    moved : bool
        Whether the scores have left ``first_preds`` since.
    """

    encoding: E
    learning_rate: float | None
    call: int = 0
    scale: float = 1.0
    first_preds: StartScores | None = None
    moved: bool = False

    def begin_call(self, preds: npt.NDArray[np.float64], sglb: SGLB | None) -> None:
        """Account for a new booster call with scores ``preds``.

        A call whose scores return to the first call's, after they had moved away, starts a new run
        (XGBoost does not copy the objective between runs): the call counter and SGLB restart, so
        training twice gives the same model. Scores that never moved (trees without splits) are the same
        run going on. With SGLB, the shrinkage of this call is applied to ``scale``.
        """
        at_start = self.first_preds is not None and self.first_preds.matches(preds)
        if self.first_preds is None or (at_start and self.moved):
            self.first_preds = StartScores.of(preds)
            self.call = 0
            self.scale = 1.0
            at_start = True
        self.moved = not at_start
        if sglb is None:
            return
        assert self.learning_rate is not None  # set with SGLB when the run state is created
        self.scale *= sglb.shrink(self.call, self.learning_rate)
        if self.scale < MIN_SGLB_SCALE:
            raise ValueError(
                f"SGLB shrinkage has scaled the model by {self.scale:.3g} after {self.call} iterations. "
                "LightGBM and XGBoost keep the unshrunk model F/C_t, whose gradients and scores would now "
                "overflow float32. Use fewer iterations, a smaller shrink_rate (rate * learning_rate * "
                "iterations must stay below ~57), or shrink_mode='decreasing'."
            )


@dataclass
class DatasetRuns(Generic[E]):
    """An objective's state for one dataset: the encoding (computed once) and one run per thread.

    Two fits that share one objective object and one dataset in two threads (threaded hyperparameter
    searches do this with XGBoost, which does not copy the objective) are two training runs: each thread
    keeps its own call counter, restart detection and SGLB scale, so concurrent runs give the same models
    as sequential ones.
    """

    encoding: E
    learning_rate: float | None
    _runs: dict[int, TrainingRun[E]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def create(cls, make_encoding: Callable[[], E], learning_rate: float | None) -> DatasetRuns[E]:
        """Create the state of a dataset seen for the first time."""
        return cls(make_encoding(), learning_rate)

    def for_this_thread(self) -> TrainingRun[E]:
        """Return the calling thread's run (a new one on its first call).

        A thread id can be reused after its thread ends; the run it finds then restarts by itself when the
        new fit's scores return to the start (:meth:`TrainingRun.begin_call`).
        """
        ident = threading.get_ident()
        with self._lock:
            run = self._runs.get(ident)
            if run is None:
                run = self._runs[ident] = TrainingRun(self.encoding, self.learning_rate)
            return run
