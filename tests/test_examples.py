"""Every script in ``examples/`` runs to the end in a fresh interpreter and prints its results.

The scripts are the documentation's runnable recipes; a change that breaks one fails here. Each runs in
its own process (as a user runs it) with a generous timeout: a few seconds once Numba's cache is warm, a
minute or two for the first one on an empty cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_examples_are_there() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"lightgbm_ranking", "xgboost_ranking", "catboost_ranking", "sglb", "softrank_gp_variance",
            "model_selection"} <= names  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "NDCG@5 = 0." in out.stdout, out.stdout
