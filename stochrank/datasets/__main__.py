"""Command line for the cache of parsed dataset files: ``python -m stochrank.datasets {info,clear-cache}``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._eviction import DEFAULT_MAX_MB, cache_info, clear_cache


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m stochrank.datasets",
        description="Inspect or empty stochrank's cache of parsed ranking files ($STOCHRANK_CACHE, else "
        f"$XDG_CACHE_HOME/stochrank, else ~/.cache/stochrank; capped at $STOCHRANK_CACHE_MAX_MB MiB, default "
        f"{DEFAULT_MAX_MB}, least recently used entries evicted first).",
    )
    parser.add_argument(
        "command", choices=("info", "clear-cache"), help="show the cache, or delete its entries"
    )
    args = parser.parse_args(argv)
    try:
        info = cache_info()
        if args.command == "clear-cache":
            freed = clear_cache()
            print(f"Removed {info.entries} cache entries ({freed / 2**20:.1f} MiB) from {info.directory}.")
        else:
            print(f"{info.directory}: {info.entries} entries, {info.size_bytes / 2**20:.1f} MiB "
                  f"(cap {info.max_bytes / 2**20:.0f} MiB)")  # fmt: skip
    except (OSError, ValueError) as exc:
        print(f"python -m stochrank.datasets: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
