"""SVMlight / LETOR ranking files -> :class:`~._split.RankingSplit`, cached by :mod:`._cache`."""

from __future__ import annotations

import contextlib
import io
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_choice, check_optional_int
from ..conventions import offsets_from_sizes
from ._blocks import open_binary, read_dense
from ._cache import cache_path, read_cache, write_cache
from ._split import RankingSplit

__all__ = ["load_svmlight_ranking"]

# Bump when the cached arrays' meaning changes, so that old cache files are never read.
_REPEATED_QID = ("new_query", "error")


def load_svmlight_ranking(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    query_file: str | os.PathLike[str] | None = None,
    *,
    zero_based: bool = False,
    dtype: type = np.float64,
    repeated_qid: str = "new_query",
    allow_nan: bool = True,
    cache: bool | str | os.PathLike[str] = False,
) -> RankingSplit:
    """Read a ranking file in SVMlight/LETOR format (``<label> qid:<id> <index>:<value> ... # comment``).

    Built on :func:`sklearn.datasets.load_svmlight_file` (``query_id=True``), called on blocks of the file
    that are written into one dense matrix, so the peak memory stays near the final matrix (1.2 x for an
    MSLR-layout file, against 4.1 x for a whole-file parse); ``.gz`` and ``.bz2`` files are read directly.

    Parameters
    ----------
    path : path-like
        The data file.
    n_features : int or None
        Number of feature columns; None takes the largest index in the file. A file that uses a larger
        index raises (a file of another dataset, or a corrupt one).
    query_file : path-like or None
        Group sizes, one per line (LightGBM's ``.query`` file), for files without ``qid:``. When None and
        the file has no qid, ``<path>.query`` (also ``<stem>.query.gz`` for ``<stem>.gz``) is used if present.
    zero_based : bool
        Whether feature indices start at 0. LETOR, MSLR, Yahoo and Istella files are one-based (the
        default); index 0 in a one-based file raises.
    dtype : numpy float type
        Storage type of ``X``. With float32, values beyond float32's range are clipped to +-3.4e38 (Istella
        uses 1.8e308 as a sentinel), which keeps their order.
    repeated_qid : {"new_query", "error"}
        What a qid that reappears after another query means: a new query (LETOR files are contiguous
        blocks; the default), or an error (to catch shuffled rows).
    allow_nan : bool
        Whether NaN (and, for float64, infinite) feature values are accepted; the boosters read NaN as
        missing. The named datasets have none, so :func:`stochrank.datasets.load` refuses them.
    cache : bool or path-like
        Cache the parsed arrays as ``.npz`` in :func:`cache_dir` (True) or in the given directory. The cache
        key is the resolved path and the SHA-256 of the content of the file (and of the query file) and the
        parse options, so an edited file is parsed again, even one whose size and modification time were
        kept. A damaged cache entry is parsed again and replaced.

    Returns
    -------
    RankingSplit
        Rows in file order; ``group`` from the contiguous runs of qid (or from the query file). Labels are
        finite and ``>= 0``, the rule of every stochrank metric and objective (:func:`stochrank.datasets.load`
        also requires the dataset's integer grades).

    Raises
    ------
    FileNotFoundError
        If ``path`` (or ``query_file``) does not exist.
    ValueError
        Empty file, rows without qid (and no query file), a feature index above ``n_features``, a query
        file that does not match the rows, unparsable lines, a NaN, infinite or negative label, a truncated
        or corrupt compressed file, or (``repeated_qid="error"``) split queries.
    """
    split = read_ranking_file(
        path, n_features, query_file, zero_based=zero_based, dtype=dtype, repeated_qid=repeated_qid,
        allow_nan=allow_nan, cache=cache,
    )  # fmt: skip
    _check_labels(split.y, Path(path))
    return split


