"""The state of one training run of one objective on one dataset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .sglb import SGLB

__all__ = ["TrainingRun"]

E = TypeVar("E")

# Below this SGLB scale the booster's unshrunk model (and the gradients handed to it, divided by the
# scale) would leave float32, which both boosters use for gradients and XGBoost for margins.
MIN_SGLB_SCALE = 1e-25


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
    first_preds : float64 array or None
        The scores of the run's first call.
    moved : bool
        Whether the scores have left ``first_preds`` since.
    """

    encoding: E
    learning_rate: float | None
    call: int = 0
    scale: float = 1.0
    first_preds: npt.NDArray[np.float64] | None = None
    moved: bool = False

    def begin_call(self, preds: npt.NDArray[np.float64], sglb: SGLB | None) -> None:
        """Account for a new booster call with scores ``preds``.

        A call whose scores return to the first call's, after they had moved away, starts a new run
        (XGBoost does not copy the objective between runs): the call counter and SGLB restart, so
        training twice gives the same model. Scores that never moved (trees without splits) are the same
        run going on. With SGLB, the shrinkage of this call is applied to ``scale``.
        """
        at_start = self.first_preds is not None and np.array_equal(preds, self.first_preds)
        if self.first_preds is None or (at_start and self.moved):
            self.first_preds = preds.copy()
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
