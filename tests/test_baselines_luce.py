"""Luce family: scorio and choix parity, brute-force Davidson–Luce oracles, published fits
(NASCAR Plackett–Luce, pudding Davidson), identification, bad input."""

from __future__ import annotations

import itertools

import choix
import numpy as np
import pandas as pd
import pytest
from _sims import simulate
from scipy import optimize
from scorio import rank as sr

import bayesrank
from bayesrank import DataError, NotIdentifiedError, ResponseData
from bayesrank.baselines import luce


def events(R: np.ndarray):
    ev = ResponseData(R).reductions.setwise
    return ev.winners, ev.losers, ev.counts


def assert_same_ranking(ours, theirs_scores, log_tol):
    """Equal log-strengths up to scorio's optimiser tolerance; identical order wherever our
    scores differ by more than that (scorio splits exact ties by optimiser noise)."""
    a = np.log(ours.scores)
    a = a - a.mean()
    b = np.log(np.asarray(theirs_scores, float))
    b = b - b.mean()
    np.testing.assert_allclose(a, b, atol=log_tol)
    strict = np.abs(a[:, None] - a[None, :]) > 4 * log_tol
    assert np.array_equal(np.sign(a[:, None] - a[None, :])[strict],
                          np.sign(b[:, None] - b[None, :])[strict])


# -- scorio parity -----------------------------------------------------------------------------
PL_SHAPES = [(8, 40, 1), (6, 12, 4), (20, 120, 80)]


@pytest.mark.parametrize("shape", PL_SHAPES)
def test_plackett_luce_matches_scorio(shape):
    R = simulate(*shape, seed=sum(shape))
    try:
        ranks, scores = sr.plackett_luce(R, max_iter=500, tol=1e-8, return_scores=True)
    except ValueError:  # no finite MLE: ours must refuse as well
        with pytest.raises(NotIdentifiedError):
            bayesrank.rank(R, "plackett_luce")
        return
    ours = bayesrank.rank(R, "plackett_luce")
    np.testing.assert_array_equal(ours.ranks, ranks)
    np.testing.assert_allclose(ours.scores, scores, rtol=1e-9)  # both: pi summing to 1


@pytest.mark.parametrize("shape", PL_SHAPES)
def test_plackett_luce_map_matches_scorio(shape):
    R = simulate(*shape, seed=sum(shape))
    ranks, scores = sr.plackett_luce_map(R, prior=1.0, max_iter=500, return_scores=True)
    ours = bayesrank.rank(R, "plackett_luce_map")
    assert_same_ranking(ours, scores, log_tol=1e-4)
    np.testing.assert_array_equal(ours.ranks, ranks)


@pytest.mark.parametrize("shape", [(8, 30, 1), (6, 12, 4), (10, 30, 8)])
@pytest.mark.parametrize("identifier", ["bradley_terry_luce", "bradley_terry_luce_map"])
def test_bradley_terry_luce_matches_scorio(identifier, shape):
    R = simulate(*shape, seed=sum(shape) + 1)
    fn = sr.bradley_terry_luce if identifier == "bradley_terry_luce" else (
        lambda R, **kw: sr.bradley_terry_luce_map(R, prior=1.0, **kw))
    try:
        ranks, scores = fn(R, max_iter=500, return_scores=True)
    except ValueError:
        with pytest.raises(NotIdentifiedError):
            bayesrank.rank(R, identifier)
        return
    ours = bayesrank.rank(R, identifier)
    assert_same_ranking(ours, scores, log_tol=1e-4)
    np.testing.assert_array_equal(ours.ranks, ranks)


@pytest.mark.parametrize("shape", [(6, 20, 1), (5, 10, 3)])
@pytest.mark.parametrize("identifier", ["davidson_luce", "davidson_luce_map"])
def test_davidson_luce_matches_scorio(identifier, shape):
    """scorio enumerates events one by one and stops L-BFGS at its default tolerance, so
    its log-strengths are ~1e-4 off ours; ours has the higher (log-)likelihood."""
    R = simulate(*shape, seed=sum(shape) + 2)
    fn = sr.davidson_luce if identifier == "davidson_luce" else (
        lambda R, **kw: sr.davidson_luce_map(R, prior=1.0, **kw))
    _, scores = fn(R, max_iter=500, return_scores=True)
    ours = bayesrank.rank(R, identifier)
    assert_same_ranking(ours, scores, log_tol=2e-3)
    U, V, c = events(R)
    D = shape[0] - 1
    delta = ours.details["tie_prevalence"]
    theirs = np.log(scores) - np.log(scores).mean()
    prior = 0.0 if identifier == "davidson_luce" else 1.0

    def objective(theta):
        ll = luce.davidson_luce_loglik(theta, np.log(delta), U, V, c, D, exclude_all_tied=True)
        return ll - prior * 0.5 * theta @ theta

    assert objective(ours.details["log_strengths"]) >= objective(theirs) - 1e-9


