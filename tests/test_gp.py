"""stochrank.gp: sparse GP moments against a dense GP, every analytic derivative against finite
differences, the SoftNDCG training objective against enumeration and the NDCG metric, GPRanker on MQ2008,
the risk parameter alpha, estimator conventions and errors.

Runtime ~20 s on a shared 2-vCPU machine (Numba kernels cached).
"""

from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct
from sklearn.utils.validation import check_random_state

from stochrank.datasets import load_mq2008
from stochrank.gp import GPRanker, SoftNDCG, SparseGP
from stochrank.gp._kernel import ard_linear, ard_linear_backward, ard_linear_diag, ard_linear_diag_backward
from stochrank.gp._sparse import GPState, posterior, predictive_moments, training_moments
from stochrank.metrics import ndcg

from .naive import naive_softrank_distribution

FORMS = ("fitc", "prototype")


def _state(form, n, d, m, seed, inducing=None, outputs=None):
    rng = np.random.default_rng(seed)
    return GPState(
        float(np.log(rng.uniform(0.5, 2.0))),
        rng.normal(0.3, 0.3, d),
        rng.normal(-1.5, 0.5, d),
        float(np.log(rng.uniform(0.05, 0.5))),
        rng.standard_normal((m, d)) if inducing is None else inducing.copy(),
        rng.standard_normal(m if form == "prototype" else n) if outputs is None else outputs.copy(),
    )


def _offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


# ------------------------------------------------------------------------------ dense GP (M = N)
@pytest.mark.parametrize("form", FORMS)
def test_sparse_forms_equal_dense_gp_when_prototypes_are_the_training_inputs(form):
    """With M = N prototypes at the training inputs and outputs = targets both forms are the exact GP:
    mean k*(K + σ²I)^-1 y and variance σ² + k** − k*(K + σ²I)^-1 k*, here from scikit-learn's
    GaussianProcessRegressor with the equivalent kernel c·RBF(λ) + η·x·x' (all η equal, alpha = σ²)."""
    rng = np.random.default_rng(3)
    n, d = 30, 3
    X, Xtest = rng.uniform(-2, 2, (n, d)), rng.uniform(-3, 3, (40, d))
    y = np.sin(X).sum(1) + 0.1 * rng.standard_normal(n)
    c, lengthscale, eta, noise = 1.3, np.array([0.7, 1.1, 1.9]), 0.2, 0.05
    state = GPState(np.log(c), np.log(lengthscale), np.full(d, np.log(eta)), np.log(noise), X, y)

    weights, P = posterior(form, state, X)
    mean, var = predictive_moments(state, weights, P, Xtest)

    kernel = ConstantKernel(c, "fixed") * RBF(lengthscale, "fixed") + ConstantKernel(
        eta, "fixed"
    ) * DotProduct(0.0, "fixed")
    dense = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None).fit(X, y)
    dense_mean, dense_std = dense.predict(Xtest, return_std=True)
    # FITC carries a 1e-6 relative jitter on K_uu; the prototype form is exact up to rounding
    tol = 1e-4 if form == "fitc" else 1e-9
    np.testing.assert_allclose(mean, dense_mean, rtol=tol, atol=tol)
    np.testing.assert_allclose(var, dense_std**2 + noise, rtol=tol, atol=tol)


