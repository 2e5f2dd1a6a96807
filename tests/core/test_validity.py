"""validity: tau and intervals against scipy, verdicts on scripted synthetic and log slices, stability."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import validity_kit as kit
from curator.core.errors import InputError
from curator.core.evaluation.validity import (gap_interval, kendall_tau, parse_runs, percentile_interval,
                                              resampled_taus, stability, validate)

SYN = np.random.default_rng(1).random((25, 4)) * np.array([0.9, 0.7, 0.5, 0.3])
LOG = np.random.default_rng(2).random((18, 4)) * np.array([0.3, 0.6, 0.5, 0.8])


@pytest.mark.parametrize("a, b", [([0.9, 0.7, 0.5, 0.3], [0.3, 0.6, 0.5, 0.8]),
                                  ([0.5, 0.5, 0.2, 0.1], [0.4, 0.3, 0.3, 0.1]),  # ties on both sides (tau-b)
                                  ([1, 2, 3, 4, 5], [1, 2, 3, 5, 4])])
def test_tau_equals_scipy(a, b):
    assert kendall_tau(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)


def test_tau_of_an_all_tied_side_is_undefined():
    assert np.isnan(kendall_tau([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]))


def test_resampled_taus_equal_scipy_on_the_same_draws():
    taus = resampled_taus(SYN, LOG, 50, seed=7)
    rng = np.random.default_rng(7)  # the same draws, in the same order: all synthetic, then all log
    syn = [SYN[rng.integers(0, len(SYN), len(SYN))].mean(axis=0) for _ in range(50)]
    log = [LOG[rng.integers(0, len(LOG), len(LOG))].mean(axis=0) for _ in range(50)]
    expected = [stats.kendalltau(s, r).statistic for s, r in zip(syn, log)]
    np.testing.assert_allclose(taus, expected, atol=1e-12)


def _scipy_interval(statistic, samples, seed=0):
    result = stats.bootstrap(samples, statistic, vectorized=False, paired=False, n_resamples=2000,
                             method="percentile", random_state=np.random.default_rng(seed))
    return result.confidence_interval.low, result.confidence_interval.high


def test_tau_interval_matches_scipy_bootstrap():
    ours = percentile_interval(resampled_taus(SYN, LOG, 2000, seed=0))
    theirs = _scipy_interval(lambda i, j: kendall_tau(SYN[i].mean(axis=0), LOG[j].mean(axis=0)),
                             (np.arange(len(SYN)), np.arange(len(LOG))))
    # tau of 4 retrievers takes only the values k/6, so the two percentile intervals land on the same steps
    assert ours == pytest.approx(list(theirs), abs=1 / 6 + 1e-9)
    assert ours[0] <= kendall_tau(SYN.mean(axis=0), LOG.mean(axis=0)) <= ours[1]


def test_gap_interval_matches_scipy_bootstrap():
    syn, log = SYN[:, 0], LOG[:, 0]
    ours = gap_interval(syn, log, 2000, seed=0)
    theirs = _scipy_interval(lambda a, b: a.mean() - b.mean(), (syn, log))
    assert ours == pytest.approx(list(theirs), abs=0.03)  # different draws: agree to Monte Carlo error
    assert ours[0] < syn.mean() - log.mean() < ours[1]


def test_stability_grows_with_size_and_finds_the_size_for_each_target():
    rng = np.random.default_rng(0)
    values = (rng.random((40, 2)) < np.array([0.6, 0.45])).astype(float)  # close retrievers: needs many rows
    result = stability(values, ["a", "b"], 500, seed=0)
    shares = [s["same_winner"] for s in result["sizes"]]
    assert result["winner"] == "a" and shares[0] < 0.95 and shares[-1] >= 0.99
    assert shares[-1] > shares[len(shares) // 2] > shares[0]  # rising with size
    assert 40 < result["size_for"]["0.95"] <= result["size_for"]["0.99"]


def test_stability_without_a_single_winner():
    assert stability(np.ones((10, 3)), ["a", "b", "c"], 100, seed=0)["winner"] is None


@pytest.mark.parametrize("shares, code, tau", [(kit.AGREE, "agrees", 1.0), (kit.DISAGREE, "disagrees", -1.0)])
def test_scripted_slices_get_the_right_verdict(sample_db, tmp_path, shares, code, tau):
    slices = kit.add_slices(sample_db, tmp_path)
    runs = kit.write_runs(slices, shares, tmp_path, kit.decoy_chunk(sample_db))
    report = validate(sample_db, [], runs, "recall@5", resamples=500)
    assert report["verdict"]["code"] == code
    agreement = report["agreement"]
    assert agreement["tau"] == pytest.approx(tau) and agreement["synthetic_ranking"] == ["alpha", "beta", "gamma"]
    assert report["slices"]["source:log"]["means"]["alpha"] == pytest.approx(shares["alpha"][1])
    assert report["slices"]["source:synthetic"]["queries"] == report["slices"]["source:log"]["queries"] == 20
    gap = report["difficulty_gap"][0]
    expected = np.mean([s for s, _ in shares.values()]) - np.mean([r for _, r in shares.values()])
    assert gap["query_type"] == "factoid" and gap["gap"] == pytest.approx(expected)
    assert validate(sample_db, [], runs, "recall@5", resamples=500) == report  # seeded


def test_built_in_retrievers_without_log_queries_say_so_and_show_stability(sample_db, tmp_path):
    kit.add_slices(sample_db, tmp_path, per_slice=12, with_log=False)
    report = validate(sample_db, ["bm25", "tfidf"], {}, "mrr", resamples=200)
    assert report["verdict"]["code"] == "no_real_queries" and report["agreement"] is None
    assert report["difficulty_gap"] == [] and set(report["stability"]) == {"overall"}  # synthetic = overall
    assert set(report["slices"]["overall"]["means"]) == {"bm25", "tfidf"}
    assert report["type_spread"] == {"bm25": None, "tfidf": None}  # one query type: no spread


def test_bad_input_is_refused_clearly(sample_db, tmp_path):
    with pytest.raises(InputError, match="approve some rows"):
        validate(sample_db, ["bm25"])
    kit.add_slices(sample_db, tmp_path, per_slice=3, with_log=False)
    with pytest.raises(InputError, match="no such run file"):
        validate(sample_db, [], {"x": str(tmp_path / "missing.trec")})
    with pytest.raises(InputError, match="unknown metric"):
        validate(sample_db, ["bm25"], metric="recall5")
    assert parse_runs(["a=x.trec", str(tmp_path / "b.trec")]) == {"a": "x.trec", "b": str(tmp_path / "b.trec")}
    with pytest.raises(InputError, match="twice"):
        parse_runs(["a=x", "a=y"])


def test_a_tied_top_is_not_called_two_different_winners():
    """Real rows tying every retriever printed "the winners differ (real bm25, synthetic bm25)"."""
    from curator.core.evaluation.validity import _agreement, _verdict
    names = ["bm25", "dense"]
    values = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    groups = {"source:synthetic": [2, 3], "source:log": [0, 1]}
    agreement = _agreement(values, groups, names, resamples=200, seed=0)
    assert agreement["real_winner"] is None and agreement["synthetic_winner"] == "bm25"
    verdict = _verdict(agreement, groups, names, pairs=())
    assert verdict["code"] == "uncertain"
    assert "no single winner" in verdict["text"] and "real shared by several" in verdict["text"]
