"""The binary ``.npz`` cache of parsed ranking files, keyed by the files' path and content (SHA-256)."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._eviction import evict, is_cache_file, mark_used

__all__ = ["cache_dir"]

_CACHE_FORMAT = 1


def cache_dir() -> Path:
    """Return the folder of the cache of parsed files.

    That is ``$STOCHRANK_CACHE``, else ``$XDG_CACHE_HOME/stochrank``, else ``~/.cache/stochrank``.
    """
    if os.environ.get("STOCHRANK_CACHE"):
        return Path(os.environ["STOCHRANK_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "stochrank"


def cache_path(
    path: Path,
    query_file: Path | None,
    options: tuple[Any, ...],
    cache: Literal[True] | str | os.PathLike[str],
) -> Path:
    """Return the cache entry's path for a file read with given options.

    The name is ``<name>-<digest of what is read and how>-<digest of the files' content>.npz``: a changed
    file gets a new name, and :func:`write_cache` deletes the entry it replaces. The content digest is the
    SHA-256 of the file's bytes as stored (compressed for ``.gz``/``.bz2``), so an edit that keeps the size
    and the modification time (``rsync -t``, ``tar x``, a copy within one mtime tick) is parsed again;
    hashing reads the file once per load, a small fraction of a parse (``benchmarks/RESULTS.md``, section
    "Dataset cache key").
    """
    directory = cache_dir() if cache is True else Path(cache).expanduser()
    what = repr(
        (_CACHE_FORMAT, str(path.resolve()), str(query_file.resolve()) if query_file else None, options)
    )
    content = repr([content_digest(path)] + ([content_digest(query_file)] if query_file is not None else []))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(path.resolve().parts[-3:]))[-80:]
    return directory / f"{stem}-{_digest(what)}-{_digest(content)}.npz"


def content_digest(path: Path) -> str:
    """Return the SHA-256 hex digest of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# What a damaged entry raises: np.load's OSError/ValueError (not an .npz), zipfile's BadZipFile (a
# truncated zip, or a CRC mismatch on reading a member), KeyError (a foreign .npz), EOFError and zlib.error.
_DAMAGED = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error)


def read_cache(store: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Return the arrays ``(X, y, qid, group)`` of a cache entry, or None if it is absent or damaged.

    A damaged entry (truncated, bit-flipped, foreign) reads as a miss: the caller parses the file again
    and overwrites it.
    """
    if not store.is_file():
        return None
    try:
        with np.load(store, allow_pickle=False) as arrays:
            X, y, qid, group = (arrays[name] for name in ("X", "y", "qid", "group"))
    except _DAMAGED:
        return None
    n_rows = X.shape[0] if X.ndim == 2 else -1
    consistent = y.shape == qid.shape == (n_rows,) and group.ndim == 1 and group.sum() == n_rows
    if not consistent:
        return None
    mark_used(store)
    return X, y, qid, group


def write_cache(store: Path, parsed: tuple[np.ndarray, ...]) -> None:
    """Write a cache entry atomically (temporary file + rename: safe with parallel workers).

    The entries of earlier versions of the same file read the same way are deleted, then the least
    recently used entries while the folder exceeds its cap (:func:`._eviction.evict`).
    """
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=store.parent, prefix=".tmp-", suffix=".npz")
        try:
            os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; the cache may be shared
            with os.fdopen(fd, "wb") as handle:
                X, y, qid, group = parsed
                np.savez(handle, X=X, y=y, qid=qid, group=group)
            os.replace(tmp, store)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        source_prefix = store.name.rsplit("-", 1)[0] + "-"
        for old in store.parent.glob(f"{_glob_escape(source_prefix)}*.npz"):
            if old != store and is_cache_file(old):  # another version of this entry, never a user's file
                old.unlink(missing_ok=True)
        evict(store.parent, keep=store)
    except OSError as exc:
        warnings.warn(f"stochrank could not write its dataset cache {store} ({exc}); loading without it.",
                      RuntimeWarning, stacklevel=3)  # fmt: skip


def _glob_escape(text: str) -> str:
    return re.sub(r"([\[\]*?])", r"[\1]", text)
