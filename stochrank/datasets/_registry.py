"""The named learning-to-rank datasets, their official file layouts, and :func:`load`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .._validation import check_choice, check_int
from ..data import CATBOOST_QUERYWISE_DIR, LIGHTGBM_EXAMPLE_DIR, MQ2008_DIR
from . import _pooled
from ._normalize import query_level_norm
from ._spec import SPLITS, DatasetSpec
from ._split import RankingSplit
from ._svmlight import read_ranking_file
from .synthetic import nonlinear_mslr

__all__ = ["DATASETS", "DatasetSpec", "data_root", "load", "load_mq2008"]

DEFAULT_ROOT = Path("~/stochrank_data")
NORMALIZATIONS = ("query",)

_LETOR_PAGE = "https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval"
_LETOR3_URL = f"{_LETOR_PAGE}/letor-3-0/"
_LETOR4_URL = f"{_LETOR_PAGE}/letor-4-0/"
_LETOR4_TERMS = (
    "Microsoft Research, research use after accepting the online agreement; cite T. Qin and T.-Y. Liu, "
    "Introducing LETOR 4.0 Datasets, arXiv:1306.2597, 2013"
)
_MSLR_URL = "https://www.microsoft.com/en-us/research/project/mslr/"
_YAHOO_URL = "https://webscope.sandbox.yahoo.com/catalog.php?datatype=c"
_YAHOO_TERMS = (
    "Yahoo! Webscope C14 (Learning to Rank Challenge v1.0): request it and accept the Webscope licence "
    "(non-commercial research, no redistribution); cite O. Chapelle and Y. Chang, Yahoo! Learning to Rank "
    "Challenge Overview, JMLR W&CP 14, 2011"
)
_ISTELLA_URL = "http://quickrank.isti.cnr.it/istella-dataset/"
_ISTELLA_TERMS = (
    "Istella LETOR licence, non-commercial use only; cite D. Dato et al., Fast Ranking with Additive "
    "Ensembles of Oblivious and Non-Oblivious Regression Trees, ACM TOIS 35(2), 2016"
)


_FIVE_FOLDS = (1, 2, 3, 4, 5)
_ONE_FOLD = (1,)
_ROTATED = (
    "no official split: train and test are pooled and cut into 5 query parts by a seeded permutation "
    "(numpy default_rng(0)); fold f tests on part f, validates on part f + 1 (part 1 after part 5) and "
    "trains on the other three, so every query is tested exactly once over the 5 folds"
)
SYNTHETIC_SIZES = {"train": 10_000, "vali": 2_000, "test": 9_000}


def _rotated_loader(pool: Callable[[], RankingSplit]) -> Callable[[int, str], RankingSplit]:
    def load_fold(fold: int, split: str) -> RankingSplit:
        return _pooled.rotate(pool(), fold, split)

    return load_fold


def _synthetic_nonlinear(fold: int, split: str) -> RankingSplit:
    # One generator stream per (fold, split): the splits are independent draws of the same model.
    stream = np.random.SeedSequence([fold, SPLITS.index(split)])
    return nonlinear_mslr(SYNTHETIC_SIZES[split], seed=int(stream.generate_state(1)[0]))


_RAW_SENTINEL = "Raw features; the 1.8e308 sentinel values are clipped to float32's maximum (order kept)."

_SPECS = [
    DatasetSpec(
        name="mq2008",
        title="LETOR 4.0 MQ2008",
        layouts=("MQ2008/Fold{fold}/{split}.txt",),
        folds=_FIVE_FOLDS,
        splits=SPLITS,
        n_features=46,
        labels=(0, 2),
        dtype=np.float64,
        url=_LETOR4_URL,
        terms=_LETOR4_TERMS,
        notes="Bundled with stochrank (QueryLevelNorm features, the root is ignored). 784 queries, "
        "15,211 rows; "
        "28% of the queries have no relevant document. Fold4/Fold5 train files are not sorted by qid.",
        bundled=MQ2008_DIR,
    ),
    DatasetSpec(
        name="mq2007",
        title="LETOR 4.0 MQ2007",
        layouts=("MQ2007/Fold{fold}/{split}.txt",),
        folds=_FIVE_FOLDS,
        splits=SPLITS,
        n_features=46,
        labels=(0, 2),
        dtype=np.float64,
        url=_LETOR4_URL,
        terms=_LETOR4_TERMS,
        notes="Supervised-ranking archive MQ2007.rar, QueryLevelNorm features in Fold1..Fold5. "
        "~1,700 queries.",
    ),
    DatasetSpec(
        name="ohsumed",
        title="LETOR 3.0 OHSUMED",
        layouts=("OHSUMED/QueryLevelNorm/Fold{fold}/{split}.txt",),
        folds=_FIVE_FOLDS,
        splits=SPLITS,
        n_features=45,
        labels=(0, 2),
        dtype=np.float64,
        url=_LETOR3_URL,
        terms="Microsoft Research, research use; cite T. Qin, T.-Y. Liu, J. Xu and H. Li, LETOR: A benchmark "
        "collection for research on learning to rank for information retrieval, Information Retrieval "
        "13(4), 2010",
        notes="LETOR 3.0 OHSUMED, QueryLevelNorm version (the archive also has Feature-min and "
        "Feature-null). "
        "106 queries, 16,140 rows.",
    ),
    *(
        DatasetSpec(
            name=f"mslr-web{size.lower()}",
            title=f"MSLR-WEB{size}",
            layouts=(f"MSLR-WEB{size}/Fold{{fold}}/{{split}}.txt",),
            folds=_FIVE_FOLDS,
            splits=SPLITS,
            n_features=136,
            labels=(0, 4),
            dtype=np.float32,
            url=_MSLR_URL,
            terms="Microsoft Research, research use; cite T. Qin and T.-Y. Liu, Introducing LETOR 4.0 "
            "Datasets, arXiv:1306.2597, 2013",
            notes=f"Raw (unnormalised) features; ~{queries} queries. Unzip MSLR-WEB{size}.zip into "
            f"<root>/MSLR-WEB{size}/ (the zip holds Fold1..Fold5).",
        )
        for size, queries in (("10K", "10,000"), ("30K", "31,531"))
    ),
    *(
        DatasetSpec(
            name=f"yahoo-set{s}",
            title=f"Yahoo! Learning to Rank Challenge Set {s}",
            layouts=(
                f"ltrc_yahoo/set{s}.{{split}}.txt",
                f"Learning to Rank Challenge/ltrc_yahoo/set{s}.{{split}}.txt",
            ),
            folds=_ONE_FOLD,
            splits=SPLITS,
            n_features=700,
            labels=(0, 4),
            dtype=np.float32,
            url=_YAHOO_URL,
            terms=_YAHOO_TERMS,
            notes="Features already normalised to [0, 1] by the publisher; sparse (Set 1 uses 519 of the 700 "
            "indices). One official split: fold 1.",
            split_files=MappingProxyType({"vali": "valid"}),
        )
        for s in (1, 2)
    ),
    DatasetSpec(
        name="istella",
        title="Istella LETOR (full)",
        layouts=("istella/full/{split}.txt", "istella-letor/full/{split}.txt", "full/{split}.txt"),
        folds=_ONE_FOLD,
        splits=("train", "test"),
        n_features=220,
        labels=(0, 4),
        dtype=np.float32,
        url=_ISTELLA_URL,
        terms=_ISTELLA_TERMS,
        notes="istella-letor.tar.gz unpacks to full/{train,test}.txt: no validation split (hold out training "
        "queries with stochrank.datasets.split_queries). " + _RAW_SENTINEL,
    ),
    DatasetSpec(
        name="istella-s",
        title="Istella-S LETOR",
        layouts=("istella-s/sample/{split}.txt", "istella-s-letor/sample/{split}.txt", "sample/{split}.txt"),
        folds=_ONE_FOLD,
        splits=SPLITS,
        n_features=220,
        labels=(0, 4),
        dtype=np.float32,
        url=_ISTELLA_URL,
        terms=_ISTELLA_TERMS,
        notes="istella-s-letor.tar.gz unpacks to sample/{train,vali,test}.txt. " + _RAW_SENTINEL,
    ),
    DatasetSpec(
        name="catboost-querywise",
        title="CatBoost query-wise data",
        layouts=(),
        folds=_FIVE_FOLDS,
        splits=SPLITS,
        n_features=50,
        labels=(0, 6),
        dtype=np.float64,
        url="https://github.com/catboost/catboost/tree/master/catboost/pytest/data/querywise",
        terms="Apache-2.0 (CatBoost, (c) YANDEX LLC)",
        notes="Bundled with stochrank. 117 queries, 2,000 rows, 50 features; the real targets r in [0, 0.61] "
        "are encoded as grades round(10 r) in 0..6 and compared with linear gain; " + _ROTATED + ".",
        bundled=CATBOOST_QUERYWISE_DIR,
        loader=_rotated_loader(_pooled.catboost_querywise),
        gain="linear",
    ),
    DatasetSpec(
        name="lightgbm-example",
        title="LightGBM's lambdarank example data",
        layouts=(),
        folds=_FIVE_FOLDS,
        splits=SPLITS,
        n_features=300,
        labels=(0, 4),
        dtype=np.float64,
        url="https://github.com/microsoft/LightGBM/tree/master/examples/lambdarank",
        terms="MIT (LightGBM, (c) Microsoft Corporation)",
        notes="Bundled with stochrank. 251 queries, 3,773 rows, 300 sparse features (stored dense), grades "
        "0..4; " + _ROTATED + ".",
        bundled=LIGHTGBM_EXAMPLE_DIR,
        loader=_rotated_loader(_pooled.lightgbm_example),
    ),
    DatasetSpec(
        name="synthetic-nonlinear",
        title="synthetic nonlinear MSLR-shaped data (generated, not real)",
        layouts=(),
        folds=_ONE_FOLD,
        splits=SPLITS,
        n_features=30,
        labels=(0, 4),
        dtype=np.float32,
        url="generated in memory by stochrank.datasets.synthetic.nonlinear_mslr",
        terms="generated by stochrank (no licence restrictions)",
        notes="SYNTHETIC. stochrank.datasets.synthetic.nonlinear_mslr: ~35 documents per query, 30 features, "
        "relevance nonlinear in the features with a hidden per-query topic, grades 0..4 at MSLR-WEB30K's "
        "skew; 10,000 train / 2,000 vali / 9,000 test queries, each split its own seeded draw. For quality "
        "claims about this generative model only.",
        loader=_synthetic_nonlinear,
    ),
    DatasetSpec(
        name="synthetic-mslr",
        title="synthetic MSLR-shaped data",
        layouts=("synthetic-mslr/Fold{fold}/{split}.txt",),
        folds=_ONE_FOLD,
        splits=SPLITS,
        n_features=136,
        labels=(0, 4),
        dtype=np.float32,
        url="generate it: python scripts/make_synthetic.py mslr --out <root>/synthetic-mslr",
        terms="generated by stochrank (no licence restrictions)",
        notes="stochrank.datasets.synthetic.mslr_like: ~120 documents per query, 136 features, grades 0..4 "
        "with MSLR-WEB30K's skew (52/32/13/2/1 %). For speed and scale, not for quality claims.",
    ),
]

DATASETS: Mapping[str, DatasetSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Return the directory that holds the datasets.

    That is ``root`` if given, else ``$STOCHRANK_DATA``, else ``~/stochrank_data``. Each dataset lives in
    its official folder below it, e.g. ``<root>/MSLR-WEB30K/Fold1/train.txt`` (see
    ``DATASETS[name].layouts``).
    """
    if root is None:
        root = os.environ.get("STOCHRANK_DATA") or DEFAULT_ROOT
    return Path(root).expanduser()


