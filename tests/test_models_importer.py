"""`cmem models import`: a real sentence-transformers checkpoint (all-MiniLM-L6-v2) converted without torch
must embed like the original. The reference vectors in fixtures/minilm_reference.json were computed once
with sentence-transformers on torch (see fixtures/make_minilm_reference.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

from cmem_cli.__main__ import main
from cmem_cli.core.errors import InvalidInput, ModelError
from cmem_index.embedder import Embedder
from cmem_index.importer import import_checkpoint
from tests.model_fixtures import build_minilm_gguf, minilm_checkpoint

REFERENCE = json.loads(
    (Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text(encoding="utf-8")
)


def reference_matrix() -> np.ndarray:
    vectors = np.array([item["vector"] for item in REFERENCE["items"]], dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cosines(path: Path) -> np.ndarray:
    embedder = Embedder.load(path)
    vectors = embedder.embed_texts([item["text"] for item in REFERENCE["items"]])
    return (vectors.astype(np.float64) * reference_matrix()).sum(axis=1)


def test_default_import_matches_sentence_transformers(minilm_gguf: Path) -> None:
    sims = cosines(minilm_gguf)
    assert len(sims) == 9  # includes accents, code, numbers and a text longer than 256 tokens
    assert sims.min() >= 0.999, sims


def test_f32_import_is_exact_to_five_nines(tmp_path: Path) -> None:
    sims = cosines(build_minilm_gguf(tmp_path, "f32"))
    assert sims.min() >= 0.99999, sims


def test_imported_gguf_carries_llama_cpp_bert_metadata(minilm_gguf: Path) -> None:
    from gguf import GGUFReader

    reader = GGUFReader(minilm_gguf)
    fields = {
        name: field.contents()
        for name, field in reader.fields.items()
        if not name.startswith("tokenizer.ggml.tok")
    }
    assert fields["general.architecture"] == "bert"
    assert fields["bert.pooling_type"] == 1  # mean, from 1_Pooling/config.json
    assert fields["bert.attention.causal"] is False
    assert fields["bert.context_length"] == 512 and fields["cmem.max_seq_length"] == 256
    assert fields["bert.block_count"] == 6 and fields["bert.embedding_length"] == 384
    assert fields["tokenizer.ggml.model"] == "bert"
    assert (fields["tokenizer.ggml.bos_token_id"], fields["tokenizer.ggml.seperator_token_id"]) == (101, 102)
    assert (fields["tokenizer.ggml.unknown_token_id"], fields["tokenizer.ggml.padding_token_id"]) == (100, 0)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    assert len(tokens) == 30522
    assert tokens[101] == "[CLS]" and types[101] == 3  # control
    assert tokens[7592] == "\u2581hello" and types[7592] == 1  # phantom-space word start
    assert tokens[2015] == "s"  # "##s" continuation
    names = {t.name for t in reader.tensors}
    assert {
        "token_embd.weight",
        "token_types.weight",
        "position_embd.weight",
        "token_embd_norm.weight",
    } <= names
    assert {
        f"blk.5.{n}.weight" for n in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down")
    } <= names
    assert not any(name.startswith("cls") for name in names)  # the pooler is not used for embeddings


def test_import_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    dest = tmp_path / "m.gguf"
    dest.write_bytes(b"GGUF existing")
    with pytest.raises(ModelError, match="--force"):
        import_checkpoint(minilm_checkpoint(), dest)
    assert dest.read_bytes() == b"GGUF existing"


def copy_checkpoint(tmp_path: Path) -> Path:
    target = tmp_path / "ckpt"
    shutil.copytree(minilm_checkpoint(), target)
    return target


def test_non_bert_checkpoints_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    ckpt = copy_checkpoint(tmp_path)
    config = json.loads((ckpt / "config.json").read_text())
    config.update(model_type="llama", architectures=["LlamaForCausalLM"])
    (ckpt / "config.json").write_text(json.dumps(config))
    with pytest.raises(InvalidInput, match="only BERT checkpoints"):
        import_checkpoint(ckpt, tmp_path / "out.gguf")
    assert list(tmp_path.glob("*.gguf")) == [] and list(tmp_path.glob(".*tmp")) == []


def test_pytorch_bin_only_checkpoints_get_a_clear_error(tmp_path: Path) -> None:
    ckpt = copy_checkpoint(tmp_path)
    (ckpt / "model.safetensors").rename(ckpt / "pytorch_model.bin")
    with pytest.raises(InvalidInput, match="safetensors"):
        import_checkpoint(ckpt, tmp_path / "out.gguf")


def test_vocab_txt_alone_is_enough(tmp_path: Path) -> None:
    ckpt = copy_checkpoint(tmp_path)
    (ckpt / "tokenizer.json").unlink()
    out = import_checkpoint(ckpt, tmp_path / "out.gguf", outtype="f16").path
    embedder = Embedder.load(out)
    assert embedder._model.tokenize("hello world", add_special=True) == [101, 7592, 2088, 102]
    assert cosines(out).min() >= 0.999


def test_cli_import_writes_into_the_models_dir(tmp_path: Path, monkeypatch, capsys) -> None:
    models = tmp_path / "cache" / "cmem" / "models"  # none of these folders exists yet
    monkeypatch.setenv("CMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CMEM_MODELS_DIR", str(models))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CMEM_EMBED_MODEL", raising=False)
    previous = os.umask(0o022)  # the usual umask, under which the folders and the file came out readable
    try:
        assert main(["models", "import", str(minilm_checkpoint()), "--name", "minilm", "--json"]) == 0
    finally:
        os.umask(previous)
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["path"] == str(models / "minilm.gguf")
    for folder in (tmp_path / "cache", tmp_path / "cache" / "cmem", models):
        assert oct(stat.S_IMODE(folder.stat().st_mode)) == "0o700", folder
    assert oct(stat.S_IMODE((models / "minilm.gguf").stat().st_mode)) == "0o600"
    assert report["role"] == "embed" and report["pooling"] == "mean"
    # no embedding model was usable, so the import configured this one
    assert "minilm.gguf is now the embedder" in err
    assert (tmp_path / "config" / "cmem" / "config.toml").read_text() == '[models]\nembed = "minilm.gguf"\n'
    # the bare name now resolves to the imported file
    monkeypatch.setenv("CMEM_EMBED_MODEL", "minilm.gguf")
    assert main(["models", "path"]) == 0
    assert capsys.readouterr().out.strip() == report["path"]
    assert main(["models", "import", str(minilm_checkpoint()), "--name", "minilm"]) == 8
    assert "already exists" in capsys.readouterr().err
