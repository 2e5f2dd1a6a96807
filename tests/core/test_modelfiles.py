"""The models on this machine: fake stores laid out as each tool lays them out, under a temporary
HOME; hostile files listed as unreadable without hanging; the real bundled model described."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from curator.core.errors import InputError, ModelFileError
from curator.core.modelfiles import places as places_mod
from curator.core.modelfiles.discover import discover, ollama_name
from curator.core.modelfiles.header import read_header
from curator.core.modelfiles.listing import bigger_model_hint, fit, list_models
from curator.core.modelfiles.places import add_folder, remove_folder, tool_places, user_folders
from gguf_bytes import TWO_TENSORS, gguf_bytes, model_metadata, write_model

Q8_0, Q4_K_M, Q4_1 = 7, 15, 3
ENV_VARS = ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "LLAMA_CACHE", "XDG_CACHE_HOME",
            "XDG_DATA_HOME")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A temporary HOME with none of the tools' variables set, and its own config folder (the
    user's model folders are kept there)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(tmp_path / "config"))
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return home


def ollama_model(root: Path, name: str, tag: str, data: bytes, namespace: str = "library") -> Path:
    """A blob named by its SHA-256 and the manifest naming it, as ``ollama pull`` leaves them."""
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    blob = root / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    manifest = root / "manifests" / "registry.ollama.ai" / namespace / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 10},
              {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)}]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    return blob


def model_bytes(name: str, file_type: int = Q4_K_M, tensors=TWO_TENSORS, **meta) -> bytes:
    return gguf_bytes(model_metadata(name, file_type=file_type, **meta), list(tensors))


def by_name(found) -> dict:
    return {m.name: m for m in found}


def test_each_tools_store_is_found_with_the_headers_facts(home, monkeypatch):
    ollama_model(home / ".ollama" / "models", "qwen2.5", "1.5b", model_bytes("Qwen"))
    write_model(home / ".lmstudio" / "models" / "lmstudio-community" / "Phi" / "phi.Q8_0.gguf", "Phi", file_type=Q8_0)
    write_model(home / ".cache" / "lm-studio" / "models" / "old" / "repo" / "old.gguf", "Old")
    blob = write_model(home / ".cache" / "huggingface" / "hub" / "models--org--Repo-GGUF" / "blobs" / "ab12", "HF")
    for rev in ("rev1", "rev2"):  # two revisions holding the same blob: one model
        link = blob.parents[1] / "snapshots" / rev / "repo.Q4_K_M.gguf"
        link.parent.mkdir(parents=True)
        link.symlink_to(blob)
    write_model(home / ".local" / "share" / "nomic.ai" / "GPT4All" / "gpt.gguf", "G", file_type=Q4_1)
    write_model(home / "jan" / "models" / "llama" / "jan.gguf", "J", template=False)
    write_model(home / ".cache" / "llama.cpp" / "bartowski_x.gguf", "L", context=32768)
    found = by_name(discover(tool_places(platform="linux"), bundled=False))
    assert set(found) == {"qwen2.5:1.5b", "phi.Q8_0", "old", "org/Repo-GGUF/repo.Q4_K_M.gguf", "gpt", "jan",
                          "bartowski_x"}
    stores = {m.name: m.store for m in found.values()}
    assert stores["qwen2.5:1.5b"] == "ollama" and stores["phi.Q8_0"] == stores["old"] == "lmstudio"
    assert (stores["gpt"], stores["jan"], stores["bartowski_x"]) == ("gpt4all", "jan", "llama.cpp")
    assert all(m.readable and m.parameters == 64064 and m.architecture == "llama" for m in found.values())
    quants = {m.name: m.quantization for m in found.values()}
    assert quants["phi.Q8_0"] == "Q8_0" and quants["gpt"] == "Q4_1" and quants["qwen2.5:1.5b"] == "Q4_K_M"
    assert found["jan"].chat_template is False and found["old"].chat_template is True
    assert found["bartowski_x"].context_length == 32768
    hf = found["org/Repo-GGUF/repo.Q4_K_M.gguf"]
    assert hf.also_at and "rev" in hf.also_at[0]  # the second revision's link, listed once
    assert len(found["qwen2.5:1.5b"].sha256) == 64  # the blob's name: no hashing needed


def test_the_tools_variables_move_their_stores(home, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "llama"))
    ollama_model(tmp_path / "ollama", "m", "latest", model_bytes("M"), namespace="someone")
    link = tmp_path / "hf" / "hub" / "models--a--b" / "snapshots" / "r" / "sub" / "x.gguf"
    write_model(link, "X")
    write_model(tmp_path / "llama" / "y.gguf", "Y")
    write_model(home / ".ollama" / "models" / "ignored.gguf", "not a store layout")
    assert set(by_name(discover(tool_places(), bundled=False))) == {"someone/m:latest", "a/b/x.gguf", "y"}
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub2"))
    write_model(tmp_path / "hub2" / "models--c--d" / "snapshots" / "r" / "z.gguf", "Z")
    assert "c/d/z.gguf" in by_name(discover(tool_places(), bundled=False))


def test_each_platforms_default_folders():
    home = Path("/Users/ana")
    mac = {(p.store, str(p.folder)) for p in tool_places(env={}, home=home, platform="darwin")}
    assert ("gpt4all", "/Users/ana/Library/Application Support/nomic.ai/GPT4All") in mac
    assert ("llama.cpp", "/Users/ana/Library/Caches/llama.cpp") in mac
    assert ("ollama", "/Users/ana/.ollama/models") in mac and ("lmstudio", "/Users/ana/.lmstudio/models") in mac
    win_env = {"LOCALAPPDATA": "C:/Users/ana/AppData/Local", "APPDATA": "C:/Users/ana/AppData/Roaming"}
    win = {(p.store, p.folder.as_posix()) for p in tool_places(env=win_env, home=Path("C:/Users/ana"), platform="win32")}
    assert ("gpt4all", "C:/Users/ana/AppData/Local/nomic.ai/GPT4All") in win
    assert ("jan", "C:/Users/ana/AppData/Roaming/Jan/data") in win
    assert ("huggingface", "C:/Users/ana/.cache/huggingface/hub") in win
    linux = {(p.store, str(p.folder)) for p in tool_places(env={}, home=Path("/home/ana"), platform="linux")}
    assert ("ollama", "/usr/share/ollama/.ollama/models") in linux  # the system service's store
    assert ("gpt4all", "/home/ana/.local/share/nomic.ai/GPT4All") in linux


def test_ollama_names_as_ollama_list_shows_them(tmp_path):
    m = tmp_path / "manifests"
    assert ollama_name(m / "registry.ollama.ai" / "library" / "llama3.2" / "3b", m) == "llama3.2:3b"
    assert ollama_name(m / "registry.ollama.ai" / "ana" / "mine" / "latest", m) == "ana/mine:latest"
    assert ollama_name(m / "hf.co" / "org" / "repo" / "Q4_K_M", m) == "hf.co/org/repo:Q4_K_M"


def run_with_guard(fn, *args, **kwargs):
    """Run ``fn`` in a thread; a hang (a FIFO opened for reading) fails the test instead of the suite."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(fn(*args, **kwargs)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "discovery hung"
    return out[0]