def test_davidson_luce_ties_models_with_equal_winner_shares():
    """Documented difference with scorio.

    On complete data every event compares all models, so the Davidson–Luce likelihood
    depends on theta only through A_i = sum_e c_e [i in U_e] / |U_e| and a symmetric
    normaliser; it is concave, so the ranking is the ranking of A, ties included (a
    symmetric convex normaliser has order-preserving gradients).  scorio splits such ties
    by optimiser noise.
    """
    R = simulate(5, 6, 3, seed=51)
    U, V, c = events(R)
    A = np.einsum("e,el->l", c / U.sum(1), U)
    # exact ties A_0 = A_4 = 3/2 and A_1 = A_2 = 17/6, won in events of different sizes
    np.testing.assert_allclose(A[[0, 1]], [1.5, 17 / 6])
    np.testing.assert_allclose(A[[4, 2]], [1.5, 17 / 6])
    assert not np.array_equal(U[:, 0], U[:, 4]) and not np.array_equal(U[:, 1], U[:, 2])
    for identifier in ("davidson_luce", "davidson_luce_map"):
        ours = bayesrank.rank(R, identifier)
        np.testing.assert_array_equal(ours.ranks, bayesrank.scores_to_ranks(A, tol=1e-9))
        assert ours.scores[0] == ours.scores[4] and ours.scores[1] == ours.scores[2]
    _, theirs = sr.davidson_luce(R, return_scores=True)
    assert abs(np.log(theirs[0] / theirs[4])) < 1e-3 and abs(np.log(theirs[1] / theirs[2])) < 1e-3
    assert theirs[0] != theirs[4] or theirs[1] != theirs[2]  # split by optimiser noise


