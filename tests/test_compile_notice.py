"""The first use of a kernel family with an empty Numba cache says so, once, through ``logging``.

Each check runs in a fresh interpreter with its own ``NUMBA_CACHE_DIR``: a cold cache must log exactly one
"compiling Numba kernels for <family>" INFO record, and a second process on the now warm cache none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from stochrank import _parallel

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import logging
    import numpy as np

    logging.basicConfig(level=logging.INFO, format="%(name)s|%(levelname)s|%(message)s")
    from stochrank.datasets import query_level_norm

    X = np.arange(12.0).reshape(6, 2)
    query_level_norm(X, np.array([3, 3]))
    query_level_norm(X, np.array([2, 4]))  # same types: no second message
    print("done")
    """
)


def _run(cache: Path) -> list[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr[-3000:]
    return [line for line in out.stderr.splitlines() if "Numba" in line]


@pytest.mark.slow
def test_cold_cache_logs_one_info_message_and_warm_cache_none(tmp_path: Path) -> None:
    cold = _run(tmp_path / "numba")
    assert len(cold) == 1, cold
    assert re.fullmatch(
        r"stochrank\|INFO\|stochrank: compiling Numba kernels for query-level normalisation "
        r"\(first use; ~\d+ s on an idle core, longer on a busy machine; cached afterwards\)",
        cold[0],
    ), cold
    assert _run(tmp_path / "numba") == []


def test_will_compile_is_false_once_compiled_and_for_non_dispatchers() -> None:
    from stochrank.datasets._normalize import _query_minmax

    X = np.ones((4, 2))
    args = (X, np.array([0, 2, 4]), np.empty_like(X))
    _query_minmax(*args)
    assert not _parallel.will_compile(_query_minmax, args)
    assert not _parallel.will_compile(len, (X,))


def test_every_module_of_parallel_kernels_has_a_family() -> None:
    """A new module of ``parallel=True`` kernels gets a name and an expected time in the notice."""
    package = ROOT / "stochrank"
    modules = {
        ".".join(("stochrank", *p.relative_to(package).with_suffix("").parts))
        for p in package.rglob("*.py")
        if "@njit(cache=True, parallel=True)" in p.read_text()
    }
    assert modules and modules == set(_parallel.COMPILE_FAMILIES)
