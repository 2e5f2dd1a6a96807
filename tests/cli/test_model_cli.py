"""`curator model optimize FILE`: a faster copy of a user's GGUF, written beside it and measured."""

import json
import shutil

from click.testing import CliRunner

from curator.cli.main import cli


def test_optimize_writes_a_q8_0_copy_beside_the_file_and_reports_both(tmp_path, bundled_model):
    model = tmp_path / "my-model.gguf"
    shutil.copy(bundled_model, model)
    result = CliRunner().invoke(cli, ["model", "optimize", str(model), "--json", "--threads", "2"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    copy = tmp_path / "my-model.q8_0.gguf"
    assert report["copy"]["path"] == str(copy) and copy.is_file() and report["where"] == "beside"
    assert (report["source"]["type"], report["copy"]["type"]) == ("Q4_1", "Q8_0")
    assert report["copy"]["bytes"] == copy.stat().st_size > report["source"]["bytes"]
    for side in ("source", "copy"):
        assert report[side]["prompt_tokens_per_s"] > 0 and report[side]["decode_tokens_per_s"] > 0
    assert model.read_bytes() == bundled_model.read_bytes()  # the original is never changed
    assert not report["reused_existing_copy"]

    again = CliRunner().invoke(cli, ["model", "optimize", str(model), "--threads", "2"])
    assert again.exit_code == 0 and "reused existing" in again.output and "Q4_1 -> Q8_0" in again.output


def test_optimize_refuses_a_file_already_of_that_type(tmp_path, bundled_model):
    from curator.core.generation.repack import quantize_copy

    q8 = quantize_copy(bundled_model, tmp_path / "already.q8_0.gguf")
    result = CliRunner().invoke(cli, ["model", "optimize", str(q8)])
    assert result.exit_code == 1 and "already Q8_0" in result.output


def test_optimize_names_a_file_that_is_not_a_model(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    result = CliRunner().invoke(cli, ["model", "optimize", str(bad)])
    assert result.exit_code == 1 and "notes.gguf" in result.output and "not a GGUF" in result.output
