"""Run a ``parallel=True`` kernel safely and cheaply whatever Numba threading layer is active.

Boosters call objectives from the thread that called ``train``/``fit`` and release the GIL while
they build trees, so two fits in two Python threads can call kernels at the same time. Numba's
``omp`` and ``tbb`` layers handle that; its ``workqueue`` fallback (used when neither is available)
aborts the whole process on concurrent entry ("Concurrent access has been detected"). Under
``workqueue`` (or before the layer is known) kernel launches are serialised by one lock.

Small inputs run on the calling thread alone: below a few ten thousand documents a parallel launch
costs more than the work, and on a loaded machine (or right after a booster's OpenMP threads, which
spin for a while) it can wait milliseconds for a free core.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numba
from numba.np.ufunc import threading_layer as _numba_threading_layer

_P = ParamSpec("_P")
_R = TypeVar("_R")

_LOCK = threading.Lock()
_layer: str | None = None
PARALLEL_MIN_ROWS = 20_000


def threading_layer() -> str | None:
    """Return the Numba threading layer once a parallel kernel has run, else None."""
    global _layer
    if _layer is None:
        try:
            _layer = _numba_threading_layer()
        except ValueError:  # no parallel kernel has run in this process yet
            return None
    return _layer


def run_parallel(kernel: Callable[_P, _R], n_rows: int, *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """Call ``kernel(*args, **kwargs)`` over ``n_rows`` documents: one thread when small, locked if unsafe."""
    if n_rows < PARALLEL_MIN_ROWS:
        previous = numba.get_num_threads()  # thread-local in Numba: other threads are unaffected
        numba.set_num_threads(1)
        try:
            return _launch(kernel, *args, **kwargs)
        finally:
            numba.set_num_threads(previous)
    return _launch(kernel, *args, **kwargs)


def _launch(kernel: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    if threading_layer() in ("omp", "tbb"):
        return kernel(*args, **kwargs)
    with _LOCK:
        return kernel(*args, **kwargs)
