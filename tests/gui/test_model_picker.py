"""The model pickers of the Generate and Diagnose tabs on a real project, with fake model stores under a
temporary HOME: found models with their numbers here, too-big ones greyed, the bigger-model hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.core import store
from curator.core.cachefiles import file_sha256
from curator.core.generation.backends import FakeBackend
from curator.core.modelfiles import listing
from curator.core.queries.rows import add_query
from curator.core.review import decisions
from curator.core.store import open_project
from curator.gui.diagnose_view import DiagnoseView
from curator.gui.generate_view import BUNDLED, GenerateView
from curator.gui.model_picker import FOUND_START, OTHER_FILE
from gguf_bytes import write_model
from scripted import good_reply

GB = 10**9
HUGE_KV = {"block_count": 200, "embedding_length": 8192, "attention.head_count": 64, "attention.head_count_kv": 64}


@pytest.fixture
def stores(tmp_path, monkeypatch) -> dict[str, Path]:
    """Two models in LM Studio's folder: one that fits (410M parameters), one whose KV cache does not."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(tmp_path / "config"))  # the user's folders, the app's settings
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(listing, "available_memory", lambda: 2 * GB)
    folder = home / ".lmstudio" / "models" / "pub" / "repo"
    small = write_model(folder / "small.gguf", "Small", tensors=[("w", (4096, 100_000), 12)])
    huge = write_model(folder / "huge.gguf", "Huge", **{f"llama.{k}": v for k, v in HUGE_KV.items()})
    return {"small": small, "huge": huge}


def record_rows(db, model: Path, accepted: int, approve: int, reject: int, rejected_candidates: int) -> None:
    """A run of ``model`` as generate records it, its rows, and a reviewer's decisions on them."""
    with db.conn:
        run = db.execute("INSERT INTO generation_runs (created_at, backend, model_path, model_size, model_sha256, "
                         "params, status, counts) VALUES (?,?,?,?,?,?,?,?)",
                         [store.now(), "llama-cpp", str(model), model.stat().st_size, file_sha256(model), "{}",
                          "complete", json.dumps({"seconds": 120.0})]).lastrowid
        for i in range(rejected_candidates):
            db.execute("INSERT INTO rejected_candidates (run_id, query_type, text, reason) VALUES (?, 'vague', ?, 'x')",
                       [run, f"bad {i}"])
    chunk = db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]
    ids = [add_query(db, f"Question {model.stem} {i}?", "synthetic", query_type="factoid", run_id=run,
                     source_chunk_ids=[chunk], gold_chunk_ids=[chunk]) for i in range(accepted)]
    for qid in ids[:approve]:
        decisions.decide(db, qid, "approve", "ana")
    for qid in ids[approve:approve + reject]:
        decisions.decide(db, qid, "reject", "ana")


@pytest.fixture
def generate_view(qtbot, sample_project_path, stores):
    db = open_project(sample_project_path)
    record_rows(db, stores["small"], accepted=3, approve=1, reject=1, rejected_candidates=2)
    view = GenerateView(db, sample_project_path, backend_factory=lambda config: FakeBackend(good_reply))
    qtbot.addWidget(view)
    view.resize(1200, 700)
    view.show()
    qtbot.waitUntil(lambda: view.picker.listing is not None and view.picker.worker is None, timeout=30000)
    yield view
    view.close()
    db.close()


def entries(picker) -> dict[str, tuple[str, bool]]:
    """Found entries by model name: (text, enabled)."""
    return {picker.choice.itemData(i, listing_row_role())["name"]: (picker.choice.itemText(i),
                                                                   picker.choice.model().item(i).isEnabled())
            for i in range(FOUND_START, picker.choice.count())}


def listing_row_role():
    from curator.gui.model_picker import ROW

    return ROW


