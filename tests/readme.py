"""The README's code blocks, to run them as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
ROOT = README.parent


def code_block(section: str) -> str:
    """Return the first ```python block under the README heading ``## <section>``."""
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    block = text.index("```python\n", start) + len("```python\n")
    return text[block : text.index("```", block)]


def run(code: str, timeout: int = 600) -> str:
    """Run ``code`` in a fresh interpreter at the repository root (this checkout's stochrank); return stdout.

    ``OMP_WAIT_POLICY=PASSIVE`` as the README advises with XGBoost: its OpenMP threads otherwise spin
    against Numba's on a busy machine.
    """
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
