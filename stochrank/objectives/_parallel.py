"""Run a ``parallel=True`` kernel safely whatever Numba threading layer is active.

Boosters call objectives from the thread that called ``train``/``fit`` and release the GIL while
they build trees, so two fits in two Python threads can call kernels at the same time. Numba's
``omp`` and ``tbb`` layers handle that; its ``workqueue`` fallback (used when neither is available)
aborts the whole process on concurrent entry ("Concurrent access has been detected"). Under
``workqueue`` (or before the layer is known) kernel launches are serialised by one lock.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numba

_LOCK = threading.Lock()
_layer: str | None = None


def threading_layer() -> str | None:
    """The Numba threading layer once a parallel kernel has run, else None."""
    global _layer
    if _layer is None:
        try:
            _layer = numba.threading_layer()
        except ValueError:  # no parallel kernel has run in this process yet
            return None
    return _layer


def run_parallel(kernel: Callable[..., Any], *args: Any) -> Any:
    """Call ``kernel(*args)``, holding a process-wide lock when the layer is not thread safe."""
    if threading_layer() in ("omp", "tbb"):
        return kernel(*args)
    with _LOCK:
        return kernel(*args)