def load(
    name: str = "mq2008",
    fold: int = 1,
    split: str = "train",
    *,
    root: str | os.PathLike[str] | None = None,
    normalize: str | None = None,
    cache: bool | str | os.PathLike[str] = True,
) -> RankingSplit:
    """Load one split of a named learning-to-rank dataset from its official file layout.

    Parameters
    ----------
    name : str
        One of ``DATASETS``: ``"mq2008"`` (bundled, the default), ``"mq2007"``, ``"ohsumed"``,
        ``"mslr-web10k"``, ``"mslr-web30k"``, ``"yahoo-set1"``, ``"yahoo-set2"``, ``"istella"``,
        ``"istella-s"``, ``"catboost-querywise"`` and ``"lightgbm-example"`` (bundled, rotated query
        folds), ``"synthetic-nonlinear"`` (generated), ``"synthetic-mslr"``.
    fold : int
        Fold number, one of ``DATASETS[name].folds``.
    split : {"train", "vali", "test"}
        Split; ``DATASETS[name].splits`` lists what the dataset has.
    root : path-like or None
        Data root (see :func:`data_root`); ignored for the bundled and generated datasets.
    normalize : {None, "query"}
        ``"query"``: min-max scale every feature within every query (:func:`query_level_norm`, LETOR's
        QueryLevelNorm). The LETOR 3.0/4.0 files are already query-normalised; tree boosters do not need it.
    cache : bool or path-like
        Keep a binary copy of the parsed file (see :func:`load_svmlight_ranking`); a second load reads it.

    Returns
    -------
    RankingSplit
        ``X`` (``DATASETS[name].dtype``), ``y`` (float64, integer grades within ``DATASETS[name].labels``),
        ``qid`` and ``group`` (contiguous qid runs), rows in file order.

    Raises
    ------
    FileNotFoundError
        The dataset is not under the root: the message names the paths looked for, where to obtain the
        data and on which terms, and how to point stochrank at it.
    ValueError
        Unknown name, fold, split or normalisation (listing the valid ones), or a bad file: rows without
        qid, feature indices beyond ``n_features``, labels outside the dataset's grades, empty files.
    """
    check_choice(name, "name", "stochrank.datasets.load", tuple(DATASETS))
    spec = DATASETS[name]
    check_int(fold, "fold", "stochrank.datasets.load", low=1)
    if fold not in spec.folds:
        raise ValueError(
            f"The 'fold' parameter of stochrank.datasets.load must be one of {list(spec.folds)} for "
            f"{spec.title}. Got {fold} instead."
        )
    if split not in spec.splits:
        hint = ""
        if split == "vali":
            hint = " This dataset has no validation split: hold out training queries with split_queries."
        raise ValueError(
            f"The 'split' parameter of stochrank.datasets.load must be one of "
            f"{', '.join(repr(s) for s in spec.splits)} for {spec.title}. Got {split!r} instead.{hint}"
        )
    if normalize is not None:
        check_choice(normalize, "normalize", "stochrank.datasets.load", NORMALIZATIONS)

    if spec.loader is not None:
        data = spec.loader(fold, split)
        _check_labels(data.y, spec, spec.bundled or Path(spec.name))
        if normalize == "query":
            data = RankingSplit(query_level_norm(data.X, data.group), data.y, data.qid, data.group)
        return data
    path = _locate(spec, fold, split, root)
    data = read_ranking_file(
        path, spec.n_features, dtype=spec.dtype, repeated_qid="new_query", allow_nan=False, cache=cache
    )
    _check_labels(data.y, spec, path)
    if normalize == "query":
        data = RankingSplit(query_level_norm(data.X, data.group), data.y, data.qid, data.group)
    return data


