"""A stochrank objective as CatBoost's built-in ``StochasticRank`` loss: the loss string and its caveats.

:func:`objective_settings` is the one place that reads an objective's configuration; everything else in
this package works from the :class:`ObjectiveSettings` it returns. From those settings this module
builds the loss string (:func:`native_loss`), the eval metric both engines early-stop on
(:func:`_default_eval_metric`), CatBoost's SGLB parameters, and the documented deviations of CatBoost's
derivatives (:class:`CatBoostDeviationWarning`, with their measured sizes). It refuses what CatBoost has
no equivalent for and what crashes it (``mrr(k=K)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..objectives import SGLB, RankingObjective, StochasticRankObjective

__all__ = [
    "LOSS_KEYS",
    "OWNED_PARAMS",
    "CatBoostDeviationWarning",
    "NoCatBoostEquivalent",
    "ObjectiveSettings",
    "native_crash",
    "native_loss",
    "native_training",
    "objective_settings",
    "translate",
]

# The keys CatBoost's StochasticRank reads from the loss string; CatBoost *silently ignores* any other,
# so native_loss only ever writes these.
LOSS_KEYS = frozenset(
    {"metric", "top", "type", "denominator", "decay", "sigma", "num_estimations", "mu", "nu", "lambda"}
)
_METRIC = {"ndcg": "NDCG", "dcg": "DCG", "err": "ERR", "pfound": "PFound", "mrr": "MRR", "lso": "FilteredDCG"}
_GAIN = {"exp": "Exp", "linear": "Base"}
_DISCOUNT = {"log": "LogPosition", "position": "Position"}

# CatBoost parameters the objective sets; CatBoost would otherwise train something else under the same name.
OWNED_PARAMS = {
    "loss_function": (
        "the objective sets it: pass objective=stochrank.ndcg(...) (or another stochrank objective)"
    ),
    "objective": "pass the objective as CatBoostRanker(objective=...)",
    "custom_loss": "the objective sets the loss",
    "langevin": "pass sglb=stochrank.SGLB(...) to the objective",
    "diffusion_temperature": "pass sglb=stochrank.SGLB(temperature=...) to the objective",
    "model_shrink_rate": "pass sglb=stochrank.SGLB(shrink_rate=...) to the objective",
    "model_shrink_mode": "pass sglb=stochrank.SGLB(shrink_mode=...) to the objective",
    "posterior_sampling": "pass sglb=stochrank.SGLB(temperature=n_objects, shrink_rate=1/(2 n_objects))",
    "leaf_estimation_method": (
        "StochasticRank has only the Gradient method (stochrank's unit Hessian), which is used"
    ),
}

# Measured in tests/test_catboost_parity.py (shared/notes/catboost-stochasticrank.md): the size of each
# documented disagreement, quoted by the warnings.
_SIGMA_DEVIATION = (
    "CatBoost conditions document d on m_d = a_d + (sum_j z_j - sigma z_d)/(n - 1) (noise sum not scaled "
    "by sigma) where the conditional mean is a_d + sigma mean_(j != d) z_j: at sigma = 0.3 its Der1 is off "
    "by 1.9e-2 (26 of its standard errors) from a finite-difference gradient of the smoothed metric, "
    "stochrank's by 1.4e-3 (2.7 standard errors; benchmarks/RESULTS.md §6). They agree only at sigma = 1."
)


class CatBoostDeviationWarning(UserWarning):
    """CatBoost's built-in StochasticRank computes something other than the stochrank objective asked for.

    Raised by :func:`native_loss` (and the native engine of :class:`CatBoostRanker`) for the documented
    differences: sigma != 1, ERR, MRR with a cut-off, PFound with a cut-off and labels equal to 1, query
    weights. Use ``engine="stochrank"`` for stochrank's gradients on CatBoost trees instead.
    """


class NoCatBoostEquivalent(ValueError):
    """The objective has no CatBoost StochasticRank loss string."""


# ------------------------------------------------------------------------- reading the objective
@dataclass(frozen=True)
class ObjectiveSettings:
    """What the CatBoost wrapper needs to know about an objective (built by :func:`objective_settings`)."""

    text: str  # repr(objective), quoted in messages
    metric: str | None  # the StochasticRank metric ('ndcg', ..., 'lso'); None for any other objective
    k: int | None  # the cut-off; None: the whole list
    gain: str  # 'exp' or 'linear'; 'exp' for objectives without one
    discount: str  # 'log' or 'position'; 'log' for objectives without one
    seed: int | None  # None for objectives that are not stochrank's
    sglb: SGLB | None
    # A StochasticRank objective's settings (sigma, mu, nu, sfa, n_samples, max_grade, decay, threshold,
    # order, where its metric has them); empty for any other objective.
    options: Mapping[str, Any]


def objective_settings(objective: object) -> ObjectiveSettings:
    """Read what this package uses of ``objective``: a stochrank objective or any protocol callable."""
    if not isinstance(objective, RankingObjective):
        return ObjectiveSettings(
            repr(objective), None, getattr(objective, "k", None), "exp", "log", None, None, {}
        )
    params = objective.parameters()
    metric = objective.metric if isinstance(objective, StochasticRankObjective) else None
    if isinstance(objective, StochasticRankObjective):  # the leaves and SFA in effect, defaults resolved
        params.update(hessian=objective.smoothing.hessian, sfa=objective.smoothing.sfa)
    return ObjectiveSettings(
        text=repr(objective),
        metric=metric,
        k=objective.k,
        gain=params.get("gain", "exp"),
        discount=params.get("discount", "log"),
        seed=objective.seed,
        sglb=objective.sglb,
        options=params if metric is not None else {},
    )


def native_crash(objective: object) -> str | None:
    """Why CatBoost's own StochasticRank cannot train ``objective`` (it crashes), or None."""
    s = objective_settings(objective)
    if s.metric == "mrr" and s.k is not None:
        return (
            f"CatBoost 1.2.10 crashes the Python process (segmentation fault) training "
            f"StochasticRank:metric=MRR;top={s.k} on queries of realistic length (MQ2008: 20 queries "
            "suffice), so CatBoostRanker does not run it natively."
        )
    return None