@pytest.mark.parametrize("form", FORMS)
def test_training_moments_equal_prediction_at_the_training_inputs(form):
    """The training path (moments + backward) and the prediction path (posterior w, P) are one model."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    state = _state(form, 50, 4, 6, seed=1)
    mean, var, _ = training_moments(form, state, X)
    mean2, var2 = predictive_moments(state, *posterior(form, state, X), X)
    np.testing.assert_allclose(mean, mean2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, var2, rtol=1e-10, atol=1e-12)
    assert var.min() >= state.noise * (1 - 1e-9)  # the variance never drops below the noise


# --------------------------------------------------------------------------------- derivatives
def _central_differences(f, theta, h=1e-6):
    out = np.empty(theta.size)
    for i in range(theta.size):
        e = np.zeros(theta.size)
        e[i] = h
        out[i] = (f(theta + e) - f(theta - e)) / (2 * h)
    return out


def test_kernel_derivatives():
    """ARD + linear kernel: d/dlog c, d/dlog λ, d/dlog η and d/dXa of sum(G * K(Xa, Xb)), and of the
    diagonal, against central differences and check_grad."""
    rng = np.random.default_rng(5)
    m, s, d = 4, 7, 3
    Xa, Xb, G, g = (rng.standard_normal((m, d)), rng.standard_normal((s, d)), rng.standard_normal((m, s)),
                    rng.standard_normal(s))  # fmt: skip

    def split(theta):
        return theta[0], theta[1 : 1 + d], theta[1 + d : 1 + 2 * d], theta[1 + 2 * d :].reshape(m, d)

    def f(theta):
        la, ll, le, A = split(theta)
        K, _ = ard_linear(A, Xb, np.exp(la), np.exp(ll), np.exp(le))
        return float((G * K).sum() + g @ ard_linear_diag(Xb, np.exp(la), np.exp(le)))

    def grad(theta):
        la, ll, le, A = split(theta)
        _, R = ard_linear(A, Xb, np.exp(la), np.exp(ll), np.exp(le))
        ga, gl, ge, gx = ard_linear_backward(G, A, Xb, R, np.exp(ll), np.exp(le))
        da, de = ard_linear_diag_backward(g, Xb, np.exp(la), np.exp(le))
        return np.concatenate(([ga + da], gl, ge + de, gx.ravel()))

    theta = np.concatenate(([0.2], rng.normal(0, 0.3, d), rng.normal(-1, 0.3, d), Xa.ravel()))
    np.testing.assert_allclose(grad(theta), _central_differences(f, theta), rtol=1e-6, atol=1e-8)
    # check_grad's forward differences carry an O(epsilon) error: a looser, norm-wise bound
    assert check_grad(f, grad, theta, epsilon=1e-6) < 1e-5 * np.linalg.norm(grad(theta))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("seed", [0, 1])
def test_moment_derivatives_every_parameter(form, seed):
    """d/dθ of sum(a·mean + b·var) for every parameter block — log amplitude, log lengthscales, log linear
    weights, log noise, prototypes, virtual outputs — against central differences, and check_grad overall."""
    rng = np.random.default_rng(seed)
    n, d, m = 40, 3, 5
    X = rng.standard_normal((n, d))
    state = _state(form, n, d, m, seed + 10)
    a, b = rng.standard_normal(n), rng.standard_normal(n)

    def f(theta):
        mean, var, _ = training_moments(form, state.unpack(theta), X)
        return float(a @ mean + b @ var)

    def grad(theta):
        return training_moments(form, state.unpack(theta), X)[2](a, b)

    theta = state.pack()
    analytic, numeric = grad(theta), _central_differences(f, theta)
    blocks = np.cumsum([0, 1, d, d, 1, m * d, state.outputs.size])
    names = ["log amplitude", "log lengthscale", "log linear", "log noise", "prototypes", "outputs"]
    for name, lo, hi in zip(names, blocks[:-1], blocks[1:], strict=True):
        np.testing.assert_allclose(analytic[lo:hi], numeric[lo:hi], rtol=1e-5, atol=1e-7, err_msg=name)
    assert check_grad(f, grad, theta, epsilon=1e-6) < 1e-5 * np.linalg.norm(analytic)


def test_fitc_derivatives_with_prototypes_at_training_inputs():
    """The jittered K_uu path: prototypes on training rows (Λ's diagonal term is then 0 there)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((25, 2))
    state = _state("fitc", 25, 2, 4, 3, inducing=X[[0, 5, 9, 17]])
    a, b = rng.standard_normal(25), rng.standard_normal(25)

    def f(theta):
        mean, var, _ = training_moments("fitc", state.unpack(theta), X)
        return float(a @ mean + b @ var)

    theta = state.pack()
    analytic = training_moments("fitc", state, X)[2](a, b)
    np.testing.assert_allclose(analytic, _central_differences(f, theta), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------ SoftNDCG
def _random_queries(sizes, seed, max_label=2):
    rng = np.random.default_rng(seed)
    n = int(np.sum(sizes))
    labels = rng.integers(0, max_label + 1, n).astype(float)
    return labels, rng.normal(size=n), rng.uniform(0.05, 1.5, n)


def _naive_softndcg(labels, mean, var, offsets, discount, k):
    """Mean over queries with two different labels of E[DCG]/IDCG under the enumerated rank laws."""
    values = []
    for s, e in itertools.pairwise(offsets):
        lab, n = labels[s:e], e - s
        if lab.max() == lab.min():
            continue
        gain = 2.0**lab - 1
        r = np.arange(n)
        if discount == "linear" and k is None:
            w = 1.0 - r / n
        elif discount == "linear":
            w = np.maximum(1.0 - r / k, 0.0)
        else:
            w = np.where(r < (k or n), 1.0 / np.log2(r + 2.0), 0.0)
        p = naive_softrank_distribution(mean[s:e], var[s:e])
        values.append(gain @ p @ w / (np.sort(gain)[::-1] @ w))
    return float(np.mean(values))


@pytest.mark.parametrize(("discount", "k"), [("linear", None), ("linear", 3), ("log", None), ("log", 2)])
def test_softndcg_value_against_enumerated_rank_distributions(discount, k):
    sizes = np.array([5, 1, 4, 6, 3, 3])
    labels, mean, var = _random_queries(sizes, seed=4)
    labels[14:17] = 1.0  # a query of equal labels: left out
    offsets = _offsets(sizes)
    value, _, _ = SoftNDCG(labels, offsets, discount, k)(mean, var)
    assert value == pytest.approx(_naive_softndcg(labels, mean, var, offsets, discount, k), rel=1e-12)


def test_softndcg_linear_is_pairwise():
    """Under d(r) = 1 - r/n, E[DCG] needs only the expected ranks E[r_j] = sum_i Φ((m_i - m_j)/√(v_i+v_j))."""
    sizes = np.array([30, 12])
    labels, mean, var = _random_queries(sizes, seed=8, max_label=4)
    offsets = _offsets(sizes)
    expected = []
    for s, e in itertools.pairwise(offsets):
        m, v, g, n = mean[s:e], var[s:e], 2.0 ** labels[s:e] - 1, e - s
        pi = norm.cdf((m[:, None] - m[None, :]) / np.sqrt(v[:, None] + v[None, :]))  # pi[i, j]: i beats j
        np.fill_diagonal(pi, 0.0)
        rank = pi.sum(0)
        expected.append(g @ (1 - rank / n) / (np.sort(g)[::-1] @ (1 - np.arange(n) / n)))
    assert SoftNDCG(labels, offsets, "linear", None)(mean, var)[0] == pytest.approx(
        np.mean(expected), rel=1e-12
    )


def test_softndcg_tends_to_ndcg_as_variance_vanishes():
    """With vanishing variances the rank laws are the ordering by mean: SoftNDCG@k = stochrank's NDCG@k."""
    sizes = np.array([8, 11, 5, 20])
    labels, mean, _ = _random_queries(sizes, seed=6)
    offsets = _offsets(sizes)
    value, _, _ = SoftNDCG(labels, offsets, "log", 5)(mean, np.full(mean.size, 1e-14))
    per_query = ndcg(labels, mean, sizes, k=5, per_query=True)
    assert value == pytest.approx(per_query.mean(), rel=1e-9)


@pytest.mark.parametrize(("discount", "k"), [("linear", None), ("log", 3)])
def test_softndcg_gradient_against_finite_differences(discount, k):
    sizes = np.array([6, 9, 4])
    labels, mean, var = _random_queries(sizes, seed=9)
    objective = SoftNDCG(labels, offsets := _offsets(sizes), discount, k)
    _, d_mean, d_var = objective(mean, var)
    n = mean.size
    fd_mean = _central_differences(lambda x: objective(x, var)[0], mean)
    fd_var = _central_differences(lambda x: objective(mean, x)[0], var)
    np.testing.assert_allclose(d_mean, fd_mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(d_var, fd_var, rtol=1e-6, atol=1e-9)
    assert offsets[-1] == n


@pytest.mark.parametrize("form", FORMS)
def test_full_objective_gradient(form):
    """SoftNDCG(GP(θ)) end to end — SoftRank's d/dmean, d/dvar chained through the GP — against check_grad."""
    rng = np.random.default_rng(11)
    sizes = np.array([7, 12, 5, 9])
    labels, _, _ = _random_queries(sizes, seed=12)
    n, d = labels.size, 3
    X = rng.standard_normal((n, d))
    state = _state(form, n, d, 4, seed=13)
    objective = SoftNDCG(labels, _offsets(sizes), "linear", None)

    def f(theta):
        mean, var, _ = training_moments(form, state.unpack(theta), X)
        return objective(mean, var)[0]

    def grad(theta):
        mean, var, backward = training_moments(form, state.unpack(theta), X)
        return backward(*objective(mean, var)[1:])

    theta = state.pack()
    g = grad(theta)
    np.testing.assert_allclose(g, _central_differences(f, theta), rtol=1e-5, atol=1e-8)
    assert check_grad(f, grad, theta, epsilon=1e-6) < 1e-5 * np.linalg.norm(g)


# ------------------------------------------------------------------------------------ SparseGP
@pytest.mark.parametrize("form", FORMS)
def test_sparse_gp_regression_fit(form):
    """Paper Fig. 1b: a sparse GP fitted to a noisy sine by the pointwise objective tracks the function
    and its error bars grow away from the data."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3, 3, 200))[:, None]
    y = np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(200)
    model = SparseGP(form=form, n_prototypes=10, random_state=0, standardize=False).fit(x, y)
    grid = np.linspace(-3, 3, 61)[:, None]
    mean = model.predict(grid)
    assert np.sqrt(np.mean((mean - np.sin(2 * grid[:, 0])) ** 2)) < 0.15  # noise sd 0.1
    inside = model.predict(np.array([[0.0]]), return_std=True)[1][0]
    outside = model.predict(np.array([[6.0]]), return_std=True)[1][0]
    assert outside > 2 * inside


# ------------------------------------------------------------------------------------ GPRanker
@pytest.fixture(scope="module")
def mq2008_fold1():
    return tuple(load_mq2008(1, split) for split in ("train", "vali", "test"))


def _mean_random_ndcg(split, draws=20):
    rng = np.random.default_rng(0)
    return float(np.mean([ndcg(split.y, rng.random(split.y.size), split.group, k=5, ties="input")
                          for _ in range(draws)]))  # fmt: skip


@pytest.fixture(scope="module")
def fitc_ranker(mq2008_fold1):
    train, vali, _ = mq2008_fold1
    return GPRanker(form="fitc", max_iter=40, random_state=0).fit(
        train.X, train.y, group=train.group, eval_set=[(vali.X, vali.y)], eval_group=[vali.group]
    )


def test_gp_ranker_learns_mq2008(fitc_ranker, mq2008_fold1):
    """FITC-Rank on MQ2008 Fold 1: the training SoftNDCG rises and test NDCG@5 is at least 0.15 above a
    random ranking (measured: 0.777 vs 0.575; queries without a relevant document count 1 in both). The
    prototype form is trained by the benchmark."""
    _, _, test = mq2008_fold1
    assert fitc_ranker.train_history_[-1] > fitc_ranker.train_history_[0] + 0.05
    assert max(fitc_ranker.validation_history_) == pytest.approx(
        ndcg(
            mq2008_fold1[1].y,
            fitc_ranker.predict(mq2008_fold1[1].X),
            mq2008_fold1[1].group,
            k=5,
            ties="input",
        )
    )
    learned = ndcg(test.y, fitc_ranker.predict(test.X), test.group, k=5, ties="input")
    assert learned > _mean_random_ndcg(test) + 0.15


def test_gp_ranker_prototype_form_improves_softndcg(mq2008_fold1):
    train = mq2008_fold1[0]
    model = GPRanker(form="prototype", n_prototypes=6, max_iter=15, random_state=1).fit(
        train.X, train.y, group=train.group
    )
    assert model.inducing_points_.shape == (6, train.X.shape[1]) and model.outputs_.shape == (6,)
    # train_history_[0] is already after the first iteration: compare with the initial parameters' SoftNDCG
    # (measured: 0.689 at the initialisation, 0.840 after 15 iterations)
    start = GPRanker(form="prototype", n_prototypes=6, random_state=1)
    Xs = start._fit_scaler(start._check_X(train.X, fitting=True))
    state = start._initial_state(Xs, train.y, check_random_state(1), "GPRanker")
    initial = SoftNDCG(train.y, _offsets(train.group))(*training_moments("prototype", state, Xs)[:2])[0]
    assert model.train_history_[-1] > initial + 0.1
    assert ndcg(train.y, model.predict(train.X), train.group, k=5) > _mean_random_ndcg(train) + 0.1


def test_alpha_favours_uncertain_documents(fitc_ranker, mq2008_fold1):
    """predict = mean + alpha·std exactly, and raising alpha moves more uncertain documents to the top."""
    test = mq2008_fold1[2]
    mean, std = fitc_ranker.predict(test.X, return_std=True)
    top_std = []
    for alpha in (-0.5, 0.0, 0.5, 2.0):
        ranker = clone(fitc_ranker).set_params(alpha=alpha)
        ranker.__dict__.update({k: v for k, v in fitc_ranker.__dict__.items() if k.endswith("_")})
        scores = ranker.predict(test.X)
        np.testing.assert_allclose(scores, mean + alpha * std, rtol=1e-12)
        tops = [s + np.argsort(-scores[s:e], kind="stable")[:3] for s, e in
                zip(np.r_[0, np.cumsum(test.group)[:-1]], np.cumsum(test.group), strict=True)]  # fmt: skip
        top_std.append(std[np.concatenate(tops)].mean())
    assert np.all(np.diff(top_std) > 0), top_std


def test_estimator_conventions(fitc_ranker, mq2008_fold1):
    test = mq2008_fold1[2]
    params = fitc_ranker.get_params()
    assert clone(fitc_ranker).get_params() == params and not hasattr(clone(fitc_ranker), "state_")
    expected = fitc_ranker.predict(test.X, return_std=True)
    for copied in (pickle.loads(pickle.dumps(fitc_ranker)), copy.deepcopy(fitc_ranker)):
        np.testing.assert_array_equal(copied.predict(test.X, return_std=True)[1], expected[1])
    # qid and group describe the same queries: the same model
    train = mq2008_fold1[0]
    a = GPRanker(max_iter=3, random_state=0).fit(train.X, train.y, group=train.group).predict(test.X)
    b = GPRanker(max_iter=3, random_state=0).fit(train.X, train.y, qid=train.qid).predict(test.X)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------- GP variance in SoftRank boosting
def test_sparse_gp_is_a_softrank_variance_source(mq2008_fold1):
    """A fitted SparseGP plugs into stochrank.softrank(variance=model): the objective reads its predictive
    std² from the Dataset's features (the same gradients as passing the array), and LightGBM trains with it
    on MQ2008 Fold 1 (test NDCG@5 at least 0.12 above random; measured 0.747 vs 0.575)."""
    import lightgbm as lgb

    from stochrank.objectives import softrank

    train, _, test = mq2008_fold1
    gp = SparseGP(form="fitc", max_iter=30, random_state=0).fit(train.X, train.y)
    var = gp.predict(train.X, return_std=True)[1] ** 2
    dtrain = lgb.Dataset(train.X, train.y, group=train.group, free_raw_data=False).construct()
    preds = np.random.default_rng(0).normal(size=train.y.size)
    from_model = softrank(k=10, variance=gp)(preds, dtrain)
    from_array = softrank(k=10, variance=var)(preds, dtrain)
    np.testing.assert_array_equal(from_model[0], from_array[0])
    booster = lgb.train(
        {"objective": softrank(k=10, variance=var / var.mean()), "num_leaves": 15, "min_data_in_leaf": 50,
         "learning_rate": 0.1, "num_threads": 1, "verbosity": -1}, dtrain, num_boost_round=40,
    )  # fmt: skip
    learned = ndcg(test.y, booster.predict(test.X), test.group, k=5, ties="input")
    assert learned > _mean_random_ndcg(test) + 0.12


# -------------------------------------------------------------------------------------- errors
def _small():
    rng = np.random.default_rng(0)
    return rng.standard_normal((12, 3)), np.array([0, 1, 2, 0, 1, 0, 0, 2, 1, 0, 0, 1.0]), np.array([5, 7])


@pytest.mark.parametrize(
    ("params", "fit_kwargs", "error", "match"),
    [
        (
            {"form": "dense"},
            {},
            ValueError,
            "'form' parameter of GPRanker must be one of 'fitc', 'prototype'",
        ),
        ({"n_prototypes": 13}, {}, ValueError, "'n_prototypes'.*13 but there are only 12 training rows"),
        ({"n_prototypes": 0}, {}, ValueError, "'n_prototypes' parameter"),
        ({"discount": "log2"}, {}, ValueError, "'discount' parameter of GPRanker"),
        ({"alpha": float("nan")}, {}, ValueError, "'alpha' parameter"),
        ({"k": 0}, {}, ValueError, "'k' parameter"),
        ({"standardize": "yes"}, {}, TypeError, "'standardize'"),
        ({}, {"group": [5, 6]}, ValueError, "'group' sums to 11 documents but there are 12 rows"),
        ({}, {"group": None}, ValueError, "exactly one of 'group'.*or 'qid'"),
        ({}, {"qid": np.zeros(12)}, ValueError, "exactly one of 'group'"),
        ({}, {"eval_set": [(np.zeros((3, 3)), [0, 1, 0])]}, ValueError, "exactly one of 'eval_group'"),
        (
            {},
            {"eval_set": [(np.zeros((3, 2)), [0, 1, 0])], "eval_group": [[3]]},
            ValueError,
            "X has 2 features",
        ),
        (
            {},
            {"eval_set": [(np.zeros((3, 3)), [0, 1, 0])], "eval_group": [[1, 2], [3]]},
            ValueError,
            "list holding one",
        ),
    ],
)
def test_ranker_errors(params, fit_kwargs, error, match):
    X, y, group = _small()
    kwargs = {"group": group, **fit_kwargs}
    with pytest.raises(error, match=match):
        GPRanker(**params).fit(X, y, **kwargs)


def test_data_errors():
    X, y, group = _small()
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        GPRanker().fit(bad, y, group=group)
    with pytest.raises(ValueError, match=r"labels in \[0\.0"):
        GPRanker().fit(X, -y, group=group)
    with pytest.raises(ValueError, match="'labels' has 11 entries but there are 12"):
        GPRanker().fit(X, y[:-1], group=group)
    with pytest.raises(ValueError, match="No training query has two different labels"):
        GPRanker().fit(X, np.ones(12), group=group)
    with pytest.raises(NotFittedError):
        GPRanker().predict(X)
    model = GPRanker(max_iter=2).fit(X, y, group=group)
    with pytest.raises(ValueError, match="X has 4 features, but GPRanker was fitted with 3"):
        model.predict(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        model.predict(bad)
    with pytest.raises(ValueError, match="y must be 1-D with one target per row"):
        SparseGP().fit(X, y[:5])
    with pytest.raises(ValueError, match=r"'n_prototypes'.*20 but there are only 12"):
        SparseGP(n_prototypes=20).fit(X, y)


# ------------------------------------------------------------------------- target units (SparseGP)
def _noisy_sine():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3, 3, 200))[:, None]
    return x, np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(200), np.linspace(-3, 3, 61)[:, None]


@pytest.mark.parametrize("form", FORMS)
def test_sparse_gp_fit_follows_the_target_units(form):
    """SparseGP fits the standardised targets and maps the model back, so targets in other units give the
    same model in those units: y·s predicts mean·s, std·s, noise·s². With s a power of two (2^∓13, about
    1e-4 and 1e4) the standardised targets are bit-identical, so the optimiser takes the same path: the same
    prototypes and lengthscales, c, η, σ² times s². Predictions agree to 1e-5 (measured 5e-6): the FITC
    posterior (K_uu⁻¹ − B⁻¹, K_uu jittered by 1e-6) amplifies the 1e-16 rounding of the change of units.
    Before the fix the noise hit its absolute bound 1e-6 at s = 2^-13 (std 10× too large, relative RMSE
    0.66)."""
    x, y, grid = _noisy_sine()
    fits = {s: SparseGP(form=form, n_prototypes=10, random_state=0, standardize=False).fit(x, s * y)
            for s in (1.0, 2.0**-13, 2.0**13)}  # fmt: skip
    unit = fits[1.0]
    mean, std = unit.predict(grid, return_std=True)
    for s in (2.0**-13, 2.0**13):
        fit = fits[s]
        np.testing.assert_array_equal(fit.inducing_points_, unit.inducing_points_)
        np.testing.assert_array_equal(fit.lengthscale_, unit.lengthscale_)
        np.testing.assert_allclose(fit.linear_weights_ / s**2, unit.linear_weights_, rtol=1e-12)
        np.testing.assert_allclose(fit.outputs_ / s, unit.outputs_, rtol=1e-12)
        assert fit.amplitude_ / s**2 == pytest.approx(unit.amplitude_, rel=1e-12)
        assert fit.noise_ / s**2 == pytest.approx(unit.noise_, rel=1e-12)
        mean_s, std_s = fit.predict(grid, return_std=True)
        np.testing.assert_allclose(mean_s / s, mean, rtol=1e-5, atol=1e-5, err_msg=f"scale {s:g}")
        np.testing.assert_allclose(std_s / s, std, rtol=1e-5, err_msg=f"scale {s:g}")


@pytest.mark.parametrize("scale", [1e-4, 1e4])
def test_sparse_gp_fits_targets_far_from_unit_scale(scale):
    """Not a power of two: the standardised targets differ by rounding, L-BFGS-B may stop at another local
    optimum, but the fit is as good as at unit scale (measured relative RMSE 0.019–0.022 against the sine,
    predicted std 0.093–0.096 of the scale; noise sd 0.1)."""
    x, y, grid = _noisy_sine()
    model = SparseGP(form="fitc", n_prototypes=10, random_state=0, standardize=False).fit(x, scale * y)
    mean, std = model.predict(grid, return_std=True)
    assert np.sqrt(np.mean((mean / scale - np.sin(2 * grid[:, 0])) ** 2)) < 0.05
    assert 0.07 < np.median(std) / scale < 0.13
    assert 1e-3 < model.noise_ / scale**2 < 0.02  # true noise variance 0.01, not the bound


# ------------------------------------------------------------------------------ SoftNDCG input checks
@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"discount": "lin"}, "'discount' parameter of SoftNDCG must be one of 'linear', 'log'"),
        ({"k": 0}, "'k' parameter of SoftNDCG must be an int"),
        ({"k": 2.5}, "'k' parameter of SoftNDCG must be an int"),
        ({"labels": [0, 1, np.nan, 0, 1, 0]}, "'labels' for SoftNDCG contain NaN"),
        ({"labels": [0, 1, -1, 0, 1, 0]}, "SoftNDCG needs labels in \\[0.0, 50.0\\]"),
        ({"labels": [0, 1, 2, 0, 1]}, "'offsets' must start at 0 and end at the number of documents \\(5\\)"),
        ({"offsets": [0, 3, 3, 6]}, "'offsets' must increase strictly.*query 1 spans 3 .. 3"),
        ({"offsets": [0, 2.5, 6]}, "'offsets' must be a 1-D integer array"),
        ({"offsets": [[0, 6]]}, "'offsets' must be a 1-D integer array"),
    ],
)
def test_softndcg_rejects_bad_parameters(args, match):
    kwargs = {"labels": [0, 1, 2, 0, 1, 0], "offsets": [0, 3, 6], "discount": "linear", "k": None, **args}
    with pytest.raises(ValueError, match=match):
        SoftNDCG(**kwargs)


@pytest.mark.parametrize(("discount", "k"), [("linear", None), ("log", 2)])
def test_softndcg_rejects_bad_moments(discount, k):
    """Wrong lengths, NaN/inf means and negative or NaN variances fail with the argument's name instead of
    giving a number (the kernels read past a short array) or NaN."""
    objective = SoftNDCG(np.array([0, 1, 2, 0, 1, 0.0]), np.array([0, 3, 6]), discount, k)
    mean, var = np.linspace(-1, 1, 6), np.full(6, 0.5)
    assert np.isfinite(objective(mean, var)[0])
    with pytest.raises(ValueError, match="'mean' has 5 entries but there are 6 documents"):
        objective(mean[:5], var)
    with pytest.raises(ValueError, match="'var' has 7 entries but there are 6 documents"):
        objective(mean, np.full(7, 0.5))
    with pytest.raises(ValueError, match="'mean' contains 1 NaN or infinite"):
        objective(np.r_[mean[:5], np.nan], var)
    with pytest.raises(ValueError, match=r"'var' contains 1 negative values.*std \*\* 2"):
        objective(mean, np.r_[var[:5], -0.1])
    with pytest.raises(ValueError, match="'var' contains 1 NaN or infinite"):
        objective(mean, np.r_[np.inf, var[1:]])
