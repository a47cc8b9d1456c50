"""The README's python blocks, run as written in a fresh interpreter.

A fresh process matters: inside the test session other tests have already imported ``stochrank.xgboost``
and friends, which would hide a missing lazy attribute (``import stochrank`` alone must be enough for
``stochrank.xgboost.XGBRanker``). The blocks are executed unchanged; a harness only keeps the value of
every top-level expression, and each fitted model among them must also *learn*: its train NDCG@5 is
compared with that of all-equal scores.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs one README block (stdin) with every top-level expression's value kept, then scores what was fitted.
HARNESS = """
import ast, sys
source = sys.stdin.read()
tree = ast.parse(source)
keep = ast.Name("_keep", ast.Load())
tree.body = [
    ast.Expr(ast.Call(keep, [node.value], [])) if isinstance(node, ast.Expr) else node for node in tree.body
]
kept = []
namespace = {"_keep": kept.append, "__name__": "__main__"}
exec(compile(ast.fix_missing_locations(tree), "README.md", "exec"), namespace)
fitted = [value for value in kept if hasattr(value, "predict")]
if fitted:
    import numpy as np, xgboost as xgb
    from stochrank.metrics import ndcg
    X, y, sizes = namespace["X"], namespace["y"], namespace["sizes"]
    start = ndcg(y, np.zeros_like(y), sizes, k=5)
    for model in fitted:
        data = xgb.DMatrix(X) if isinstance(model, xgb.Booster) else X
        print("FITTED", type(model).__name__, start, ndcg(y, model.predict(data), sizes, k=5))
print("KEPT", len(kept))
"""


# Sections whose blocks run in their own tests, which also check what the recipes print and stop at.
OWN_TESTS = {"Early stopping": "test_early_stopping.py", "Model selection": "test_model_selection.py"}


def readme_python_blocks(everything: bool = False) -> list[str]:
    """Return the README's python blocks, without the ``OWN_TESTS`` sections unless ``everything``."""
    blocks = []
    for section in re.split(r"^## ", (ROOT / "README.md").read_text(), flags=re.MULTILINE):
        if everything or section.split("\n", 1)[0] not in OWN_TESTS:
            blocks += re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    return blocks


def test_readme_has_python_blocks_that_parse() -> None:
    blocks = readme_python_blocks(everything=True)
    assert len(blocks) > len(readme_python_blocks()), "the README lost its usage block or a recipe section"
    for block in blocks:
        ast.parse(block)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(readme_python_blocks())))
def test_readme_python_block_runs_as_written_and_learns(index: int) -> None:
    block = readme_python_blocks()[index]
    # The machine running the tests is shared: OpenMP runtimes that spin would starve Numba's threads.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    out = subprocess.run(
        [sys.executable, "-c", HARNESS], input=block, capture_output=True, text=True, timeout=900, env=env,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line.split() for line in out.stdout.splitlines() if line.startswith(("FITTED", "KEPT"))]
    assert lines[-1][0] == "KEPT" and int(lines[-1][1]) > 0
    fitted = [(name, float(start), float(end)) for _, name, start, end in lines[:-1]]
    if index == 0:  # the usage block; "On a cluster" keeps no model
        expected = ["Booster", "LGBMRanker", "Booster", "XGBRanker", "CatBoostRanker", "CatBoostRanker"]
        assert [name for name, _, _ in fitted] == expected
    for name, start, end in fitted:
        assert end > start + 0.1, (name, start, end)
