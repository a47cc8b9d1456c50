"""Learning-to-rank datasets in their official layouts: LETOR 3.0/4.0, MSLR-WEB, Yahoo! LTR, Istella.

>>> from stochrank.datasets import load, DATASETS
>>> train = load("mq2008", fold=1, split="train")          # bundled: no download
>>> train.X.shape, train.n_queries
((9630, 46), 471)
>>> DATASETS["mslr-web30k"].folds, DATASETS["mslr-web30k"].n_features
((1, 2, 3, 4, 5), 136)

Other datasets are read from a local data root (``root=`` or ``$STOCHRANK_DATA``), each in its publisher's
folder layout (``DATASETS[name].layouts``): ``<root>/MQ2007/Fold1/train.txt``,
``<root>/OHSUMED/QueryLevelNorm/Fold1/train.txt``, ``<root>/MSLR-WEB30K/Fold1/vali.txt``,
``<root>/ltrc_yahoo/set1.valid.txt``, ``<root>/istella/full/test.txt``, ``<root>/istella-s/sample/train.txt``;
``.gz``/``.bz2`` copies are read as well. A missing dataset raises ``FileNotFoundError`` with the path
looked for and where to obtain it. Files are parsed by ``sklearn.datasets.load_svmlight_file`` and the
result is cached as ``.npz`` in :func:`cache_dir`, keyed by each file's absolute path and content (SHA-256);
the cache is capped at ``$STOCHRANK_CACHE_MAX_MB`` MiB (default 4096) by evicting the least recently used
entries, and :func:`clear_cache` (``python -m stochrank.datasets clear-cache``) empties it.

Conventions
-----------
* Rows stay in file order; a query is a contiguous run of equal qid (MQ2008's Fold4/Fold5 training files
  are not sorted by qid, so sorting or ``np.unique`` would be wrong). A qid that reappears after another
  query starts a new query, as LETOR files are contiguous blocks; ``load_svmlight_ranking(...,
  repeated_qid="error")`` refuses such files instead. Boosters that want sorted query ids (XGBoost's
  ``qid``) should get ``split.query_index`` or ``group=split.group``.
* ``X`` is dense: float64 for MQ2007/MQ2008/OHSUMED, float32 for the web-scale sets
  (``DATASETS[name].dtype``).
* Labels are float64 integer grades inside ``DATASETS[name].labels``; a file with others is refused.
"""

from ._cache import cache_dir
from ._eviction import DEFAULT_MAX_MB, CacheInfo, cache_info, clear_cache
from ._normalize import query_level_norm
from ._registry import DATASETS, DatasetSpec, data_root, load, load_mq2008
from ._split import RankingSplit, split_queries
from ._svmlight import load_svmlight_ranking

__all__ = [
    "DATASETS",
    "DEFAULT_MAX_MB",
    "CacheInfo",
    "DatasetSpec",
    "RankingSplit",
    "cache_dir",
    "cache_info",
    "clear_cache",
    "data_root",
    "load",
    "load_mq2008",
    "load_svmlight_ranking",
    "query_level_norm",
    "split_queries",
]
