"""curator validate through click's runner: text report, --json, run files, errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import validity_kit as kit
from curator.cli.main import cli
from curator.core.store import open_project


@pytest.fixture
def scripted(sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    slices = kit.add_slices(db, tmp_path)
    runs = kit.write_runs(slices, kit.DISAGREE, tmp_path, kit.decoy_chunk(db))
    db.close()
    return str(sample_project_path), runs


def _run_options(runs: dict) -> list[str]:
    return [arg for name, path in runs.items() for arg in ("--run", f"{name}={path}")]


def test_text_report_leads_with_the_verdict(scripted):
    project, runs = scripted
    result = CliRunner().invoke(cli, ["validate", project, "--retrievers", "", *_run_options(runs),
                                      "--resamples", "500"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("It does not: the synthetic set ranks your retrievers unlike your real queries")
    assert "synthetic ranking alpha > beta > gamma; real ranking gamma > beta > alpha; tau -1.00" in result.output
    assert "difficulty: factoid rows are" in result.output and "stability (source:log):" in result.output
    assert any(line.startswith("source:log") and "gamma > beta > alpha" in line for line in lines)


def test_json_report_is_one_document_with_the_documented_keys(scripted):
    project, runs = scripted
    result = CliRunner().invoke(cli, ["validate", project, "--retrievers", "bm25", *_run_options(runs),
                                      "--metric", "mrr", "--resamples", "300", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"metric", "seed", "resamples", "queries", "retrievers", "verdict", "agreement", "slices",
                           "difficulty_gap", "type_spread", "stability", "warnings", "pairs", "realism"}
    assert report["metric"] == "mrr" and report["retrievers"] == ["bm25", "alpha", "beta", "gamma"]
    assert report["verdict"]["code"] in ("disagrees", "uncertain")
    assert set(report["slices"]["overall"]) == {"queries", "means", "ci95", "ranking"}


def test_errors_are_one_line_and_exit_1(sample_project_path, tmp_path):
    result = CliRunner().invoke(cli, ["validate", str(sample_project_path), "--retrievers", "bm25"])
    assert result.exit_code == 1 and "approve some rows" in result.output
    result = CliRunner().invoke(cli, ["validate", str(sample_project_path), "--run", "=x"])
    assert result.exit_code == 1 and "NAME=FILE" in result.output
