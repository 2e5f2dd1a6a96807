"""The Generate tab on a real project: start, live rows, rejects, cancel, resume, errors, real model."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from PySide6.QtCore import Qt

from curator.core.generation.runs import generation_runs, rejected_candidates
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import QUERY_TYPES
from curator.core.queries.rows import list_queries
from curator.core.store import open_project
from curator.gui.generate_view import BUNDLED, ENDPOINT, GGUF, GenerateView
import scripted
from scripted import good_reply


def every_third_is_bad(messages, _calls=[0]) -> str:
    _calls[0] += 1
    return "Here are two questions about it" if _calls[0] % 3 == 0 else good_reply(messages)


@pytest.fixture
def make_view(qtbot, sample_project_path):
    made = []

    def make(reply=good_reply, backend_factory="fake"):
        db = open_project(sample_project_path)
        factory = (lambda config: FakeBackend(reply)) if backend_factory == "fake" else backend_factory
        view = GenerateView(db, sample_project_path, backend_factory=factory)
        qtbot.addWidget(view)
        view.resize(1100, 700)
        view.show()
        made.append((view, db))
        return view

    yield make
    for view, db in made:
        if view.worker is not None:
            view.cancel()
            qtbot.waitUntil(lambda: view.worker is None, timeout=60000)
        view.close()
        db.close()


def _finish(qtbot, view, start, timeout=60000) -> dict:
    outcomes = []
    view.task_finished.connect(lambda summary: outcomes.append(("finished", summary)))
    view.task_failed.connect(lambda *args: outcomes.append(("failed", args)))
    assert start() is not None
    qtbot.waitUntil(lambda: bool(outcomes) and not view.busy(), timeout=timeout)
    kind, payload = outcomes[0]
    assert kind == "finished", payload
    return payload


def test_start_lists_new_rows_and_rejected_candidates_live(make_view, qtbot):
    view = make_view(every_third_is_bad)
    view.count.setValue(6)
    view.answers.setCurrentIndex(view.answers.findData("free"))  # rejections come from the bad replies only
    summary = _finish(qtbot, view, view.start)
    assert summary["status"] == "complete" and summary["accepted"] == 6
    # every accepted row reached the list as it was made, and it is in the project
    shown = {r["id"] for r in view.rows_model.rows()}
    stored = {q["id"] for q in list_queries(view.db) if q["run_id"] == summary["run_id"]}
    assert len(shown) == 6 and shown == stored
    rejected = view.rejected_model.rows()
    assert len(rejected) == summary["rejected"] > 0
    assert all(r["reason"] for r in rejected)
    assert "Question/Answer format" in view.rejected_model.text(0, 2)
    assert view.progress.value() == view.progress.maximum() == 6
    assert "rows/min" in view.rate.text()
    assert view.start_button.isEnabled() and not view.cancel_button.isEnabled()
    assert not view.resume_button.isEnabled()  # the run is complete: nothing to resume


def test_mix_spin_boxes_shape_the_run(make_view, qtbot):
    view = make_view()
    for qtype, spin in view.mix_spins.items():
        spin.setValue(100 if qtype == "keyword" else 0)
    view.count.setValue(3)
    summary = _finish(qtbot, view, view.start)
    assert summary["by_type"] == {"keyword": 3}
    assert {r["query_type"] for r in view.rows_model.rows()} == {"keyword"}
    assert set(view.mix_spins) == set(QUERY_TYPES)


def test_answers_choice_picks_answer_first_or_free_rows(make_view, qtbot):
    backends: list = []
    view = make_view(backend_factory=lambda config: backends.append(FakeBackend(good_reply)) or backends[-1])
    for qtype, spin in view.mix_spins.items():
        spin.setValue(100 if qtype == "factoid" else 0)
    view.count.setValue(2)
    assert view.answers.currentData() == "extractive"  # the default: answer-first
    first = _finish(qtbot, view, view.start)
    view.answers.setCurrentIndex(view.answers.findData("free"))
    second = _finish(qtbot, view, view.start)
    params = {run: json.loads(p) for run, p in view.db.execute("SELECT id, params FROM generation_runs")}
    assert params[first["run_id"]]["answers"] == "extractive" and params[second["run_id"]]["answers"] == "free"
    first_prompt, second_prompt = (backend.prompts[0][-1]["content"] for backend in backends)
    assert "Answer: " in first_prompt and "Passage" not in first_prompt and "Passage" in second_prompt


def test_cancel_keeps_rows_and_resume_reaches_the_target(make_view, qtbot):
    gate = threading.Event()

    def slow(messages):
        gate.wait(0.15)  # a slow model, so cancel lands mid-run
        return good_reply(messages)

    view = make_view(slow)
    view.count.setValue(40)
    with qtbot.waitSignal(view.task_finished, timeout=60000) as blocker:
        assert view.start() is not None
        qtbot.waitUntil(lambda: view.rows_model.rowCount() >= 2, timeout=30000)
        view.cancel()
    summary = blocker.args[0]
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    assert summary["status"] == "cancelled" and 2 <= summary["accepted"] < 40
    assert "Cancelled" in view.status.text()
    assert generation_runs(view.db)[0]["status"] == "cancelled"
    assert view.resume_button.isEnabled()
    made_before = view.rows_model.rowCount()
    view.backend_factory = lambda config: FakeBackend(good_reply)
    again = _finish(qtbot, view, view.resume)
    assert again["run_id"] == summary["run_id"] and again["status"] == "complete" and again["accepted"] == 40
    assert view.rows_model.rowCount() == 40 and made_before < 40
    texts = [q["text_norm"] for q in list_queries(view.db)]
    assert len(texts) == len(set(texts)) == 40
    assert not view.resume_button.isEnabled()


def test_bad_settings_and_a_broken_model_reach_a_dialog(make_view, qtbot, tmp_path):
    view = make_view(backend_factory=None)
    for spin in view.mix_spins.values():
        spin.setValue(0)
    assert view.start() is None
    assert "weight 0" in view.last_error[0] and view._dialog.isVisible()
    assert view._dialog.textFormat() == Qt.PlainText
    view._dialog.close()
    view.mix_spins["factoid"].setValue(50)
    view.model_choice.setCurrentIndex(GGUF)
    assert view.model_path.isEnabled() and not view.endpoint.isEnabled()
    assert view.start() is None and "No GGUF file" in view.last_error[0]
    view._dialog.close()
    view.model_choice.setCurrentIndex(ENDPOINT)
    assert view.start() is None and "endpoint" in view.last_error[0].lower()
    view._dialog.close()
    broken = tmp_path / "broken.gguf"
    broken.write_text("<b>not a model</b>" * 100)
    view.model_choice.setCurrentIndex(GGUF)
    view.model_path.setText(str(broken))
    with qtbot.waitSignal(view.task_failed, timeout=30000) as blocker:
        view.start()
    assert "not a GGUF model file" in blocker.args[0] and blocker.args[1]
    assert view._dialog.isVisible() and view._dialog.text() == blocker.args[0]
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    assert view.start_button.isEnabled()
    view._dialog.close()


def test_resume_without_a_run_is_refused(make_view):
    view = make_view()
    assert not view.resume_button.isEnabled()
    assert view.resume() is None and "no unfinished" in view.last_error[0]
    view._dialog.close()


def _llama_cpp_evaluates_a_prompt() -> bool:
    """Probe in a child process: a llama.cpp build that crashes must skip this test, not kill pytest."""
    code = ("from llama_cpp import Llama\n"
            "from curator.core.resources import bundled_model_path\n"
            "Llama(model_path=str(bundled_model_path()), n_ctx=256, verbose=False)('Hello there, my friend', max_tokens=1)\n")
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _count_sequences_per_decode(monkeypatch) -> tuple[list[int], set[int]]:
    """Sequences in each llama_decode of the batch decoder, and the decoders' slot counts."""
    from curator.core.generation.backends.llama_batch import BatchDecoder

    per_decode: list[int] = []
    slots: set[int] = set()
    real_step = BatchDecoder._step

    def counting_step(decoder, live):
        per_decode.append(len(live))
        slots.add(len(decoder.slots))
        return real_step(decoder, live)

    monkeypatch.setattr(BatchDecoder, "_step", counting_step)
    return per_decode, slots


