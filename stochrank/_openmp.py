"""Quiet other OpenMP runtimes before a parallel kernel, so their spinning threads leave the cores to it.

After each parallel region, GNU OpenMP keeps its worker threads busy-waiting for the next one (up to
``GOMP_SPINCOUNT`` spins, milliseconds on current CPUs) unless ``OMP_WAIT_POLICY=PASSIVE`` was set before
the runtime started. LightGBM shares the system ``libgomp.so.1`` with Numba's ``omp`` threading layer, so
its idle workers are the very threads that run our kernels. XGBoost (and scikit-learn) ship their own
copy, ``libgomp-<hash>.so``: its workers spin on every core while our kernel runs, which made a 1.4 ms
gradient take 3–5× longer inside ``xgb.train`` at 16 threads (benchmarks/RESULTS.md).

The wait policy cannot be changed once a runtime has started, but OpenMP 5.0's
``omp_pause_resource_all(omp_pause_soft)`` releases a runtime's thread pool: the spinning threads exit and
the library creates a new team at its next parallel region (tens of microseconds per thread). Before a
parallel launch we pause every *vendored* libgomp copy loaded in the process.

The same holds the other way round: after our kernel, Numba's ``omp`` workers (the system ``libgomp.so.1``)
spin while XGBoost or CatBoost build the next tree on their own threads. :func:`quiet_system_openmp`
releases them after an objective call for those boosters; never for LightGBM, whose own workers they are.
A pause frees only the pool of the calling thread (libgomp keeps one per thread that opens parallel
regions), so runs in other threads are untouched. Linux only (it reads ``/proc/self/maps``); elsewhere
nothing happens.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable

__all__ = ["quiet_foreign_openmp", "quiet_system_openmp"]

_OMP_PAUSE_SOFT = 1  # omp_pause_resource_t: omp_pause_soft
_MAPS = "/proc/self/maps"

_lock = threading.Lock()
# omp_pause_resource_all of every libgomp copy loaded, split into the system copy (True) and vendored ones
_pauses: dict[bool, list[Callable[[int], int]]] = {True: [], False: []}
_seen: set[str] = set()
_scanned_modules = -1  # len(sys.modules) at the last scan: rescan only when new libraries may have loaded


def _is_system(path: str) -> bool:
    return os.path.basename(path).startswith("libgomp.so")


def _libgomp_paths() -> set[str]:
    """Paths of the libgomp copies loaded in this process (the system's and vendored ``libgomp-<hash>``)."""
    with open(_MAPS) as maps:
        paths = {line.rsplit(None, 1)[-1] for line in maps}
    return {path for path in paths if os.path.basename(path).startswith("libgomp")}


def _vendored_libgomp_paths() -> set[str]:
    """Paths of the libgomp copies loaded in this process other than the system's ``libgomp.so.1``."""
    return {path for path in _libgomp_paths() if not _is_system(path)}


def _pause_functions(system: bool) -> list[Callable[[int], int]]:
    global _scanned_modules
    if len(sys.modules) != _scanned_modules and os.path.exists(_MAPS):
        with _lock:
            _scanned_modules = len(sys.modules)
            for path in _libgomp_paths() - _seen:
                _seen.add(path)
                try:
                    function = ctypes.CDLL(path).omp_pause_resource_all
                except (OSError, AttributeError):  # an OpenMP older than 5.0: nothing to call
                    continue
                function.argtypes = [ctypes.c_int]
                function.restype = ctypes.c_int
                _pauses[_is_system(path)].append(function)
    return _pauses[system]


def quiet_foreign_openmp() -> None:
    """Release the calling thread's pools in the vendored OpenMP runtimes of this process (see module docs).

    Safe to call at any time from the thread that drives the booster: libgomp refuses (returns non-zero)
    when the calling thread is inside a parallel region, frees only the calling thread's pool (other
    threads' pools and running regions are untouched), and re-creates the team when next needed.
    """
    for pause in _pause_functions(system=False):
        pause(_OMP_PAUSE_SOFT)


def quiet_system_openmp() -> None:
    """Release the calling thread's pool in the system ``libgomp.so.1``: Numba's ``omp`` workers."""
    for pause in _pause_functions(system=True):
        pause(_OMP_PAUSE_SOFT)