# ------------------------------------------------------------------------------------- the loss string
# stochrank objectives CatBoost's StochasticRank loss has no metric for.
_NO_NATIVE = {"auc": "AUC", "map": "MAP", "precision": "precision@k"}


def _fmt(x: float) -> str:
    return repr(float(x))


def translate(objective: object) -> tuple[str, list[str]]:
    """(loss string, deviations) for a StochasticRank objective; raises NoCatBoostEquivalent."""
    s = objective_settings(objective)
    if s.metric is None:
        raise NoCatBoostEquivalent(
            f"CatBoost has a built-in loss only for stochrank's StochasticRank objectives (stochrank.ndcg, "
            f"dcg, err, pfound, mrr, lso); got {s.text}. Train it with CatBoostRanker(engine='stochrank')."
        )
    metric, c, owner = s.metric, s.options, s.text
    external = "Use CatBoostRanker(objective, engine='stochrank') to train it on CatBoost trees."
    if metric in _NO_NATIVE:
        raise NoCatBoostEquivalent(
            f"{owner}: CatBoost's StochasticRank loss has no {_NO_NATIVE[metric]} metric (it refuses MAP). "
            f"{external}"
        )
    if c["hessian"] == "newton":
        raise NoCatBoostEquivalent(
            f"{owner}: CatBoost's StochasticRank has gradient leaves only (leaf_estimation_method="
            "Gradient, no Newton), so it cannot train Newton leaves. Pass hessian='unit' for CatBoost's "
            f"own loss, or: {external}"
        )
    deviations: list[str] = []
    terms: dict[str, str] = {"metric": _METRIC[metric]}
    if s.k is not None:
        terms["top"] = str(s.k)
    if metric in ("ndcg", "dcg", "lso"):
        terms["type"] = _GAIN[s.gain]
        terms["denominator"] = _DISCOUNT[s.discount]
    if metric in ("err", "pfound") and c["max_grade"] is not None:
        raise NoCatBoostEquivalent(
            f"{owner}: CatBoost's {_METRIC[metric]} uses the labels directly as probabilities in [0, 1]; it "
            "has no max_grade (R = (2^r - 1)/2^G). Map the labels yourself and drop max_grade, or: "
            f"{external}"
        )
    if metric == "pfound":
        terms["decay"] = _fmt(c["decay"])
    if metric == "mrr" and c["threshold"] != 0.0:
        raise NoCatBoostEquivalent(
            f"{owner}: CatBoost's MRR objective counts a document as relevant when its label is > 0; it has "
            f"no threshold (got threshold={c['threshold']}). Binarise the labels yourself, or: {external}"
        )
    if metric == "lso":
        if c["order"] != "score":
            raise NoCatBoostEquivalent(
                f"{owner}: lso(order='input') is the paper's LSO (shown documents keep their row order); "
                "CatBoost's FilteredDCG ranks the shown documents by noisy score, which is "
                f"lso(order='score'). {external}"
            )
        if c["sfa"] != 0.0:
            raise NoCatBoostEquivalent(
                f"{owner}: stochrank's SFA for lso projects on the raw scores; CatBoost's FilteredDCG "
                "projects on scores centred together with its threshold document. Use sfa=0 (CatBoost's "
                f"default), or: {external}"
            )
    terms["sigma"] = _fmt(c["sigma"])
    if metric != "lso":
        terms["mu"] = _fmt(c["mu"])
    terms["nu"] = _fmt(c["nu"])
    terms["lambda"] = _fmt(c["sfa"])
    terms["num_estimations"] = str(c["n_samples"])
    if c["sigma"] != 1.0 and metric != "lso":
        deviations.append(f"{owner}: sigma={c['sigma']} != 1. {_SIGMA_DEVIATION}")
    if metric == "err":
        deviations.append(
            f"{owner}: CatBoost's ERR metric differences are wrong (a spurious (p'+2)/(p'+1) factor for "
            "moves down; with top < n the document pushed out of the top is subtracted with the wrong "
            "weight), so its derivative is not the gradient of smoothed ERR (3.1e-3 = 106 standard errors "
            "off on an 8-document query, tests/test_catboost_parity.py)."
        )
    if metric == "mrr" and s.k is not None:
        deviations.append(
            f"{owner}: CatBoost's MRR objective ignores the cut-off top={s.k} in its metric differences: it "
            "follows the gradient of whole-list MRR, not of MRR@k."
        )
    assert set(terms) <= LOSS_KEYS
    return "StochasticRank:" + ";".join(f"{key}={value}" for key, value in terms.items()), deviations