def test_real_bundled_model_makes_rows_from_the_gui(make_view, qtbot, bundled_model, monkeypatch):
    """llama-cpp-python on the bundled SmolLM2-135M from the GUI, kept small: 2 factoid rows.

    The 135M model fails the quality filters often (1 factoid accepted of 8 candidates in a
    trial here), so the test asserts that every candidate became a project row (a query or a
    rejected candidate with its reason) and that the lists match the project exactly. The
    run batches like a CLI run: several sequences share one decode, as many slots as the run
    record's ``parallel`` (the engine probe's choice)."""
    # checked in a child first: a crashing llama.cpp build would otherwise kill the whole test run
    assert _llama_cpp_evaluates_a_prompt(), ("this llama-cpp-python build crashes evaluating a multi-token "
                                             "prompt; see tests/core/test_llama_build.py for the rebuild")
    per_decode, slots = _count_sequences_per_decode(monkeypatch)
    view = make_view(backend_factory=None)
    assert view.model_choice.currentIndex() == BUNDLED
    for qtype, spin in view.mix_spins.items():
        spin.setValue(100 if qtype == "factoid" else 0)
    view.count.setValue(2)
    summary = _finish(qtbot, view, view.start, timeout=900000)
    assert summary["status"] in {"complete", "exhausted"}
    assert summary["accepted"] + summary["rejected"] >= 2
    stored = [q for q in list_queries(view.db) if q["run_id"] == summary["run_id"]]
    assert len(stored) == summary["accepted"] == view.rows_model.rowCount()
    assert {q["id"] for q in stored} == {r["id"] for r in view.rows_model.rows()}
    assert all(q["gold_chunk_ids"] and q["source"] == "synthetic" for q in stored)
    rejected = rejected_candidates(view.db, run_id=summary["run_id"])
    assert len(rejected) == summary["rejected"] == view.rejected_model.rowCount()
    assert all(r["reason"] for r in rejected)
    assert generation_runs(view.db)[0]["backend"] == "llama-cpp"
    params = json.loads(view.db.execute("SELECT params FROM generation_runs WHERE id = ?",
                                        [summary["run_id"]]).fetchone()[0])
    # The engine setting is the probe's choice for this machine (optimize.choose_engine), recorded with why;
    # one sequence runs through the batch decoder too.
    assert params["engine_choice"]["chosen"] == f"{params['engine_choice']['chosen'].split()[0]} x{params['parallel']}"
    assert slots == {params["parallel"]}  # the decoder that ran had the slots the record says
    if params["parallel"] > 1:
        assert max(per_decode) >= 2, per_decode  # several sequences decoded at once, not one by one