def test_the_generate_picker_lists_found_models_with_their_numbers_and_greys_a_model_too_big(generate_view, stores):
    found = entries(generate_view.picker)
    assert set(found) == {"small", "huge"}  # the bundled model is entry 0, not repeated
    small_text, small_enabled = found["small"]
    assert small_enabled and "410M" in small_text and "Q4_K_M" in small_text
    assert "3/5 kept, 1 approved, 0 edited, 1 rejected" in small_text and "rows/min" in small_text
    huge_text, huge_enabled = found["huge"]
    assert not huge_enabled and "too big here: needs about" in huge_text and "2.0 GB free" in huge_text
    assert generate_view.model_choice.currentIndex() == BUNDLED and "not used" not in generate_view.model_choice.itemText(0)


def test_the_hint_names_the_bigger_model_and_its_cost_and_use_it_chooses_it(generate_view, stores):
    assert generate_view.hint_label.isVisible()
    text = generate_view.hint_label.text()
    assert text.startswith("Found small (410M parameters") and "s per row (measured in this project)" in text
    generate_view.hint_use.click()
    assert generate_view.picker.chosen_path() == str(stores["small"]) and not generate_view.hint_label.isVisible()
    config = generate_view.config()
    assert config.model_path == str(stores["small"]) and config.endpoint is None
    assert "In this project: 3/5 kept" in generate_view.picker.numbers.text()


def test_other_file_and_endpoint_still_work(generate_view, tmp_path):
    generate_view.model_choice.setCurrentIndex(OTHER_FILE)
    assert generate_view.model_path.isEnabled() and generate_view.config() is None  # no file typed
    generate_view.model_path.setText(str(tmp_path / "mine.gguf"))
    assert generate_view.config().model_path == str(tmp_path / "mine.gguf")


def test_a_dismissed_hint_stays_dismissed(qtbot, generate_view, sample_project_path):
    generate_view.hint_close.click()
    again = GenerateView(generate_view.db, sample_project_path)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitUntil(lambda: again.picker.listing is not None and again.picker.worker is None, timeout=30000)
    assert not again.hint_label.isVisible()
    again.close()


def test_the_judge_picker_never_offers_the_bundled_model(qtbot, sample_db, stores):
    view = DiagnoseView(sample_db)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.judge_picker.listing is not None and view.judge_picker.worker is None, timeout=30000)
    names = set(entries(view.judge_picker))
    assert names == {"small", "huge"} and view.judge_picker.choice.itemText(0).startswith("No LLM judge")
    assert view.judge_picker.chosen_path() is None


def test_the_judge_button_judges_unjudged_claims_in_a_worker(qtbot, sample_db, stores, tmp_path):
    from curator.core.diagnosis.traces import import_traces

    chunk_id, text = sample_db.execute("SELECT id, text FROM chunks ORDER BY id LIMIT 1").fetchone()
    first = " ".join(text.split()[:10]).rstrip(".")
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"user_input": "How do I start?", "retrieved_context_ids": [chunk_id],
                                  "response": f"{first}. The moon is made of cheese."}), encoding="utf-8")
    import_traces(sample_db, traces)
    view = DiagnoseView(sample_db)
    qtbot.addWidget(view)
    assert view.judge() is not None and not view.judge_button.isEnabled()
    qtbot.waitUntil(lambda: view.judge_worker is None, timeout=120000)
    judged = sample_db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0]
    assert judged >= 2 and view.judge_status.text().startswith(f"{judged} claims judged (claim-judge")
    assert view.judge_button.isEnabled()


def test_a_folder_added_from_the_picker_is_listed_and_kept(qtbot, generate_view, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from curator.core.modelfiles.places import user_folders

    mine = tmp_path / "mine"
    write_model(mine / "own.gguf", "Own")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(mine)))
    generate_view.picker.add_folder_button.click()
    qtbot.waitUntil(lambda: "own" in entries(generate_view.picker) and generate_view.picker.worker is None,
                    timeout=30000)
    assert "your folder" in entries(generate_view.picker)["own"][0] and user_folders() == [mine.resolve()]
    assert generate_view.picker.add_folder(str(tmp_path / "nowhere")) is None
    assert "not a folder" in generate_view.picker.numbers.text()
