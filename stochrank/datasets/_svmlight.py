"""SVMlight / LETOR ranking files -> :class:`RankingSplit`, with a binary cache keyed by the file's stat."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_optional_int, check_real
from ..conventions import offsets_from_sizes

__all__ = ["RankingSplit", "cache_dir", "load_svmlight_ranking", "split_queries"]

# Bump when the cached arrays' meaning changes, so that old cache files are never read.
_CACHE_FORMAT = 1
_REPEATED_QID = ("new_query", "error")


@dataclass(frozen=True, eq=False)
class RankingSplit:
    """One split of a ranking dataset: dense features, labels and query structure, rows in file order.

    Attributes
    ----------
    X : ndarray of shape (n_documents, n_features)
        Dense features: float64, or float32 for the large web datasets (see ``DATASETS[name].dtype``).
    y : ndarray of float64, shape (n_documents,)
        Relevance labels.
    qid : ndarray of int64, shape (n_documents,)
        Query ids as written in the file (or the query index when the file has none).
    group : ndarray of int64, shape (n_queries,)
        Documents per query: the lengths of the contiguous runs of equal ``qid``, in row order. A qid
        that reappears after another query starts a new query (LETOR files are contiguous blocks).

    Raises
    ------
    ValueError
        On construction, naming the field, if ``X`` is not 2-D, ``y`` or ``qid`` is not 1-D with one entry per
        row of ``X``, ``group`` does not hold positive sizes adding up to the rows, or a query's rows have
        different ``qid``.
    """

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    group: np.ndarray

    def __post_init__(self) -> None:
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ValueError(f"RankingSplit: 'X' must be 2-D (documents x features); got shape {X.shape}.")
        n_rows = X.shape[0]
        arrays = {"y": np.asarray(self.y, dtype=np.float64), "qid": np.asarray(self.qid)}
        for name, values in arrays.items():
            if values.shape != (n_rows,):
                raise ValueError(
                    f"RankingSplit: '{name}' must be 1-D with one entry per row of 'X' ({n_rows}); got shape "
                    f"{values.shape}. Take X, y, qid from the same rows."
                )
        offsets = offsets_from_sizes(self.group, n_rows)
        qid = arrays["qid"]
        starts = offsets[:-1]
        mixed = np.flatnonzero(np.maximum.reduceat(qid, starts) != np.minimum.reduceat(qid, starts))
        if mixed.size:
            first = int(mixed[0])
            raise ValueError(
                f"RankingSplit: query {first} of 'group' (rows {offsets[first]}..{offsets[first + 1] - 1}) has "
                "rows with different 'qid'; 'group' must be the lengths of the runs of equal qid."
            )
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", arrays["y"])
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "group", np.asarray(self.group, dtype=np.int64))

    @property
    def n_queries(self) -> int:
        """Number of queries (contiguous qid runs)."""
        return int(self.group.size)

    @property
    def query_index(self) -> np.ndarray:
        """Per-row query number 0, 1, ..., n_queries - 1: sorted and contiguous, so it is safe wherever a
        library wants a sorted ``qid`` (XGBoost), even when the file's qids are not (MQ2008 Fold4/5)."""
        return np.repeat(np.arange(self.group.size, dtype=np.int64), self.group)


def split_queries(split: RankingSplit, fraction: float, seed: int = 0) -> tuple[RankingSplit, RankingSplit]:
    """Hold out a random ``fraction`` of the queries (whole queries, file order kept in both parts).

    For datasets published without a validation split (Istella): ``train, vali = split_queries(train,
    0.2)``. Returns ``(rest, held_out)``; the draw depends only on ``seed`` and the number of queries.
    """
    check_real(fraction, "fraction", "split_queries", low=0.0, high=1.0, low_open=True, high_open=True)
    check_int(seed, "seed", "split_queries", low=0)
    n_held = round(fraction * split.n_queries)
    if not 0 < n_held < split.n_queries:
        raise ValueError(
            f"split_queries: a fraction of {fraction} of {split.n_queries} queries holds out {n_held}; "
            "both parts need at least one query. Use a fraction between 1/n_queries and 1 - 1/n_queries."
        )
    held = np.zeros(split.n_queries, dtype=bool)
    held[np.random.default_rng(seed).choice(split.n_queries, size=n_held, replace=False)] = True
    return _take_queries(split, ~held), _take_queries(split, held)


def _take_queries(split: RankingSplit, keep: np.ndarray) -> RankingSplit:
    rows = np.repeat(keep, split.group)
    return RankingSplit(split.X[rows], split.y[rows], split.qid[rows], split.group[keep])