def test_real_bundled_model_run_cancelled_from_the_gui(make_view, qtbot):
    """Start the bundled model from the GUI, cancel after its first candidate: the run stops,
    says so, and every candidate it made is in the project and in the lists."""
    assert _llama_cpp_evaluates_a_prompt(), "llama.cpp build broken: see tests/core/test_llama_build.py"
    view = make_view(backend_factory=None)
    view.count.setValue(30)
    with qtbot.waitSignal(view.task_finished, timeout=300000) as blocker:
        assert view.start() is not None
        qtbot.waitUntil(lambda: view.rows_model.rowCount() + view.rejected_model.rowCount() >= 1, timeout=240000)
        view.cancel()
    summary = blocker.args[0]
    qtbot.waitUntil(lambda: not view.busy(), timeout=60000)
    assert summary["status"] == "cancelled" and summary["accepted"] < 30
    assert generation_runs(view.db)[0]["status"] == "cancelled" and view.resume_button.isEnabled()
    stored = {q["id"] for q in list_queries(view.db) if q["run_id"] == summary["run_id"]}
    assert stored == {r["id"] for r in view.rows_model.rows()}
    assert len(rejected_candidates(view.db, run_id=summary["run_id"])) == view.rejected_model.rowCount()


def test_mode_choice_forces_need_first_rows_and_the_run_records_it(make_view, qtbot):
    """Issue 39: the Generate tab's Mode; need-first rows are asked with the whole passage and quote their answer."""
    backends: list = []
    view = make_view(backend_factory=lambda config: backends.append(FakeBackend(scripted.need_first_reply))
                     or backends[-1])
    for qtype, spin in view.mix_spins.items():
        spin.setValue(100 if qtype == "factoid" else 0)
    view.count.setValue(2)
    assert view.mode.currentData() == "auto"  # the default: follow the model
    view.mode.setCurrentIndex(view.mode.findData("need-first"))
    summary = _finish(qtbot, view, view.start)
    params = json.loads(view.db.execute("SELECT params FROM generation_runs WHERE id = ?", [summary["run_id"]]).fetchone()[0])
    assert params["mode"]["chosen"] == "need-first" and summary["accepted"] == 2
    assert "has NOT read it" in backends[0].prompts[0][0]["content"] and "Passage:" in backends[0].prompts[0][-1]["content"]