def load_mq2008(
    fold: int = 1,
    split: str = "train",
    *,
    normalize: str | None = None,
    cache: bool | str | os.PathLike[str] = True,
) -> RankingSplit:
    """Load the bundled LETOR 4.0 MQ2008 ``Fold{fold}/{split}``: ``load("mq2008", fold, split)``.

    46 QueryLevelNorm features (float64), labels 0/1/2; the Fold4/Fold5 training files are not sorted by
    qid, so ``group`` comes from the contiguous runs of qid.
    """
    return load("mq2008", fold, split, normalize=normalize, cache=cache)


def _locate(spec: DatasetSpec, fold: int, split: str, root: str | os.PathLike[str] | None) -> Path:
    if spec.bundled is not None:
        base, origin = spec.bundled.parent, "the copy bundled with stochrank"
    else:
        base = data_root(root)
        origin = (
            "the root argument" if root is not None
            else "$STOCHRANK_DATA" if os.environ.get("STOCHRANK_DATA")
            else f"the default, {DEFAULT_ROOT}; set STOCHRANK_DATA or pass root="
        )  # fmt: skip
    candidates = spec.candidates(base, fold, split)
    found = next((p for p in candidates if p.is_file()), None)
    if found is not None:
        return found
    official = candidates[0]
    others = sorted(
        {str(p.with_suffix("")) if p.suffix in (".gz", ".bz2") else str(p) for p in candidates[3:]}
    )
    also = (
        f"\n  (also tried {', '.join(others)}, and .gz/.bz2 copies)" if others else " (and .gz/.bz2 copies)"
    )
    raise FileNotFoundError(
        f"{spec.title} ('{spec.name}') fold {fold} {split} split not found. Looked for\n  {official}{also}\n"
        f"under the data root {base} ({origin}).\n"
        f"Obtain it from {spec.url} ({spec.terms}).\n"
        f"Unpack it so that the file above exists, then pass root='/path/to/root' to stochrank.datasets.load "
        f"(--data-root for python -m stochrank.bench) or set STOCHRANK_DATA=/path/to/root."
    )


def _check_labels(y: np.ndarray, spec: DatasetSpec, path: Path) -> None:
    low, high = spec.labels
    bad = np.flatnonzero((y < low) | (y > high) | (y != np.round(y)))
    if bad.size:
        raise ValueError(
            f"{path} has {bad.size} labels that are not {spec.title}'s integer grades {low}..{high} (first: "
            f"{y[bad[0]]:g} in data row {bad[0]}). The file belongs to another dataset, or is corrupt; for "
            "other grades (any finite labels >= 0) use stochrank.datasets.load_svmlight_ranking."
        )