def cache_dir() -> Path:
    """Where parsed files are cached: ``$STOCHRANK_CACHE``, else ``$XDG_CACHE_HOME/stochrank``, else
    ``~/.cache/stochrank``."""
    if os.environ.get("STOCHRANK_CACHE"):
        return Path(os.environ["STOCHRANK_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "stochrank"


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

    Built on :func:`sklearn.datasets.load_svmlight_file` (``query_id=True``); ``.gz`` and ``.bz2`` files
    are read directly.

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
        key is the resolved path, size and modification time of the file (and of the query file) and the
        parse options, so an edited file is parsed again.

    Returns
    -------
    RankingSplit
        Rows in file order; ``group`` from the contiguous runs of qid (or from the query file).

    Raises
    ------
    FileNotFoundError
        If ``path`` (or ``query_file``) does not exist.
    ValueError
        Empty file, rows without qid (and no query file), a feature index above ``n_features``, a query
        file that does not match the rows, unparsable lines, or (``repeated_qid="error"``) split queries.
    """
    check_choice(repeated_qid, "repeated_qid", "load_svmlight_ranking", _REPEATED_QID)
    check_optional_int(
        n_features, "n_features", "load_svmlight_ranking", low=1, none_means="from the file"
    )
    if dtype not in (np.float32, np.float64):
        raise ValueError(
            "The 'dtype' parameter of load_svmlight_ranking must be np.float32 or np.float64. "
            f"Got {dtype!r} instead."
        )
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No ranking file at {path}.")
    if query_file is None and not _has_qid(path):
        query_file = _companion_query_file(path)
    if query_file is not None:
        query_file = Path(query_file)
        if not query_file.is_file():
            raise FileNotFoundError(f"No query (group size) file at {query_file}.")

    options = (n_features, bool(zero_based), np.dtype(dtype).str, bool(allow_nan))
    store = _cache_path(path, query_file, options, cache) if cache is not False else None
    parsed = _read_cache(store) if store is not None else None
    if parsed is None:
        parsed = _parse(path, query_file, n_features, zero_based, dtype, allow_nan)
        if store is not None:
            _write_cache(store, parsed)
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
    from sklearn.datasets import load_svmlight_file

    try:
        X, y, qid = load_svmlight_file(
            str(path), n_features=n_features, zero_based=zero_based, query_id=True, dtype=dtype
        )
    except ValueError as exc:
        text = str(exc)
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
    X = X.toarray()
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
    if sizes.ndim != 1 or sizes.size == 0 or (sizes < 1).any() or (sizes != np.round(sizes)).any():
        raise ValueError(f"{query_file} must hold one positive integer group size per line.")
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


def _open_text(path: Path) -> Any:
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return gzip.open(path, "rt", errors="replace")
    if suffix == ".bz2":
        return bz2.open(path, "rt", errors="replace")
    return open(path, errors="replace")


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
def _cache_path(
    path: Path, query_file: Path | None, options: tuple[Any, ...], cache: bool | str | os.PathLike[str]
) -> Path:
    """``<name>-<digest of what is read and how>-<digest of the files' size and mtime>.npz``: a changed
    file gets a new name, and :func:`_write_cache` deletes the entry it replaces."""
    directory = cache_dir() if cache is True else Path(cache).expanduser()
    what = repr(
        (_CACHE_FORMAT, str(path.resolve()), str(query_file.resolve()) if query_file else None, options)
    )
    stats = repr([_stat_key(path)] + ([_stat_key(query_file)] if query_file is not None else []))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(path.resolve().parts[-3:]))[-80:]
    return directory / f"{stem}-{_digest(what)}-{_digest(stats)}.npz"


def _stat_key(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_cache(store: Path) -> tuple[np.ndarray, ...] | None:
    if not store.is_file():
        return None
    try:
        with np.load(store, allow_pickle=False) as arrays:
            return tuple(arrays[name] for name in ("X", "y", "qid", "group"))
    except (OSError, ValueError, KeyError, EOFError):  # truncated or foreign file: parse again
        return None


def _write_cache(store: Path, parsed: tuple[np.ndarray, ...]) -> None:
    """Write atomically (temporary file + rename: safe with parallel workers) and delete the entries of
    earlier versions of the same file read the same way."""
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=store.parent, prefix=".tmp-", suffix=".npz")
        try:
            os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; the cache may be shared
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **dict(zip(("X", "y", "qid", "group"), parsed, strict=True)))
            os.replace(tmp, store)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        source_prefix = store.name.rsplit("-", 1)[0] + "-"
        for old in store.parent.glob(f"{_glob_escape(source_prefix)}*.npz"):
            if old != store:
                old.unlink(missing_ok=True)
    except OSError as exc:
        warnings.warn(f"stochrank could not write its dataset cache {store} ({exc}); loading without it.",
                      RuntimeWarning, stacklevel=3)  # fmt: skip


def _glob_escape(text: str) -> str:
    return re.sub(r"([\[\]*?])", r"[\1]", text)
