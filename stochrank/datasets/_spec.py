"""What stochrank knows about one named dataset (:class:`DatasetSpec`) and the split names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ._split import RankingSplit

__all__ = ["SPLITS", "DatasetSpec"]

SPLITS = ("train", "vali", "test")


@dataclass(frozen=True)
class DatasetSpec:
    """What stochrank knows about one named dataset.

    Attributes
    ----------
    name : str
        The name :func:`load` takes.
    title : str
        The publisher's name for it.
    layouts : tuple of str
        File path templates under the data root, ``{fold}`` and ``{split}`` filled in; the first is the
        official layout (named in error messages), later ones are tolerated variants. ``.gz``/``.bz2``
        copies of any of them are read too.
    folds : tuple of int
        Fold numbers (``(1,)`` for datasets published as one split).
    splits : tuple of str
        Split names :func:`load` accepts (``"train"``, ``"vali"``, ``"test"``; Istella has no ``"vali"``).
    n_features : int
        Feature columns (indices 1..n_features in the files).
    labels : tuple of int
        (lowest, highest) relevance grade; every label is an integer in this range.
    dtype : numpy float type
        Storage type of ``X``: float64 for the small LETOR sets, float32 for the web-scale ones (half the
        memory; LightGBM and XGBoost bin features into histograms either way, CatBoost stores float32).
    url, terms : str
        Where to obtain it and on which terms (licence, citation).
    notes : str
        Features and preprocessing facts worth knowing before comparing numbers.
    split_files : mapping
        File-name token per split where the publisher's differs from the split name (Yahoo: ``valid``).
    bundled : Path or None
        Folder of a copy shipped with stochrank (MQ2008, CatBoost's and LightGBM's example data); the data
        root is then ignored.
    loader : callable or None
        ``loader(fold, split) -> RankingSplit`` for datasets that are not read fold by fold from files:
        pooled small sets with rotated query folds, generated synthetic data. ``layouts`` is then empty.
    gain : {"exp", "linear"}
        The NDCG gain comparisons on this dataset use (``2^r - 1`` or ``r``): linear for CatBoost's
        query-wise data, whose grades encode real-valued targets.
    """

    name: str
    title: str
    layouts: tuple[str, ...]
    folds: tuple[int, ...]
    splits: tuple[str, ...]
    n_features: int
    labels: tuple[int, int]
    dtype: type
    url: str
    terms: str
    notes: str = ""
    split_files: Mapping[str, str] = field(default_factory=dict)
    bundled: Path | None = None
    loader: Callable[[int, str], RankingSplit] | None = None
    gain: str = "exp"

    def candidates(self, root: Path, fold: int, split: str) -> list[Path]:
        """Every path the files of (fold, split) may have under ``root``, official layout first."""
        token = self.split_files.get(split, split)
        paths = [root / layout.format(fold=fold, split=token) for layout in self.layouts]
        return [p.with_name(p.name + ext) for p in paths for ext in ("", ".gz", ".bz2")]