# -- choix oracles ------------------------------------------------------------------------------
def test_plackett_luce_mm_matches_choix():
    W = ResponseData(simulate(7, 25, 6, seed=3)).reductions.wins
    ref = choix.ilsr_pairwise_dense(W, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(luce.pl_log_strengths(W, tol=1e-12, max_iter=5000),
                               ref - ref.mean(), atol=1e-8)


def _top1_choices(U, V, c):
    """BTL choices as choix top-1 data: (winner, losers) once per event occurrence."""
    out = []
    for u, v, n in zip(U, V, c, strict=True):
        losers = np.flatnonzero(v).tolist()
        if losers:
            out += [(int(i), losers) for i in np.flatnonzero(u)] * int(n)
    return out


def test_bradley_terry_luce_matches_choix_top1():
    R = simulate(5, 8, 3, seed=7)
    U, V, c = events(R)
    data = _top1_choices(U, V, c)
    ml = choix.ilsr_top1(5, data, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(luce.btl_log_strengths(U, V, c), ml - ml.mean(), atol=1e-8)
    # choix penalises alpha * sum(theta^2): a N(0, 1/(2 alpha)) prior
    map_ = choix.opt_top1(5, data, alpha=0.5, method="BFGS", tol=1e-11)
    np.testing.assert_allclose(luce.btl_log_strengths(U, V, c, prior=1.0), map_, atol=1e-8)


def test_bradley_terry_luce_with_missing_trials_matches_choix_top1():
    """Missing trials shrink the comparison sets: each winner then chooses among the losers
    that were actually observed on that question-trial."""
    R = simulate(5, 10, 3, seed=7)
    mask = np.random.default_rng(1).random(R.shape) > 0.2
    mask[:, :, 0] = True
    data = ResponseData(R, mask=mask)
    ev = data.reductions.setwise
    ours = bayesrank.rank(data, "bradley_terry_luce_map")
    ref = choix.opt_top1(5, _top1_choices(ev.winners, ev.losers, ev.counts), alpha=0.5,
                         method="BFGS", tol=1e-11)
    np.testing.assert_allclose(ours.details["log_strengths"], ref, atol=1e-8)


def test_nascar_plackett_luce(shared_dir):
    """Hunter (2004) Table 2 as reproduced by the PlackettLuce package: 83 drivers, MLE,
    log-worths relative to Austin Cameron; SOURCE.md re-checks them to 4 dp."""
    folder = shared_dir / "data/plackettluce_nascar_pudding"
    races = pd.read_csv(folder / "nascar2002_orderings.csv").drop(columns="race").to_numpy()
    names = pd.read_csv(folder / "nascar2002_drivers.csv").set_index("driver_id")["driver"]
    rankings = [[d - 1 for d in race if d <= 83] for race in races]
    theta = luce.pl_rankings_log_strengths(rankings, 83)
    theta = theta - theta[0]
    expected = {"PJ Jones": 4.1477, "Scott Pruett": 3.6162, "Mark Martin": 2.0763,
                "Dave Marcis": 0.0258, "Dick Trickle": -0.3113, "Joe Varde": -0.1451}
    for driver, value in expected.items():
        k = int(names.index[names == driver][0]) - 1
        assert theta[k] == pytest.approx(value, abs=5e-5)
    ref = choix.ilsr_rankings(83, rankings, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(theta, ref - ref[0], atol=1e-6)


# -- Davidson–Luce against brute-force subset enumeration ------------------------------------
def _brute_log_z(theta, log_delta, present, top_order):
    members = np.flatnonzero(present)
    terms = [log_delta[t - 1] + theta[list(T)].sum() / t
             for t in range(1, top_order + 1) for T in itertools.combinations(members, t)]
    return np.logaddexp.reduce(terms)


def _brute_loglik(theta, log_delta, U, V, c, D, exclude_all_tied):
    total = 0.0
    for u, v, n in zip(U, V, c, strict=True):
        S = u | v
        t = int(u.sum())
        top = min(D, int(S.sum()) - (1 if exclude_all_tied else 0))
        total += n * (log_delta[t - 1] + theta[u].mean()
                      - _brute_log_z(theta, log_delta, S, top))
    return total


def test_elementary_symmetric_polynomials():
    x = np.random.default_rng(0).random((3, 6))
    e = luce.elementary_symmetric(x, 6)
    for row, got in zip(x, e, strict=True):
        brute = [sum(np.prod(row[list(T)]) for T in itertools.combinations(range(6), j))
                 for j in range(7)]
        np.testing.assert_allclose(got, brute, rtol=1e-13)


@pytest.mark.parametrize("exclude_all_tied", [False, True])
def test_davidson_luce_loglik_and_gradient_equal_enumeration(exclude_all_tied):
    rng = np.random.default_rng(5)
    L, E, D = 6, 30, 4
    present = rng.random((E, L)) < 0.8
    present[:, :2] = True
    U = present & (rng.random((E, L)) < 0.4)
    U[~U.any(1), 0] = True
    V = present & ~U
    order = U.sum(1)
    keep = (order <= np.minimum(D, present.sum(1) - exclude_all_tied)) & (
        V.any(1) | ~exclude_all_tied)
    U, V = U[keep], V[keep]
    c = rng.integers(1, 4, U.shape[0]).astype(float)
    theta, log_delta = rng.normal(size=L), np.r_[0.0, rng.normal(size=D - 1)]
    value, g_theta, g_delta = luce.davidson_luce_loglik(
        theta, log_delta, U, V, c, D, exclude_all_tied=exclude_all_tied, return_grad=True)
    brute = lambda th, ld: _brute_loglik(th, ld, U, V, c, D, exclude_all_tied)  # noqa: E731
    assert value == pytest.approx(brute(theta, log_delta), rel=1e-12)
    h = 1e-6
    num_theta = [(brute(theta + h * e, log_delta) - brute(theta - h * e, log_delta)) / (2 * h)
                 for e in np.eye(L)]
    num_delta = [(brute(theta, log_delta + h * e) - brute(theta, log_delta - h * e)) / (2 * h)
                 for e in np.eye(D)]
    np.testing.assert_allclose(g_theta, num_theta, atol=1e-6)
    np.testing.assert_allclose(g_delta, num_delta, atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_davidson_luce_fit_equals_brute_force_optimum(masked):
    """ML by generic BFGS on the enumerated likelihood (an independent implementation).

    Complete data use the profile-likelihood Newton path, masked data (several comparison
    sets) the joint L-BFGS path."""
    rng = np.random.default_rng(8)
    R = simulate(4, 12, 3, seed=17)
    mask = rng.random(R.shape) > (0.25 if masked else 0.0)
    mask[:, :, 0] = True
    data = ResponseData(R, mask=mask if masked else None)
    ev = data.reductions.setwise
    U, V, c = ev.winners, ev.losers, ev.counts
    D = 3
    theta, delta = luce.davidson_luce_log_strengths(U, V, c, max_tie_order=D,
                                                    exclude_all_tied=True)
    orders = np.unique(U.sum(1))
    free = orders[orders >= 2] - 1

    def nll(x):
        th = np.r_[x[:3], -x[:3].sum()]
        ld = np.full(D, -np.inf)
        ld[0] = 0.0
        ld[free] = x[3:]
        return -_brute_loglik(th, ld, U, V, c, D, True)

    res = optimize.minimize(nll, np.zeros(3 + free.size), method="BFGS",
                            options={"gtol": 1e-9})
    np.testing.assert_allclose(theta, np.r_[res.x[:3], -res.x[:3].sum()], atol=2e-5)
    np.testing.assert_allclose(np.log(delta[free]), res.x[3:], atol=2e-5)
    assert set(np.flatnonzero(delta == 0)) == set(range(D)) - set(orders - 1)


def test_pudding_as_davidson_luce(shared_dir):
    """Davidson (1970) is Davidson–Luce on pairs: a tie is the winner set {i, j} of S = {i, j}."""
    pud = pd.read_csv(shared_dir / "data/plackettluce_nascar_pudding/pudding_davidson1970.csv")
    U, V, c = [], [], []
    for i, j, _, wij, wji, tij in pud.itertuples(index=False):
        for winners, losers, n in (([i], [j], wij), ([j], [i], wji), ([i, j], [], tij)):
            u, v = np.zeros(6, bool), np.zeros(6, bool)
            u[np.asarray(winners) - 1] = True
            v[np.asarray(losers, dtype=int) - 1] = True
            U.append(u)
            V.append(v)
            c.append(n)
    theta, delta = luce.davidson_luce_log_strengths(np.array(U), np.array(V), np.array(c),
                                                    max_tie_order=2)
    worth = np.exp(theta) / np.exp(theta).sum()
    np.testing.assert_allclose(
        worth, [0.1388005, 0.1729985, 0.1617420, 0.1653930, 0.1586805, 0.2023855], atol=1e-4)
    assert delta[1] == pytest.approx(0.7468147, abs=1e-4)


# -- identification and bad input ---------------------------------------------------------------
def test_always_right_model_breaks_btl_ml_but_not_davidson_luce_ml():
    R = simulate(5, 20, 3, seed=5)
    R[0] = 1  # never a loser: BTL's choice graph has no edge into model 0
    with pytest.raises(NotIdentifiedError, match=r"model_0.*bradley_terry_luce_map"):
        bayesrank.rank(R, "bradley_terry_luce")
    assert bayesrank.rank(R, "bradley_terry_luce_map").ranks[0] == 1
    # Davidson-Luce: co-winners tie with model 0, which keeps every strength finite
    fit = bayesrank.rank(R, "davidson_luce")
    assert np.all(np.isfinite(np.log(fit.scores))) and fit.ranks[0] == 1


def test_tie_prevalence_conventions():
    fit = bayesrank.rank(simulate(6, 15, 4, seed=2), "davidson_luce")
    delta = fit.details["tie_prevalence"]
    assert delta.shape == (5,) and delta[0] == 1.0 and np.all(delta >= 0)


CATEGORICAL = ResponseData(np.array([[[0, 2, 1]], [[1, 1, 2]]]), n_categories=3)


@pytest.mark.parametrize("identifier", ["bradley_terry_luce", "bradley_terry_luce_map",
                                        "davidson_luce", "davidson_luce_map"])
def test_setwise_rules_refuse_categorical_data(identifier):
    with pytest.raises(DataError, match="binary"):
        bayesrank.rank(CATEGORICAL, identifier)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bayesrank.rank(simulate(5, 10, 2, 1), "davidson_luce", max_tie_order=1),
         "max_tie_order"),
        (lambda: luce.btl_log_strengths(np.ones((2, 3), bool), np.ones((2, 3), bool), [1, 1]),
         "both a winner and a loser"),
        (lambda: luce.btl_log_strengths(np.ones((2, 3), bool), np.zeros((2, 3), bool), [1]),
         r"\(E,\)"),
        (lambda: luce.pl_rankings_log_strengths([[0, 1, 1]]), "twice"),
        (lambda: luce.pl_rankings_log_strengths([[0, 3]], n_items=2), "indices"),
        (lambda: luce.pl_log_strengths(np.array([[0, 1], [1, 0]]), tol=0), "tol"),
    ],
)
def test_bad_input_raises_data_error(call, message):
    with pytest.raises(DataError, match=message):
        call()
