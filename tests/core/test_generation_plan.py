"""Issue 33, less engine work per accepted row: a type that cannot build anything in the project hands its
share to the other types at plan time (said once, kept in the run record)."""

from __future__ import annotations

import json

from curator.core.generation import generate as generate_mod
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import (DEFAULT_MIX, GenerationConfig, GenerationEvents, allocate,
                                              generate)
import scripted


class BundledFake(FakeBackend):
    """Scripted replies under the bundled model's name: what the plan decides for the bundled model."""

    def __init__(self, model_path, responses):
        super().__init__(responses)
        self.model_path = model_path

    def describe(self) -> dict:
        return {**super().describe(), "model_path": str(self.model_path)}


def test_multi_hop_without_approved_rows_hands_its_share_over_at_plan_time(sample_db, bundled_model):
    """With the bundled model and no approved factoid row, multi-hop rows would ask the model for both
    questions (0 kept of 135 candidates on two FAQs): none is asked, its rows go to the other types at
    once, and the run says so once, in its progress and its record."""
    heard = []
    events = GenerationEvents(progress=lambda done, wanted, message: heard.append(message))
    summary = generate(sample_db, GenerationConfig(count=10, seed=3), backend=BundledFake(bundled_model, scripted.good_reply),
                       events=events, answer_check=scripted.Gains(1.0))
    wanted = allocate(10, DEFAULT_MIX)["multi_hop"]
    handed = summary["handed_over"]["multi_hop"]
    assert handed["rows"] == wanted >= 1 and sum(handed["to"].values()) == wanted
    assert set(handed["to"]) <= {"factoid", "keyword", "vague"} and "approve" in handed["why"]
    asked = {t for (t,) in sample_db.execute("SELECT query_type FROM queries UNION SELECT query_type FROM rejected_candidates")}
    assert "multi_hop" not in asked and {"factoid", "keyword", "vague"} <= asked
    assert [m for m in heard if "handed over" in m] == [heard[0]] and "multi_hop" in heard[0]
    assert summary["accepted"] == 10 and summary["status"] == "complete" and "multi_hop" not in summary["refilled"]
    (counts,) = sample_db.execute("SELECT counts FROM generation_runs").fetchone()
    assert json.loads(counts)["handed_over"]["multi_hop"]["rows"] == wanted


def test_a_share_stays_where_the_type_can_build_or_nobody_can_take_it(sample_db, bundled_model):
    """Another model (here a scripted one without a file) may write sentence pairs: multi-hop keeps its
    rows. A mix of multi-hop alone has no type to take them: they stay, as the user asked."""
    plan = allocate(10, DEFAULT_MIX)
    config = GenerationConfig(count=10)
    assert generate_mod._hand_over(sample_db, plan, DEFAULT_MIX, config, FakeBackend(scripted.good_reply)) == (plan, {})
    alone = {"multi_hop": 3}
    assert generate_mod._hand_over(sample_db, alone, {"multi_hop": 1.0}, config,
                                   BundledFake(bundled_model, scripted.good_reply)) == (alone, {})
    free = GenerationConfig(count=10, answers="free")  # the old prompts ask every type of the model
    assert generate_mod._hand_over(sample_db, plan, DEFAULT_MIX, free, BundledFake(bundled_model, scripted.good_reply))[1] == {}


def test_unanswerable_rows_without_near_miss_material_go_to_the_others(docs_project):
    """A corpus that names no setting with an unmentioned peer offers no near miss: its share moves at plan
    time instead of failing (no unanswerable share is taken by a type that does not fill in for others)."""
    db = docs_project({"trash.md": "# Trash\n\nThe agent keeps deleted files in a trash folder for thirty days "
                                   "before purging them for good.\n\nEach purge writes one line to the activity "
                                   "log with the number of files and bytes it freed.\n"})
    plan, handed = generate_mod._hand_over(db, {"factoid": 2, "unanswerable": 1}, {"factoid": 0.8, "unanswerable": 0.2},
                                           GenerationConfig(count=3), FakeBackend(scripted.good_reply))
    assert plan == {"factoid": 3, "unanswerable": 0}
    assert handed["unanswerable"]["to"] == {"factoid": 1} and "no near miss" in handed["unanswerable"]["why"]