def read_ranking_file(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    query_file: str | os.PathLike[str] | None = None,
    *,
    zero_based: bool = False,
    dtype: type = np.float64,
    repeated_qid: str = "new_query",
    allow_nan: bool = True,
    cache: bool | str | os.PathLike[str] = False,
) -> RankingSplit:
    """:func:`load_svmlight_ranking` without its label check, for callers with their own label rule."""
    check_choice(repeated_qid, "repeated_qid", "load_svmlight_ranking", _REPEATED_QID)
    check_optional_int(n_features, "n_features", "load_svmlight_ranking", low=1, none_means="from the file")
    if dtype not in (np.float32, np.float64):
        raise ValueError(
            "The 'dtype' parameter of load_svmlight_ranking must be np.float32 or np.float64. "
            f"Got {dtype!r} instead."
        )
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No ranking file at {path}.")
    with _decompression_errors(path):
        has_qid = _has_qid(path)
    if query_file is None and not has_qid:
        query_file = _companion_query_file(path)
    if query_file is not None:
        query_file = Path(query_file)
        if not query_file.is_file():
            raise FileNotFoundError(f"No query (group size) file at {query_file}.")

    options = (n_features, bool(zero_based), np.dtype(dtype).str, bool(allow_nan))
    if cache is False:
        parsed = _parse(path, query_file, n_features, zero_based, dtype, allow_nan)
    else:
        store = cache_path(path, query_file, options, cache)
        cached = read_cache(store)
        if cached is None:
            parsed = _parse(path, query_file, n_features, zero_based, dtype, allow_nan)
            # Written only if the file did not change while it was parsed (the key is its content).
            if cache_path(path, query_file, options, cache) == store:
                write_cache(store, parsed)
        else:
            parsed = cached
    split = RankingSplit(*parsed)
    if repeated_qid == "error":
        _check_contiguous(split, path)
    return split


# ------------------------------------------------------------------------------------------ parsing
def _parse(
    path: Path,
    query_file: Path | None,
    n_features: int | None,
    zero_based: bool,
    dtype: type,
    allow_nan: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    try:
        with _decompression_errors(path):
            X, y, qid = read_dense(path, n_features, zero_based, dtype)
    except ValueError as exc:
        if isinstance(exc.__cause__, _DECOMPRESSION_ERRORS):
            raise
        text = str(exc)
        bom = _byte_order_mark(path)
        if bom is not None:
            raise ValueError(
                f"{path} starts with a {bom} byte-order mark (BOM), which the SVMlight parser reads as part "
                "of the first label. Save the file as plain UTF-8/ASCII without a BOM (e.g. Python "
                "encoding='utf-8', not 'utf-8-sig'; or strip it: sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)."
            ) from None
        if "n_features was set to" in text:
            found = re.search(r"contains (\d+) features", text)
            raise ValueError(
                f"{path} has feature index {found.group(1) if found else '?'} but this data has {n_features} "
                f"features (indices 1..{n_features}): the file belongs to another dataset or is corrupt. "
                "Check the dataset name and re-extract the file."
            ) from None
        if "Invalid index 0" in text:
            raise ValueError(
                f"{path} uses feature index 0, but it is read as one-based (LETOR/MSLR/Yahoo/Istella files "
                "start at 1). For a zero-based file pass zero_based=True to load_svmlight_ranking."
            ) from None
        raise ValueError(
            f"Could not parse {path} as SVMlight/LETOR ranking data "
            f"('<label> qid:<id> <index>:<value> ... # comment' per line): {text}"
        ) from None
    n_rows = X.shape[0]
    if n_rows == 0:
        raise ValueError(
            f"{path} contains no data rows (an empty file, or only blank and comment lines). "
            "Re-download or re-extract it."
        )
    if query_file is not None:
        group = _read_query_file(query_file, n_rows, path)
        if qid.size == 0:
            qid = np.repeat(np.arange(group.size, dtype=np.int64), group)
        else:
            _check_qid_rows(qid, n_rows, path)
            starts = offsets_from_sizes(group, n_rows)[:-1]
            if (np.maximum.reduceat(qid, starts) != np.minimum.reduceat(qid, starts)).any():
                raise ValueError(
                    f"The query file {query_file} splits {path} into groups whose rows have different qids; "
                    "the two disagree. Drop the query file to use the qids, or fix it."
                )
    else:
        _check_qid_rows(qid, n_rows, path)
        change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
        group = np.diff(np.concatenate(([0], change, [n_rows]))).astype(np.int64)
    if dtype is np.float32:
        # load_svmlight_file turns values beyond float32's range (Istella's 1.8e308) into inf: clip them.
        big = np.finfo(np.float32).max
        np.clip(X, -big, big, out=X)
    if not allow_nan and not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(
            f"{path} has NaN or infinite feature values (first in data row {row}); this dataset has none, so "
            "the file is corrupt. Re-download or re-extract it."
        )
    return X, np.asarray(y, dtype=np.float64), np.asarray(qid, dtype=np.int64), group.astype(np.int64)


def _check_labels(y: np.ndarray, path: Path) -> None:
    bad = np.flatnonzero(~np.isfinite(y) | (y < 0.0))
    if bad.size:
        raise ValueError(
            f"{path} has {bad.size} labels that are NaN, infinite or negative (first: {y[bad[0]]:g} in data "
            f"row {bad[0]}). stochrank's metrics and objectives need finite relevance labels >= 0: fix or "
            "drop those rows (unjudged documents marked -1 or -2: map them to 0 or remove them)."
        )


def _check_qid_rows(qid: np.ndarray, n_rows: int, path: Path) -> None:
    if qid.size == n_rows:
        return
    line = _first_line_without_qid(path)
    where = f" (first at line {line})" if line is not None else ""
    raise ValueError(
        f"{n_rows - qid.size} of the {n_rows} rows of {path} have no 'qid:<id>'{where}. A ranking file needs "
        "a query id on every row ('<label> qid:<id> <index>:<value> ...'), or no qid at all and a query file "
        "with the group sizes (LightGBM's .query, passed as query_file=)."
    )


def _read_query_file(query_file: Path, n_rows: int, path: Path) -> np.ndarray:
    try:
        sizes = np.loadtxt(query_file, dtype=np.float64, ndmin=1)
    except ValueError as exc:
        raise ValueError(
            f"Could not read group sizes (one integer per line) from {query_file}: {exc}"
        ) from None
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"{query_file} must hold one positive integer group size per line; it is empty.")
    bad = np.flatnonzero(~(sizes >= 1) | (sizes != np.round(sizes)))
    if bad.size:
        raise ValueError(
            f"{query_file} must hold one positive integer group size per line; query {bad[0]} (number "
            f"{bad[0] + 1} in the file) has size {sizes[bad[0]]:g}. Drop the lines of empty queries."
        )
    if sizes.sum() != n_rows:
        raise ValueError(
            f"The group sizes in {query_file} add up to {int(sizes.sum())} rows but {path} has {n_rows}: "
            "the query file belongs to another data file."
        )
    return sizes.astype(np.int64)


