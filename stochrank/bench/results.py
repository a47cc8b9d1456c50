"""Benchmark reports in Markdown: the RESULTS.md section writer, section headers, tables and numbers.

One home for ``python -m stochrank.bench`` and the scripts in ``benchmarks/``. A section of a results file
lies between ``<!-- name:start -->`` and ``<!-- name:end -->``; rewriting it leaves the rest of the file
alone. It starts with :func:`section_header`: the title, the exact command with its date, and the machine.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import platform
import re
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

__all__ = [
    "command_line",
    "cpu_model",
    "fmt",
    "machine_line",
    "markdown_table",
    "package_version",
    "section_header",
    "section_markers",
    "source_digest",
    "write_section",
]

PACKAGE = Path(__file__).resolve().parents[1]  # the stochrank package
REPO = PACKAGE.parent  # the repository root when stochrank runs from its source tree
SCRIPT_PACKAGES = ("numpy", "numba", "lightgbm", "xgboost")
RUNNER_PACKAGES = ("stochrank", "numpy", "numba", "lightgbm", "xgboost", "catboost")


# ----------------------------------------------------------------------------------------- sections
def section_markers(name: str) -> tuple[str, str]:
    """Return the comments that open and close section ``name`` of a results file."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def write_section(path: str | os.PathLike[str], name: str, body: str, *, preamble: str = "") -> None:
    """Replace (or append) the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in ``path``.

    A file that does not exist yet is created, starting with ``preamble``.
    """
    path = Path(path)
    start, end = section_markers(name)
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else preamble
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    path.write_text(text)


def section_header(title: str, *, level: int = 2, runner: bool = False) -> str:
    """Return the title, command, date and machine lines that start a report section.

    The scripts in ``benchmarks/`` time the code of the working tree: their command line names it by
    :func:`source_digest`, and their machine line gives the CPU model, the versions of
    :data:`SCRIPT_PACKAGES` and Numba's threading layer. The benchmark runner (``runner=True``,
    ``python -m stochrank.bench``) gives the versions of :data:`RUNNER_PACKAGES`, stochrank's included.
    """
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    stamp = date if runner else f"{date}; stochrank sources sha256 `{source_digest()}`"
    command = f"Command: `{command_line()}` ({stamp})"
    return f"{'#' * level} {title}\n\n{command}\n\n{machine_line(runner=runner)}\n"


def command_line() -> str:
    """Return the running command as typed from the repository root.

    ``python -m stochrank.bench ...`` for the benchmark runner; ``python <script> ...`` otherwise, the script
    relative to the repository root when it lies inside it.
    """
    argv0 = Path(sys.argv[0])
    if argv0.name == "__main__.py":
        head = ["python -m stochrank.bench"]
    else:
        script = argv0.resolve()
        shown = script.relative_to(REPO) if script.is_relative_to(REPO) else script
        head = ["python", shlex.quote(str(shown))]
    return " ".join([*head, *(shlex.quote(a) for a in sys.argv[1:])])


def machine_line(*, runner: bool = False) -> str:
    """Return one Markdown line: cores, load, Python and library versions (see :func:`section_header`)."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    packages = RUNNER_PACKAGES if runner else SCRIPT_PACKAGES
    versions = ", ".join(f"{p} {package_version(p)}" for p in packages)
    if runner:
        return (
            f"Machine: {os.cpu_count()} vCPU, load average {load} at the end; "
            f"Python {platform.python_version()}, {versions}."
        )
    from .._parallel import threading_layer

    layer = threading_layer() or "not started"  # None: no parallel Numba function has run yet
    return (
        f"Machine: {os.cpu_count()} vCPU ({cpu_model()}), load average {load} at the end; "
        f"Python {platform.python_version()}, {versions}; Numba threading layer `{layer}`."
    )


def package_version(package: str) -> str:
    """Return the installed version of ``package`` (a distribution or an import name), or 'not installed'.

    An import name is looked up among the distributions that provide it: ``xgboost-cpu`` installs ``xgboost``.
    """
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        for distribution in metadata.packages_distributions().get(package, []):
            return metadata.version(distribution)
        return "not installed"


def cpu_model() -> str:
    """Return the CPU's model name (``/proc/cpuinfo``, else :func:`platform.processor`)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def source_digest() -> str:
    """Return the first 12 hex digits of a SHA-256 over stochrank's Python sources: the code measured."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(REPO)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


# ------------------------------------------------------------------------------------ tables, numbers
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """Return a GitHub Markdown table.

    ``align`` has one character per column, 'l' or 'r' (default: the first column left, the others right).
    """
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(x: float, digits: int = 3) -> str:
    """Return ``x`` with ``digits`` significant digits, without an exponent for ordinary magnitudes."""
    if x == 0 or not np.isfinite(x):
        return str(x)
    if 1e-3 <= abs(x) < 1e7:
        decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(x)))))
        return f"{x:,.{decimals}f}"
    return f"{x:.{digits - 1}e}"
