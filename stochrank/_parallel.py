"""Run a ``parallel=True`` kernel safely and cheaply whatever Numba threading layer is active.

Boosters call objectives from the thread that called ``train``/``fit`` and release the GIL while
they build trees, so two fits in two Python threads can call kernels at the same time. Numba's
``omp`` and ``tbb`` layers handle that; its ``workqueue`` fallback (used when neither is available)
aborts the whole process on concurrent entry ("Concurrent access has been detected"). Under
``workqueue`` (or before the layer is known) kernel launches are serialised by one lock.

Small inputs run on the calling thread alone: below a few ten thousand documents a parallel launch
costs more than the work, and on a loaded machine (or right after a booster's OpenMP threads, which
spin for a while) it can wait milliseconds for a free core.

The first launch of each kernel in a process checks whether Numba will compile it (nothing in memory, no
entry in Numba's on-disk cache for these argument types) and then logs one INFO message per kernel family
through the ``stochrank`` logger, so that a long first call is not a silent one; later launches pay one set
lookup.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import numba
from numba.np.ufunc import threading_layer as _numba_threading_layer

from ._openmp import quiet_foreign_openmp, quiet_system_openmp

_P = ParamSpec("_P")
_R = TypeVar("_R")

_LOCK = threading.Lock()
_layer: str | None = None
PARALLEL_MIN_ROWS = 20_000

logger = logging.getLogger("stochrank")
# Kernel families by the module that defines the kernel, with their cold compile time (the first call
# with an empty cache) in CPU seconds, measured with Numba 0.68 by benchmarks/compile_time.py (RESULTS.md
# section 13): the ndcg(k=5) objective 22 s, the ndcg metric 5 s (the other metric modules are alike);
# SoftRank 17 s wall on a busy machine. Compilation is single-threaded: on an idle core the wait is about the
# CPU time, on a busy machine several times that.
COMPILE_FAMILIES: dict[str, tuple[str, int]] = {
    "stochrank.kernels.stochastic_rank": ("StochasticRank objectives", 20),
    "stochrank.kernels.softrank": ("SoftRank", 20),
    "stochrank.metrics._dcg": ("metrics (NDCG, DCG)", 6),
    "stochrank.metrics._cascade": ("metrics (ERR, pFound, MRR)", 6),
    "stochrank.metrics._precision": ("metrics (MAP, precision)", 6),
    "stochrank.metrics._auc": ("metrics (AUC)", 10),
    "stochrank.datasets._normalize": ("query-level normalisation", 2),
    "stochrank.kernels._random": ("query keys", 2),
    "stochrank.kernels._finite": ("score checks", 2),
}
_checked: set[Any] = set()  # kernels whose first launch was inspected
_announced: set[str] = set()  # families already logged
_CHECK_LOCK = threading.Lock()


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
    quiet_foreign_openmp()  # a booster's own OpenMP team must not spin against ours (see _openmp)
    return _launch(kernel, *args, **kwargs)


def release_kernel_threads(n_rows: int) -> None:
    """Stop Numba's idle ``omp`` workers spinning once a booster with its own threads takes the cores back.

    Call after an objective call for XGBoost or CatBoost (never LightGBM: its workers are these threads);
    the next parallel launch re-creates them.
    """
    if n_rows >= PARALLEL_MIN_ROWS and threading_layer() == "omp":
        quiet_system_openmp()


def _launch(kernel: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    if kernel not in _checked:
        _announce_compilation(kernel, args)
    if threading_layer() in ("omp", "tbb"):
        return kernel(*args, **kwargs)
    with _LOCK:
        return kernel(*args, **kwargs)


def _announce_compilation(kernel: Any, args: tuple[Any, ...]) -> None:
    """Log once per family when ``kernel(*args)`` is about to be compiled rather than loaded."""
    with _CHECK_LOCK:
        if kernel in _checked:
            return
        _checked.add(kernel)
        module = getattr(getattr(kernel, "py_func", None), "__module__", "")
        family, seconds = COMPILE_FAMILIES.get(module, (module, 10))
        if family in _announced or not will_compile(kernel, args):
            return
        _announced.add(family)
    logger.info(
        "stochrank: compiling Numba kernels for %s (first use; ~%d s on an idle core, longer on a busy "
        "machine; cached afterwards)",
        family,
        seconds,
    )


def will_compile(kernel: Any, args: tuple[Any, ...]) -> bool:
    """Return whether calling the Numba dispatcher ``kernel`` with ``args`` compiles it.

    True when no specialisation is in memory and Numba's on-disk cache has no entry for these argument
    types (and this source); False for anything that is not a caching Numba dispatcher.
    """
    if getattr(kernel, "signatures", None) != []:  # compiled or loaded already, or not a dispatcher
        return False
    try:
        cache = kernel._cache
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        key = cache._index_key(sig, kernel.targetctx.codegen())
        return key not in cache._cache_file._load_index()
    except Exception:  # Numba internals changed, or no cache: say nothing rather than something wrong
        return False