def _check_contiguous(split: RankingSplit, path: Path) -> None:
    starts = offsets_from_sizes(split.group, split.y.size)[:-1]
    first_ids = split.qid[starts]
    unique, counts = np.unique(first_ids, return_counts=True)
    if (counts == 1).all():
        return
    dup = unique[counts > 1][0]
    runs = np.flatnonzero(first_ids == dup)
    raise ValueError(
        f"Query {dup} of {path} is split: its rows start at row {starts[runs[0]]} and again at row "
        f"{starts[runs[1]]}, after other queries. Ranking files keep a query's documents together; this file "
        "is shuffled or concatenated. Pass repeated_qid='new_query' to treat each run as its own query."
    )


# What gzip / bz2 raise on a damaged file: EOFError (truncated), gzip.BadGzipFile (bad CRC, length or
# header), OSError (bz2: invalid data stream) and zlib.error (corrupt deflate data).
_DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error)


@contextlib.contextmanager
def _decompression_errors(path: Path) -> Iterator[None]:
    """Turn the bare errors of reading a damaged compressed file into a ValueError naming the file."""
    try:
        yield
    except (PermissionError, IsADirectoryError, FileNotFoundError):
        raise
    except _DECOMPRESSION_ERRORS as exc:
        if path.suffix.lower() not in (".gz", ".bz2"):
            raise
        raise ValueError(
            f"{path} is truncated or corrupt ({type(exc).__name__}: {exc}): the {path.suffix} archive does "
            "not decompress. Re-download or re-extract it."
        ) from exc


_BOMS = {b"\xef\xbb\xbf": "UTF-8", b"\xff\xfe": "UTF-16 (little-endian)", b"\xfe\xff": "UTF-16 (big-endian)"}


def _byte_order_mark(path: Path) -> str | None:
    """Return the encoding a byte-order mark at the start of the (decompressed) file names, or None."""
    try:
        with open_binary(path) as handle:
            head = handle.read(3)
    except _DECOMPRESSION_ERRORS:
        return None
    return next((name for mark, name in _BOMS.items() if head.startswith(mark)), None)


def _open_text(path: Path) -> Any:
    return io.TextIOWrapper(open_binary(path), errors="replace")


def _data_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number, tokens before any '#') of every non-blank data line."""
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            tokens = line.split("#", 1)[0].split()
            if tokens:
                yield number, tokens


def _has_qid(path: Path) -> bool:
    for _, tokens in _data_lines(path):
        return len(tokens) > 1 and tokens[1].startswith("qid:")
    return True  # empty file: let the parser report it


def _first_line_without_qid(path: Path) -> int | None:
    for number, tokens in _data_lines(path):
        if len(tokens) < 2 or not tokens[1].startswith("qid:"):
            return number
    return None


def _companion_query_file(path: Path) -> Path | None:
    candidates = [path.with_name(path.name + ".query")]
    if path.suffix.lower() in (".gz", ".bz2"):
        candidates.append(path.with_name(path.stem + ".query" + path.suffix))
    return next((c for c in candidates if c.is_file()), None)


# -------------------------------------------------------------------------------------------- cache
