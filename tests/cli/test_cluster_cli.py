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