def test_hostile_files_are_listed_unreadable_with_the_reason_and_never_hang(home):
    store = home / ".lmstudio" / "models" / "bad" / "files"
    store.mkdir(parents=True)
    (store / "counts.gguf").write_bytes(gguf_bytes({}, tensor_count=2**62, key_count=2**40))
    whole = model_bytes("W")
    (store / "truncated.gguf").write_bytes(whole[:len(whole) // 2 - 100])
    vocab = gguf_bytes({"tokenizer.ggml.tokens": ["a"]})  # then claim 2**40 strings in that array
    at = vocab.index(b"\x09\x00\x00\x00\x08\x00\x00\x00") + 8
    (store / "array.gguf").write_bytes(vocab[:at] + (2**40).to_bytes(8, "little") + vocab[at + 8:])
    (store / "text.gguf").write_bytes(b"not a model at all" * 10)
    (store / "empty.gguf").write_bytes(b"")
    (store / "loop.gguf").symlink_to(store / "loop.gguf")
    (store / "dangling.gguf").symlink_to(store / "gone.gguf")
    os.mkfifo(store / "fifo.gguf")
    (store / "folder.gguf").mkdir()  # a folder named like a model is walked into, not read
    write_model(store / "good.gguf", "fine")
    found = by_name(run_with_guard(discover, tool_places(), bundled=False))
    assert found.pop("good").readable
    assert set(found) == {"counts", "truncated", "array", "text", "empty", "loop", "dangling", "fifo"}
    reasons = {name: m.problem for name, m in found.items()}
    assert not any(m.readable for m in found.values())
    assert "damaged header" in reasons["counts"] and "4611686018427387904 tensors" in reasons["counts"]
    assert "truncated or damaged" in reasons["truncated"] and "truncated or damaged" in reasons["array"]
    assert "not a GGUF" in reasons["text"] and "empty" in reasons["empty"]
    assert "symbolic links" in reasons["loop"] and "not a regular file" in reasons["fifo"]
    assert all(str(store) in r for r in reasons.values())  # every reason names its file


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_listed_with_the_reason(home):
    path = write_model(home / "jan" / "models" / "secret.gguf", "S")
    path.chmod(0)
    (model,) = discover(tool_places(), bundled=False)
    assert not model.readable and "ermission" in model.problem


def test_a_damaged_ollama_manifest_or_missing_blob_is_named(home):
    root = home / ".ollama" / "models"
    blob = ollama_model(root, "gone", "latest", model_bytes("G"))
    blob.unlink()
    bad = root / "manifests" / "registry.ollama.ai" / "library" / "broken" / "latest"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    found = by_name(discover(tool_places(), bundled=False))
    assert not found["gone:latest"].readable and "No such file" in found["gone:latest"].problem
    assert not found["broken:latest"].readable and "manifest" in found["broken:latest"].problem


def test_split_models_are_listed_once_with_all_their_bytes(home):
    folder = home / ".cache" / "llama.cpp"
    first = write_model(folder / "big-00001-of-00002.gguf", "Big")
    (folder / "big-00002-of-00002.gguf").write_bytes(b"\0" * 5000)
    (model,) = discover(tool_places(), bundled=False)
    assert model.path == str(first) and model.size_bytes == first.stat().st_size
    assert model.memory_needed_bytes > first.stat().st_size + 5000


def test_user_folders_are_kept_and_searched_and_a_folder_inside_a_store_adds_no_duplicate(home, tmp_path):
    mine = tmp_path / "my models"
    write_model(mine / "deep" / "own.gguf", "Own")
    lm = write_model(home / ".lmstudio" / "models" / "p" / "r" / "lm.gguf", "LM")
    assert add_folder(mine) == [mine.resolve()] and user_folders() == [mine.resolve()]
    add_folder(lm.parent)
    found = by_name(discover(bundled=False))
    assert found["own"].store == "folder" and found["lm"].store == "lmstudio"
    assert len(found) == 2
    assert remove_folder(mine) == [lm.parent.resolve()]
    with pytest.raises(InputError, match="not a folder"):
        add_folder(tmp_path / "nowhere")


def test_a_damaged_folders_file_is_an_empty_list(home):
    path = places_mod._folders_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[broken")
    assert user_folders() == []


def test_parameters_come_from_the_header_before_the_tensors(tmp_path):
    declared = write_model(tmp_path / "a" / "a.gguf", "A", **{"general.parameter_count": 1_543_714_304,
                                                              "general.size_label": "1.5B"})
    assert read_header(declared).get("general.parameter_count") == 1_543_714_304
    write_model(tmp_path / "b" / "b.gguf", "B", **{"general.size_label": "1.5B"})
    write_model(tmp_path / "c" / "c.gguf", "C", **{"general.size_label": "8x7B"})  # no one number: the tensors
    found = by_name(discover([places_mod.Place("folder", tmp_path, "tree")], bundled=False))
    assert (found["a"].parameters, found["a"].parameters_from) == (1_543_714_304, "general.parameter_count")
    assert (found["b"].parameters, found["b"].parameters_from) == (1_500_000_000, "general.size_label")
    assert (found["c"].parameters, found["c"].parameters_from) == (64064, "tensors")
    assert found["b"].tensor_parameters == 64064


def test_the_real_bundled_model_is_found_and_described(bundled_model, home):
    (model,) = [m for m in discover([], bundled=True)]
    assert model.store == "bundled" and model.path == str(bundled_model)
    assert model.readable and model.architecture == "llama" and model.quantization == "Q4_1"
    assert (model.parameters, model.parameters_from) == (135_000_000, "general.size_label")  # "135M"
    assert model.tensor_parameters == 134_515_008  # its tensors' elements added up (gguf's reader agrees)
    assert model.chat_template is True and model.context_length == 8192
    assert model.size_bytes == bundled_model.stat().st_size and model.sha256 is None  # nothing hashed


def test_a_model_too_big_for_free_memory_is_said_so_and_a_bigger_model_is_hinted(home, bundled_model):
    write_model(home / "jan" / "models" / "big.gguf", "Big", tensors=[("w", (4096, 400_000), 12)])
    rows = list_models()["models"]
    big = next(r for r in rows if r["name"] == "big")
    assert fit(big, 10**12)[0] is True
    fits, why = fit(big, 1000)
    assert fits is False and "needs about" in why and "1 kB free" in why
    hint = bigger_model_hint([{**r, "fits": True} for r in rows])
    assert hint["model"]["name"] == "big" and "rough estimate from its file size" in hint["text"]
    assert bigger_model_hint([r for r in rows if r["name"] != "big"]) is None


def test_a_header_error_is_a_model_file_error(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + (1).to_bytes(4, "little") + b"\0" * 40)
    with pytest.raises(ModelFileError, match="version 1"):
        read_header(path)


def test_a_new_process_lists_unchanged_files_from_the_cache_and_reads_a_changed_one_again(home, tmp_path,
                                                                                           monkeypatch):
    from curator.core.modelfiles import discover as discover_mod

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write_model(home / "jan" / "models" / "m.gguf", "M")
    assert discover(tool_places(), bundled=False)[0].quantization == "Q4_K_M"
    discover_mod._DESCRIBED.clear()  # as in a new process

    def never(*_a, **_k):
        raise AssertionError("an unchanged file's header was read again")

    monkeypatch.setattr(discover_mod, "read_header", never)
    assert discover(tool_places(), bundled=False)[0].quantization == "Q4_K_M"
    monkeypatch.undo()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_model(path, "M", file_type=Q8_0)  # rewritten in place: another size or time, read again
    discover_mod._DESCRIBED.clear()
    assert discover(tool_places(), bundled=False)[0].quantization == "Q8_0"
