"""Size cap, least-recently-used eviction and clearing of the ``.npz`` cache of parsed ranking files.

The cache (:func:`~._cache.cache_dir`) holds one entry per file and way of reading it. Every write is
followed by :func:`evict`: while the folder's entries add up to more than the cap
(``$STOCHRANK_CACHE_MAX_MB``, default :data:`DEFAULT_MAX_MB`), the least recently used entry goes. An entry's
modification time is its last use: a cache hit touches it (:func:`mark_used`). The entry just written is
never evicted, so a cap below one entry's size keeps exactly that entry.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_MB",
    "CacheInfo",
    "cache_info",
    "clear_cache",
    "evict",
    "is_cache_file",
    "mark_used",
    "max_bytes",
]

#: Default cap of the cache in MiB: a few copies of the bundled MQ2008 (about 30 MiB for its 5 folds) and
#: of one web-scale fold (MSLR-WEB30K: about 2 GiB), not every fold of every dataset.
DEFAULT_MAX_MB = 4096

# The cache's own files, named as ``._cache`` writes them: entries ``<stem>-<16 hex>-<16 hex>.npz`` (the stem
# is at most 80 of ``[A-Za-z0-9._-]``, see ``cache_path``) and the temporary files of interrupted writes,
# ``tempfile.mkstemp(prefix=".tmp-", suffix=".npz")``: 8 of ``[a-z0-9_]`` between. Any other file in the
# folder (``cache=`` may be a folder of the user's) is never counted, evicted nor cleared.
_ENTRY = re.compile(r"[A-Za-z0-9._-]{1,80}-[0-9a-f]{16}-[0-9a-f]{16}\.npz|\.tmp-[a-z0-9_]{8}\.npz")


def is_cache_file(path: Path) -> bool:
    """Whether ``path`` is named as one of the cache's own files (an entry or an interrupted write)."""
    return _ENTRY.fullmatch(path.name) is not None


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: its path, the number and total size of its entries, and the cap."""

    directory: Path
    entries: int
    size_bytes: int
    max_bytes: int


def max_bytes() -> int:
    """Return the cap in bytes: ``$STOCHRANK_CACHE_MAX_MB`` MiB, else :data:`DEFAULT_MAX_MB` MiB.

    Raises
    ------
    ValueError
        If the variable is set to something other than a non-negative number.
    """
    text = os.environ.get("STOCHRANK_CACHE_MAX_MB", "").strip()
    if not text:
        return DEFAULT_MAX_MB * 2**20
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses nan
        raise ValueError(
            f"STOCHRANK_CACHE_MAX_MB must be a non-negative number of MiB (default {DEFAULT_MAX_MB}); got "
            f"{text!r}. Unset it or set e.g. STOCHRANK_CACHE_MAX_MB=8192."
        )
    return int(value * 2**20)


def mark_used(entry: Path) -> None:
    """Record a cache hit: the entry becomes the most recently used (its mtime is now)."""
    with contextlib.suppress(
        OSError
    ):  # a read-only shared cache still serves hits; it only cannot order them
        os.utime(entry)


def _entries(directory: Path) -> list[tuple[float, int, Path]]:
    try:
        paths = list(directory.iterdir())
    except OSError:  # no folder (yet), or not readable: no entries, as glob reported before
        return []
    found = []
    for path in paths:
        if not is_cache_file(path):
            continue
        try:
            info = path.stat()
        except OSError:  # removed by a parallel writer meanwhile
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime, info.st_size, path))
    return found


def evict(directory: Path, keep: Path | None = None, limit: int | None = None) -> int:
    """Delete the least recently used entries until the folder fits the cap; return the bytes freed.

    Parameters
    ----------
    directory : Path
        The cache folder.
    keep : Path or None
        An entry never to delete (the one just written).
    limit : int or None
        The cap in bytes; None reads :func:`max_bytes`.

    Returns
    -------
    int
        Bytes freed.
    """
    cap = max_bytes() if limit is None else limit
    entries = sorted(_entries(directory))  # oldest use first
    total = sum(size for _, size, _ in entries)
    freed = 0
    for _, size, path in entries:
        if total - freed <= cap:
            break
        if path == keep:
            continue
        path.unlink(missing_ok=True)
        freed += size
    return freed


def cache_info(directory: str | os.PathLike[str] | None = None) -> CacheInfo:
    """Describe the cache: folder, number of entries, their total size and the cap.

    Parameters
    ----------
    directory : path-like or None
        A cache folder; None is :func:`stochrank.datasets.cache_dir`.

    Returns
    -------
    CacheInfo
        ``directory``, ``entries``, ``size_bytes`` and ``max_bytes``.
    """
    from ._cache import cache_dir

    folder = cache_dir() if directory is None else Path(directory).expanduser()
    entries = _entries(folder) if folder.is_dir() else []
    return CacheInfo(folder, len(entries), sum(size for _, size, _ in entries), max_bytes())


def clear_cache(directory: str | os.PathLike[str] | None = None) -> int:
    """Delete every entry of the cache of parsed files; return the number of bytes freed.

    Only the cache's own ``.npz`` entries are removed, never other files in the folder. The next load of a
    file parses it again.

    Parameters
    ----------
    directory : path-like or None
        A cache folder (as passed to ``load(..., cache=directory)``); None is
        :func:`stochrank.datasets.cache_dir`.

    Returns
    -------
    int
        Bytes freed.

    Examples
    --------
    >>> from stochrank.datasets import clear_cache
    >>> clear_cache()  # doctest: +SKIP
    31457280

    From a shell: ``python -m stochrank.datasets clear-cache``.
    """
    folder = cache_info(directory).directory
    return evict(folder, limit=0) if folder.is_dir() else 0
