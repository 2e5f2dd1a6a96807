import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.store import open_project


def test_cluster_cli_json_small(tmp_path):
    path = tmp_path / "p.curator"
    db = open_project(path, create=True)
    with db.conn:
        for t in ["sync conflict", "sync offline", "invoice refund", "invoice payment", "password reset"]:
            add_query(db, t, "manual")
    db.close()
    res = CliRunner().invoke(cli, ["cluster", str(path), "--k", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["k"] == 2
    res = CliRunner().invoke(cli, ["cluster", str(path), "--k", "x"])
    assert res.exit_code == 1


def _covered_but_billing(path) -> None:
    """Three topics clustered (PCA path, MiniLM vectors); billing has real queries only."""
    db = open_project(path)
    with db.conn:
        for topic, texts in {"sync": ["sync conflict when offline", "offline sync fails", "sync stuck at 99%"],
                             "billing": ["invoice payment failed", "refund my invoice", "update billing card"],
                             "login": ["reset forgotten password", "login two factor code", "locked out of login"]}.items():
            for i, text in enumerate(texts):
                add_query(db, text, "log", query_type="log")
                if topic != "billing":
                    add_query(db, f"{text} {i} how", "synthetic", query_type="factoid")
    db.close()
    res = CliRunner().invoke(cli, ["cluster", str(path), "--k", "3", "--json"])
    assert res.exit_code == 0, res.output


def test_coverage_cli_text_and_json(sample_project_path):
    _covered_but_billing(sample_project_path)
    res = CliRunner().invoke(cli, ["cluster", str(sample_project_path), "--coverage", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["real"] == 9 and report["synthetic"] == 6
    assert report["real_in_clusters_without_synthetic"] == 3 and len(report["under_covered"]) == 1
    assert {"real", "synthetic", "approved", "negative", "real_without_synthetic_neighbour", "under_covered"} \
        <= set(report["clusters"][0])
    res = CliRunner().invoke(cli, ["cluster", str(sample_project_path), "--coverage"])
    assert res.exit_code == 0 and "real queries in a cluster without synthetic rows: 3 (33%)" in res.output


def test_coverage_cli_without_a_run_says_what_to_do(sample_project_path):
    res = CliRunner().invoke(cli, ["cluster", str(sample_project_path), "--coverage"])
    assert res.exit_code == 1 and "curator cluster" in res.output


def test_generate_target_coverage_refuses_cluster_and_needs_a_gap(sample_project_path):
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--target", "coverage", "--cluster", "1"])
    assert res.exit_code == 2 and "--target coverage" in res.output
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--target", "coverage", "--count", "1"])
    assert res.exit_code == 1 and "curator cluster" in res.output  # nothing clustered: nothing to aim at