def native_loss(objective: StochasticRankObjective) -> str:
    """Return CatBoost's loss string for a stochrank objective, e.g. ``'StochasticRank:metric=NDCG;...'``.

    Every setting is written explicitly, and only under the keys CatBoost's StochasticRank reads (it
    silently ignores unknown ones):

    ======================  ==========================================================
    stochrank               CatBoost loss-string key
    ======================  ==========================================================
    the constructor         ``metric=NDCG/DCG/ERR/PFound/MRR`` for ndcg/dcg/err/pfound/mrr
    lso(order='score')      ``metric=FilteredDCG``
    k                       ``top`` (omitted for None: the whole list)
    gain 'exp' / 'linear'   ``type=Exp`` / ``type=Base``
    discount 'log'/'pos.'   ``denominator=LogPosition`` / ``Position``
    decay (pfound)          ``decay``
    sigma, mu, nu           ``sigma``, ``mu`` (not for FilteredDCG), ``nu``
    sfa                     ``lambda``
    n_samples               ``num_estimations``
    ======================  ==========================================================

    ``seed`` and ``sglb`` are training parameters, not loss keys: :class:`CatBoostRanker` maps them to
    ``random_seed`` and ``langevin`` / ``diffusion_temperature`` / ``model_shrink_rate`` /
    ``model_shrink_mode``.

    Parameters
    ----------
    objective : StochasticRankObjective
        ``stochrank.ndcg(...)``, ``dcg``, ``err``, ``pfound``, ``mrr`` or ``lso(order='score')``.

    Returns
    -------
    str
        The loss string, for ``catboost.CatBoost({'loss_function': ...})``.

    Raises
    ------
    ValueError
        ``NoCatBoostEquivalent``, when CatBoost has no equivalent: Newton leaves (``hessian='newton'``,
        the default of ``ndcg``, ``dcg``, ``err``, ``pfound`` and ``mrr``: CatBoost's StochasticRank has
        gradient leaves only, so pass ``hessian='unit'``), ``auc``/``map``/``precision``, ``err``/
        ``pfound`` with ``max_grade``, ``mrr`` with ``threshold != 0`` (CatBoost: label > 0),
        ``lso(order='input')``, ``lso`` with ``sfa > 0``, or an objective that is not a StochasticRank
        one.

    Warns
    -----
    CatBoostDeviationWarning
        Where CatBoost's derivative is documented to differ from stochrank's (measured in
        ``tests/test_catboost_parity.py``): ``sigma != 1`` (except lso), ``err`` (any k), ``mrr`` with
        ``k``. ``pfound`` with ``k`` differs only for labels exactly 1; :class:`CatBoostRanker` checks the
        labels and warns then.

    Examples
    --------
    >>> import stochrank
    >>> from stochrank.catboost import native_loss
    >>> native_loss(stochrank.ndcg(k=5, hessian="unit"))  # doctest: +ELLIPSIS
    'StochasticRank:metric=NDCG;top=5;type=Exp;denominator=LogPosition;sigma=1.0;mu=0.0;nu=0.01;...'
    >>> native_loss(stochrank.ndcg(k=5))  # Newton leaves, the default  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    NoCatBoostEquivalent: ... CatBoost's StochasticRank has gradient leaves only ...
    """
    loss, deviations = translate(objective)
    for text in deviations:
        warnings.warn(text, CatBoostDeviationWarning, stacklevel=2)
    return loss


