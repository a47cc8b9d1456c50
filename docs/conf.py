"""Sphinx configuration: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (in .ci/run)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # document this checkout, not an installed copy

import stochrank  # noqa: E402
from stochrank.bench.__main__ import _parser  # noqa: E402

project = "stochrank"
author = "stochrank developers"
copyright = "stochrank developers, Apache-2.0"
release = version = stochrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]
exclude_patterns = ["_build", "_generated/*.txt"]
html_theme = "furo"
html_title = f"stochrank {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections state the types in words
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# The command line's help, generated from the parser itself so that the page never goes stale.
_generated = HERE / "_generated"
_generated.mkdir(exist_ok=True)
os.environ.setdefault("COLUMNS", "100")
(_generated / "bench_help.txt").write_text(_parser().format_help())
