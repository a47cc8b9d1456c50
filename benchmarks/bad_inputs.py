"""The table of bad-input classes and what stochrank does with each, run from the test harness.

Every class of ``tests/harness.py`` (``CASES``, the list ``tests/test_fuzz.py`` asserts) is run once on its
representative input and classified by the harness's contract: a *clear error* (``ValueError`` /
``TypeError`` / ``FileNotFoundError`` whose message names the argument or the file), *correct handling*
(finite output equal to a slow reference: the plain-Python metric twins, the plain LETOR reader, the GP's
formulas in loops, the objective's direct API), or a defect: *unclear error*, *crash*, *silent wrong result*.
Writes the ``bad_inputs`` section of ``benchmarks/RESULTS.md``; exits non-zero if any class is a defect.

    python benchmarks/bad_inputs.py            # RESULTS.md section
    python benchmarks/bad_inputs.py --print    # the table only, nothing written
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import warnings
from pathlib import Path

from _common import write_results_section

from stochrank.bench.results import markdown_table, section_header
from tests.harness import CASES, CLEAR_ERROR, CORRECT, CRASH, SILENT_WRONG, UNCLEAR_ERROR

EXCERPT = 150  # characters of each error message shown


def excerpt(text: str) -> str:
    """The first EXCERPT characters of a message on one line, safe in a Markdown table cell."""
    text = " ".join(text.split())
    text = text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"
    # '|' would end the cell; '<id>' in "qid:<id>" would be read as an HTML tag and vanish.
    return text.replace("|", "\\|").replace("<", "&lt;")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the table, write nothing")
    args = parser.parse_args()
    rows, counts = [], collections.Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for number, case in enumerate(CASES, 1):
            with tempfile.TemporaryDirectory() as tmp:
                outcome = case.outcome(Path(tmp))
            detail = outcome.detail.replace(tmp, "$TMP")  # the same table on every run
            counts[outcome.kind] += 1
            shown = outcome.kind if outcome.ok else f"**{outcome.kind}**"
            rows.append([number, case.area, f"`{case.entry}`", case.input_class, shown, excerpt(detail)])
    table = markdown_table(
        ["#", "area", "entry point", "bad input", "outcome", "message / result"], rows, "rllllll"[:6]
    )
    tally = ", ".join(
        f"{counts[kind]} {kind}" for kind in (CLEAR_ERROR, CORRECT, UNCLEAR_ERROR, CRASH, SILENT_WRONG)
    )
    print(table)
    print(f"\n{len(CASES)} classes: {tally}")
    if not args.print:
        body = "\n".join(
            [
                section_header("12. Bad input: one row per class, as the test harness classifies it"),
                (
                    "Issue 12. Each class of bad or edge input is run once on a representative input from "
                    "`tests/harness.py` (the same list `tests/test_fuzz.py` asserts, next to hypothesis "
                    "searches over the same entry points). *Clear error*: `ValueError` / `TypeError` "
                    "(`FileNotFoundError` for a path) whose message names the argument or the file. *Correct "
                    "handling*: finite output equal to a slow reference (plain-Python metric twins, a plain "
                    "LETOR reader, the GP formulas in loops, the objective's direct API). Anything else "
                    "would be a defect: unclear error, crash, silent wrong result."
                ),
                "",
                f"**{len(CASES)} classes: {tally}.**",
                "",
                table,
                "",
                (
                    "Outside stochrank's reach: LightGBM stores a NaN label or a NaN `init_score` of an "
                    "`lgb.Dataset` as 0 before any objective sees it (XGBoost refuses a NaN label itself; a "
                    "NaN `base_margin` reaches the objective, which names it)."
                ),
            ]
        )
        write_results_section("bad_inputs", body)
    if counts[UNCLEAR_ERROR] + counts[CRASH] + counts[SILENT_WRONG]:
        sys.exit(1)


if __name__ == "__main__":
    main()
