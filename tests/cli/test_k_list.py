"""One k-list rule: core's parse_ks, the CLI's --k and the Evaluate tab's field read a list alike."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.errors import InputError
from curator.core.evaluation.metrics import DEFAULT_KS, parse_ks
from curator.gui.evaluate_view import parse_ks as gui_parse_ks

GOOD = {"5, 1,1": (1, 5), "10,1": (1, 10), " 3 ": (3,), "1,,5,": (1, 5), DEFAULT_KS: (1, 3, 5, 10, 20)}
BAD = ("", " , ", "0", "1,-2", "a", "1 0", "1.5", "1;5")


@pytest.mark.parametrize("text, expected", GOOD.items())
def test_core_sorts_and_deduplicates(text, expected):
    assert parse_ks(text) == expected
    assert gui_parse_ks(text) == expected  # the GUI answers the same


@pytest.mark.parametrize("text", BAD)
def test_core_gui_and_cli_refuse_the_same_lists(text, sample_project_path):
    with pytest.raises(InputError, match="whole numbers"):
        parse_ks(text)
    with pytest.raises(ValueError, match=f"k values {text!r}: use whole numbers"):
        gui_parse_ks(text)
    result = CliRunner().invoke(cli, ["eval", str(sample_project_path), "--k", text])
    assert result.exit_code == 2 and "Invalid value for --k: use whole numbers" in result.output


def test_cli_reads_a_list_the_way_core_does(sample_project_path):
    """A list the old CLI passed through unsorted reaches evaluate sorted, once each."""
    result = CliRunner().invoke(cli, ["eval", str(sample_project_path), "--k", "5,1,1"])
    # the sample project has no approved rows: the list was accepted and evaluate itself refused
    assert result.exit_code == 1 and "approve some rows" in result.stderr
