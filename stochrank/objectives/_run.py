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


def _constant(preds: npt.NDArray[np.float64]) -> bool:
    """Whether every score is the same, as at a booster's start."""
    return preds.size == 0 or bool((preds == preds[0]).all())


@dataclass(frozen=True)
class StartScores:
    """The scores a run starts from, as far as a later call can recognise them.

    Every constant is a start: boosters start from one (XGBoost's base_score, whatever its value;
    LightGBM's zero), and scores that have moved return to a constant only when XGBoost's DART drops every
    tree (read as a new run: train DART with a fresh objective per run). Non-constant scores (an
    init_score / base_margin) count as a start when they equal the latest such start, kept as a copy.
    """

    scores: npt.NDArray[np.float64] | None = None  # the latest non-constant start

    def matches(self, preds: npt.NDArray[np.float64]) -> bool:
        """Whether ``preds`` look like the start of a run."""
        return _constant(preds) or (self.scores is not None and np.array_equal(preds, self.scores))

    def including(self, preds: npt.NDArray[np.float64]) -> StartScores:
        """Return the starts recognised after a run has started from ``preds``."""
        return self if _constant(preds) else StartScores(preds.copy())


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
    starts : StartScores
        What the start of a run looks like: a constant, or the latest non-constant start.
    started : bool
        Whether a run has begun (a call was seen).
    moved : bool
        Whether the previous call's scores had left the start.
    """

    encoding: E
    learning_rate: float | None
    call: int = 0
    scale: float = 1.0
    starts: StartScores = field(default_factory=StartScores)
    started: bool = False
    moved: bool = False

    def begin_call(self, preds: npt.NDArray[np.float64], sglb: SGLB | None) -> None:
        """Account for a new booster call with scores ``preds``.

        A call whose scores are back at a start (:class:`StartScores`: any constant, e.g. another
        base_score, or the latest non-constant start), after they had moved away, starts a new run
        (XGBoost does not copy the objective between runs): the call counter and SGLB restart, so
        training twice gives the same model. Scores that never moved (trees without splits) are the same
        run going on, so a run that never left its start (one round, or trees without splits) merges with
        the next one; and so is a run from other non-constant scores: right when it continues the
        previous run's model (``xgb_model=``), wrong for a new run from a *new* non-constant base_margin
        on the same DMatrix, which the scores cannot tell apart (use a fresh objective or DMatrix there).
        With SGLB, the shrinkage of this call is applied to ``scale``.
        """
        at_start = self.starts.matches(preds)
        if not self.started or (at_start and self.moved):
            self.starts = self.starts.including(preds)
            self.started = True
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
