"""The default claim judge: its features catch what word overlap misses; its weights come with their data."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from curator.core.diagnosis.judge import (FEATURES, WEIGHTS, ClaimJudge, features, load_weights, names,
                                          negation_flips, numbers, swapped_commands, unsure)

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_numbers_names_and_sibling_commands():
    assert numbers("Release 3.9 ships every 12 months, two of them") == {"3.9", "12", "2"}
    assert "3.x" in numbers("use 3.x")
    assert {"sys.modules", "/etc/modules"} <= names("Print sys.modules or read /etc/modules")
    assert swapped_commands("hold it with apt-get hold", "With apt, use apt-mark hold.") == {"apt-get"}
    assert swapped_commands("a low-level tool", "With apt, use apt-mark hold.") == set()


def test_negation_is_compared_clause_by_clause():
    evidence = "list.sort() sorts the list in place. In order to remind you, it does not return the sorted list."
    assert negation_flips("list.sort() sorts the list in place and returns the sorted list.", evidence) == 1
    assert negation_flips("list.sort() sorts the list in place and does not return the sorted list.", evidence) == 0


def _bag(texts):
    """A fake embedder: hashed bag of words, so tests need no model."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.strip(".,").encode()) % 64] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_a_near_copy_with_one_detail_changed_scores_a_conflict():
    evidence = "There are three ways of holding back packages, with dpkg, apt or aptitude."
    same = features("There are three ways of holding back packages.", [evidence], evidence, 0.9)
    changed = features("There are two ways of holding back packages.", [evidence], evidence, 0.9)
    assert same["copy_conflict"] == 0 and same["numbers_missing_evidence"] == 0
    assert changed["numbers_missing_evidence"] == 1 and changed["copy_conflict"] > 0.5


def test_every_verdict_names_its_evidence_and_a_probability():
    contexts = ["Debian 11 is called bullseye. Holding a package uses apt-mark hold.",
                "Unrelated text about printers and paper trays."]
    verdicts = ClaimJudge(_bag).judge(["Holding a package uses apt-mark hold.", "Debian 12 is called bullseye."],
                                      contexts)
    assert [v["context_index"] for v in verdicts] == [1, 1]
    assert verdicts[0]["evidence"] == "Holding a package uses apt-mark hold."
    assert verdicts[1]["evidence"].startswith("Debian 11 is called bullseye.")
    assert all(0.0 <= v["probability"] <= 1.0 and set(v["features"]) == set(FEATURES) for v in verdicts)
    assert verdicts[0]["verdict"] == "supported" and verdicts[1]["verdict"] == "not supported"
    assert "a number or version the evidence does not give" in verdicts[1]["reasons"]
    assert ClaimJudge(_bag).judge(["A claim with no context at all."], [])[0]["evidence"] is None


def test_unsure_band():
    assert unsure({"probability": 0.5}) and not unsure({"probability": 0.9}) and not unsure({"probability": 0.1})


def test_weights_are_committed_with_the_data_they_were_fitted_on():
    weights = load_weights()
    assert weights["features"] == list(FEATURES)
    assert len(weights["coef"]) == len(weights["mean"]) == len(weights["scale"]) == len(FEATURES)
    rows = [json.loads(line) for line in (BENCH / "diagnose_claims_hard.jsonl").read_text().splitlines()]
    claims = [r for r in rows if "about" not in r]
    train = [r for r in claims if r["split"] == "train"]
    assert len(claims) >= 200 and {r["corpus"] for r in claims} == {"python", "debian"}
    assert f"split=train ({len(train)} claims" in weights["fitted_on"]  # held-out rows never fitted
    held = {r["context_path"] for r in claims if r["split"] == "heldout"}
    assert held and not held & {r["context_path"] for r in train}  # held out by whole FAQ entry
    assert WEIGHTS.name == "claim_judge.json"


@pytest.mark.slow
def test_real_minilm_judge_catches_changed_details_and_ranks_a_paraphrase_above_them():
    """Claims written for this test (not from the bench set), judged with the committed weights. A
    paraphrase sharing few words may land in the unsure band (an LLM judge, when given, checks those),
    but never below the claims with a changed detail."""
    from curator.core.diagnosis.judge import default_embed

    context = ("Conffiles are configuration files, usually in /etc, that the package manager will not overwrite "
               "when the package is upgraded. To see which files are kept, run dpkg --status and read Conffiles.")
    judge = ClaimJudge(default_embed())
    claims = ["An upgrade leaves your edited configuration files in /etc alone.",
              "The package manager will overwrite conffiles when the package is upgraded.",
              "To see which files are kept, run dpkg --listfiles."]
    paraphrase, negated, renamed = judge.judge(claims, [context])
    assert negated["verdict"] == renamed["verdict"] == "not supported"
    assert "negation added or dropped against the evidence" in negated["reasons"]
    assert "a name the contexts never mention" in renamed["reasons"]
    assert paraphrase["probability"] >= 0.25 and paraphrase["probability"] > negated["probability"]
    assert paraphrase["evidence"].startswith("Conffiles are configuration files")


@pytest.mark.slow
def test_diagnose_command_judges_with_the_default_judge_and_never_the_bundled_model(sample_project_path, tmp_path):
    """`curator diagnose` without --judge-model/--judge-endpoint: every claim gets the default judge's
    verdict with its evidence (it used to load the bundled 135M model, whose verdicts are at chance)."""
    import os
    import subprocess
    import sys

    from curator.core.store import open_project

    db = open_project(sample_project_path)
    chunk_id, text = db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()
    db.close()
    first = text.split(".")[0].strip() + "."
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps({"user_input": "q", "retrieved_context_ids": [chunk_id],
                                  "response": f"{first} The moon is made of green cheese and sold in 1999."}) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "curator", *a], capture_output=True, text=True, env=env,
                                    timeout=300)
    assert run("import-traces", str(sample_project_path), str(traces)).returncode == 0
    report = run("diagnose", str(sample_project_path), "--json")
    assert report.returncode == 0, report.stderr
    trace_id = json.loads(report.stdout)["traces"][0]["id"]
    detail = json.loads(run("trace", str(sample_project_path), trace_id, "--json").stdout)
    assert {c["judge"] for c in detail["claims"]} == {"claim-judge:1"}
    assert all(c["evidence"] and c["probability"] is not None for c in detail["claims"])
    assert detail["claims"][-1]["verdict"] == "not supported"
    assert "llama" not in report.stderr.lower()
    # who made each verdict, how often that judge agreed with human labels on claims like it, and the unsure ones
    assert all(c["judged_by"] == "default judge" and 0 < c["agreement"] <= 1 for c in detail["claims"])
    judged = json.loads(report.stdout)["judge"]
    assert judged["by_judge"] == {"default judge": len(detail["claims"])}
    assert judged["unsure"] == len(judged["unsure_claims"]) == sum(c["unsure"] for c in detail["claims"])
    assert {c["claim_id"] for c in judged["unsure_claims"]} == {c["claim_id"] for c in detail["claims"] if c["unsure"]}
    assert 0 < judged["default_expected_wrong"] < len(detail["claims"]) and "expected to be wrong" in judged["text"]