def native_training(
    objective: object, labels: npt.NDArray[np.float64], weights: npt.NDArray[np.float64] | None
) -> tuple[dict[str, Any], list[str]]:
    """CatBoost parameters that train ``objective`` natively on these data, and the deviations to warn of.

    The parameters are the loss string and SGLB as CatBoost's Langevin boosting; the deviations those of
    :func:`translate` plus the ones that depend on the labels (PFound@k, labels exactly 1) and on unequal
    query weights ``weights``.
    """
    loss, deviations = translate(objective)
    s = objective_settings(objective)
    if s.metric == "pfound" and s.k is not None and np.any(labels == 1.0):
        deviations.append(
            f"{s.text}: with top < n and labels exactly 1, CatBoost's PFound difference misses the "
            "document that moves up into the top (85 standard errors off on an 8-document query)."
        )
    if weights is not None and np.unique(weights).size > 1:
        deviations.append(
            "CatBoost ignores query weights in StochasticRank's derivatives (it uses them only in the leaf "
            "denominators); stochrank multiplies a query's gradients by its weight."
        )
    params: dict[str, Any] = {"loss_function": loss}
    if s.sglb is not None:
        params.update(
            langevin=True,
            diffusion_temperature=s.sglb.temperature,
            model_shrink_rate=s.sglb.rate,
            model_shrink_mode="Constant" if s.sglb.shrink_mode == "constant" else "Decreasing",
        )
    return params, deviations


def _default_eval_metric(objective: object) -> str | None:
    """Return the CatBoost eval metric scoring what the objective optimises (both engines early-stop on it).

    NDCG with the objective's k, gain and discount for ndcg and for any objective whose config has a
    gain and a discount (softrank): the metric :meth:`CatBoostRanker.score` reports. None for err /
    pfound with ``max_grade``: CatBoost's ERR and PFound read the labels as probabilities and cannot
    map grades r to (2^r - 1)/2^G, so no CatBoost metric string scores them; None for auc too: CatBoost's
    ``QueryAUC:type=Ranking`` counts every pair of different labels (graded), not label > threshold.
    ``MAP:top=k;border=t`` and ``PrecisionAt:top=k;border=t`` score map and precision.
    """
    s = objective_settings(objective)
    c = s.options
    top = "" if s.k is None else f"top={s.k};"
    if s.metric == "lso":  # CatBoost's FilteredDCG metric: approx >= 0 in input order
        return f"FilteredDCG:type={_GAIN[s.gain]};denominator={_DISCOUNT[s.discount]}"
    if (s.metric in ("err", "pfound") and c["max_grade"] is not None) or s.metric == "auc":
        return None
    if s.metric == "map":
        return f"MAP:{top}border={_fmt(c['threshold'])}"
    if s.metric == "precision":
        return f"PrecisionAt:top={s.k};border={_fmt(c['threshold'])}"
    if s.metric == "pfound":
        return f"PFound:{top}decay={_fmt(c['decay'])}"
    if s.metric == "mrr":
        return f"MRR:{top}border={_fmt(c['threshold'])}"
    if s.metric == "err":
        return f"ERR:top={s.k}" if s.k is not None else "ERR"
    name = "NDCG" if s.metric is None else _METRIC[s.metric]  # ndcg, dcg; NDCG for any other objective
    top = "" if s.k is None else f"top={int(s.k)};"
    return f"{name}:{top}type={_GAIN[s.gain]};denominator={_DISCOUNT[s.discount]}"
