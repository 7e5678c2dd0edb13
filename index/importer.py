"""Convert a local Hugging Face BERT-family checkpoint into a GGUF that llama.cpp runs, without torch.

Air-gapped users can bring a sentence-transformers model (config.json, model.safetensors, vocab.txt or
tokenizer.json, modules.json + the pooling config) and get the same embeddings out of llama.cpp. The layout
mirrors llama.cpp's own convert_hf_to_gguf.py for arch ``bert``: the same tensor names, the WordPiece vocab
in its "phantom space" form, the special token ids, ``pooling_type`` from the pooling config and a
non-causal attention flag. A BertForSequenceClassification checkpoint (a cross-encoder) becomes a rank
model: its pooler and classifier are written as llama.cpp's ``cls`` and ``cls.output`` tensors.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import FILE_MODE, make_private_dirs
from cmem_cli.core.errors import InvalidInput, ModelError, StorageError
from cmem_index.llama_runtime import KEY_MAX_SEQ_LENGTH
from cmem_index.safetensors_reader import checkpoint_files, read_safetensors

if TYPE_CHECKING:
    import numpy as np

OUTTYPES = ("auto", "f32", "f16", "bf16", "q8_0")
# auto: bf16 where the CPU multiplies bf16 natively (fastest, cosine >= 0.99998 on MiniLM), else f16
# (cosine >= 0.999997). Measured in bench/embed_throughput.py; f32 is exact but slowest.
DEFAULT_OUTTYPE = "auto"

BERT_ARCHITECTURES = {"BertModel", "BertForMaskedLM", "BertForSequenceClassification"}

POOLING_MEAN, POOLING_CLS, POOLING_LAST, POOLING_RANK = 1, 2, 3, 4

_LAYER_MAP = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
_TOP_MAP = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.LayerNorm": "token_embd_norm",
    # cross-encoders: logits = classifier(tanh(pooler.dense(h[CLS]))), llama.cpp's rank pooling head
    "pooler.dense": "cls",
    "classifier": "cls.output",
}
_DROPPED = ("embeddings.position_ids", "cls.predictions.", "cls.seq_relationship.")
_LAYER_RE = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$")


@dataclass
class ImportResult:
    path: Path
    name: str
    pooling: str
    n_tensors: int
    outtype: str


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None


def transformer_dir(checkpoint: Path) -> Path:
    """The directory holding config.json: the root, or the Transformer module's path in modules.json."""
    for module in _modules(checkpoint):
        if module.get("type", "").endswith("models.Transformer") and module.get("path"):
            return checkpoint / str(module["path"])
    return checkpoint


def _modules(checkpoint: Path) -> list[dict[str, Any]]:
    path = checkpoint / "modules.json"
    if not path.is_file():
        return []
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    return modules if isinstance(modules, list) else []


def pooling_type(checkpoint: Path, is_classifier: bool) -> int:
    """llama.cpp pooling type from the sentence-transformers Pooling module (mean when there is none)."""
    if is_classifier:
        return POOLING_RANK
    for module in _modules(checkpoint):
        if module.get("type", "").endswith("models.Pooling"):
            config = _read_json(checkpoint / module.get("path", "") / "config.json")
            if config.get("pooling_mode_mean_tokens"):
                return POOLING_MEAN
            if config.get("pooling_mode_cls_token"):
                return POOLING_CLS
            if config.get("pooling_mode_lasttoken"):
                return POOLING_LAST
            modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
            raise InvalidInput(f"pooling {', '.join(modes) or 'none'} is not supported by llama.cpp")
    return POOLING_MEAN


def _gguf_tensor_name(hf_name: str) -> str | None:
    """The llama.cpp name for a Hugging Face BERT tensor, or None for tensors llama.cpp does not use."""
    name = hf_name.removeprefix("bert.")
    name = re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", name))
    if name.startswith(_DROPPED) or name == "embeddings.position_ids":
        return None
    if match := _LAYER_RE.match(name):
        block, module, kind = match.groups()
        if module in _LAYER_MAP:
            return f"blk.{block}.{_LAYER_MAP[module]}.{kind}"
        return "?"
    base, _, kind = name.rpartition(".")
    if base in _TOP_MAP and kind in ("weight", "bias"):
        return f"{_TOP_MAP[base]}.{kind}"
    return "?"


# ---------------------------------------------------------------------------------------------- vocab


@dataclass
class Vocab:
    tokens: list[str]
    types: list[int]
    special: dict[str, int]


def load_wordpiece_vocab(model_dir: Path, vocab_size: int) -> Vocab:
    """WordPiece vocab in llama.cpp's form: special tokens CONTROL, others with a phantom-space prefix."""
    tokenizer = _read_json(model_dir / "tokenizer.json")
    config = _read_json(model_dir / "tokenizer_config.json")
    special_map = _read_json(model_dir / "special_tokens_map.json")
    ids: dict[str, int] = {}
    vocab_txt = model_dir / "vocab.txt"
    if vocab_txt.is_file():
        lines = vocab_txt.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        ids = {token: i for i, token in enumerate(lines)}
    elif tokenizer:
        model = tokenizer.get("model", {})
        if model.get("type") != "WordPiece":
            raise InvalidInput(f"{model_dir}: only WordPiece (BERT) tokenizers can be imported")
        ids = dict(model.get("vocab", {}))
    else:
        raise InvalidInput(f"{model_dir} has neither vocab.txt nor tokenizer.json")
    control: set[int] = set()
    for added in tokenizer.get("added_tokens", []) if tokenizer else []:
        ids.setdefault(added["content"], added["id"])
        if added.get("special"):
            control.add(added["id"])
    special: dict[str, int] = {}
    for kind in ("unk", "sep", "pad", "cls", "mask"):
        token = _token_text(config.get(f"{kind}_token")) or _token_text(special_map.get(f"{kind}_token"))
        token = (
            token or {"unk": "[UNK]", "sep": "[SEP]", "pad": "[PAD]", "cls": "[CLS]", "mask": "[MASK]"}[kind]
        )
        if token in ids:
            special[kind] = ids[token]
            control.add(ids[token])
    if "cls" not in special or "sep" not in special:
        raise InvalidInput(f"{model_dir}: the vocab has no [CLS]/[SEP] tokens; is this a BERT tokenizer?")
    size = max(vocab_size, max(ids.values()) + 1)
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [5] * size  # UNUSED
    for token, i in ids.items():
        if i in control:
            tokens[i], types[i] = token, 3  # CONTROL
        else:
            tokens[i], types[i] = (token[2:] if token.startswith("##") else "\u2581" + token), 1  # NORMAL
    return Vocab(tokens=tokens, types=types, special=special)


def _token_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


# --------------------------------------------------------------------------------------------- writer


# llama.cpp adds these to f32 activations directly, so like its converter we always keep them f32
_ALWAYS_F32 = ("position_embd.weight", "token_types.weight")


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 (x86) or the ARMv8.6 bf16 extension, from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    flags = set(line.split(":", 1)[1].split())
                    return "avx512_bf16" in flags or "bf16" in flags
    except OSError:
        pass
    return False


def resolve_outtype(outtype: str) -> str:
    if outtype not in OUTTYPES:
        raise InvalidInput(f"unknown output type {outtype!r}; choose one of {', '.join(OUTTYPES)}")
    if outtype == "auto":
        return "bf16" if cpu_has_native_bf16() else "f16"
    return outtype


def _convert(name: str, array: np.ndarray, outtype: str) -> tuple[np.ndarray, Any]:
    """Cast one tensor; 1-D tensors (norms, biases) and the additive embeddings stay f32."""
    import gguf
    import numpy as np

    data = np.ascontiguousarray(array, dtype=np.float32)
    if data.ndim == 1 or outtype == "f32" or name in _ALWAYS_F32:
        return data, None
    if outtype == "f16":
        return data.astype(np.float16), None
    if outtype == "bf16":
        bits = data.view(np.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return rounded, gguf.GGMLQuantizationType.BF16
    if data.shape[-1] % 32:
        return data.astype(np.float16), None
    return gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0


def import_checkpoint(
    checkpoint: Path,
    dest: Path,
    *,
    name: str | None = None,
    outtype: str = DEFAULT_OUTTYPE,
    overwrite: bool = False,
    log: Callable[[str], None] | None = None,
) -> ImportResult:
    """Write ``dest`` (atomically) from the checkpoint directory; returns what was written."""
    outtype = resolve_outtype(outtype)
    checkpoint = checkpoint.expanduser()
    if not checkpoint.is_dir():
        raise InvalidInput(f"{checkpoint} is not a directory")
    if dest.exists() and not overwrite:
        raise ModelError(f"{dest} already exists; pass --force to replace it")
    model_dir = transformer_dir(checkpoint)
    config = _read_json(model_dir / "config.json")
    if not config:
        raise InvalidInput(f"{model_dir} has no config.json; is it a Hugging Face checkpoint?")
    architectures = set(config.get("architectures") or ["BertModel"])
    if config.get("model_type") != "bert" or not architectures & BERT_ARCHITECTURES:
        raise InvalidInput(
            f"{checkpoint}: only BERT checkpoints can be imported "
            f"(this one is {config.get('model_type')!r}, {', '.join(sorted(architectures))})"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise InvalidInput(f"{checkpoint}: position_embedding_type {config['position_embedding_type']!r}")
    if config.get("hidden_act", "gelu") not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise InvalidInput(f"{checkpoint}: activation {config['hidden_act']!r} is not supported")

    import gguf

    logging.getLogger("gguf").setLevel(logging.ERROR)  # its info/warning chatter is not for our users
    is_classifier = "BertForSequenceClassification" in architectures
    pooling = pooling_type(checkpoint, is_classifier)
    vocab = load_wordpiece_vocab(model_dir, int(config["vocab_size"]))
    display_name = name or checkpoint.name
    st_config = _read_json(checkpoint / "sentence_bert_config.json")

    tensors: list[tuple[str, Any, Any]] = []
    for shard in checkpoint_files(model_dir):
        for hf_name, array in read_safetensors(shard):
            gguf_name = _gguf_tensor_name(hf_name)
            if gguf_name is None or (gguf_name.startswith("cls") and not is_classifier):
                continue
            if gguf_name == "?":
                raise InvalidInput(f"{checkpoint}: unexpected tensor {hf_name}; not a plain BERT checkpoint")
            data, raw_dtype = _convert(gguf_name, array, outtype)
            tensors.append((gguf_name, data, raw_dtype))
    names = {t[0] for t in tensors}
    required = {"token_embd.weight", "position_embd.weight", "token_embd_norm.weight"}
    if missing := required - names:
        raise InvalidInput(f"{checkpoint}: missing tensors {', '.join(sorted(missing))}")
    if is_classifier and "cls.output.weight" not in names:
        raise InvalidInput(f"{checkpoint}: a sequence classifier without a classifier tensor")

    try:
        make_private_dirs(dest.parent)
    except OSError as exc:
        raise StorageError(f"cannot create {dest.parent}: {exc.strerror or exc}") from None
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        writer = gguf.GGUFWriter(str(tmp), "bert")
        writer.add_name(display_name)
        writer.add_file_type(
            {"f32": 0, "f16": 1, "bf16": 32, "q8_0": 7}[outtype]  # llama.cpp's LlamaFileType values
        )
        writer.add_context_length(int(config["max_position_embeddings"]))
        writer.add_embedding_length(int(config["hidden_size"]))
        writer.add_feed_forward_length(int(config["intermediate_size"]))
        writer.add_block_count(int(config["num_hidden_layers"]))
        writer.add_head_count(int(config["num_attention_heads"]))
        writer.add_layer_norm_eps(float(config.get("layer_norm_eps", 1e-12)))
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType(pooling))
        if isinstance(st_config.get("max_seq_length"), int):
            writer.add_uint32(KEY_MAX_SEQ_LENGTH, st_config["max_seq_length"])
        if is_classifier:
            labels = config.get("id2label") or {}
            ordered = [labels[k] for k in sorted(labels, key=int)] if labels else []
            if ordered and ordered != ["LABEL_0", "LABEL_1"][: len(ordered)]:
                writer.add_classifier_output_labels(ordered)
        writer.add_tokenizer_model("bert")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(vocab.tokens)
        writer.add_token_types(vocab.types)
        writer.add_token_type_count(int(config.get("type_vocab_size", 1)))
        special = gguf.SpecialVocab(model_dir, n_vocab=len(vocab.tokens))
        for kind, token_id in vocab.special.items():  # our lookup wins where both found one
            special.special_token_ids[kind] = token_id
        special.special_token_ids.setdefault("bos", vocab.special["cls"])
        special.special_token_ids.setdefault("eos", vocab.special["sep"])
        # [CLS] text [SEP] for one sequence, [CLS] a [SEP] b [SEP] for a pair, as BERT was trained
        special.add_special_token.setdefault("bos", True)
        special.add_special_token.setdefault("eos", True)
        special.add_special_token.setdefault("sep", False)
        special.add_to_gguf(writer, quiet=True)
        for tensor_name, data, raw_dtype in tensors:
            writer.add_tensor(tensor_name, data, raw_dtype=raw_dtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.chmod(tmp, FILE_MODE)  # the writer opens it with the umask's mode; a model cache is private
        os.replace(tmp, dest)
    except OSError as exc:
        raise StorageError(f"cannot write {dest}: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    pooling_name = {POOLING_MEAN: "mean", POOLING_CLS: "cls", POOLING_LAST: "last", POOLING_RANK: "rank"}
    if log:
        log(f"converted {len(tensors)} tensors ({outtype}) from {checkpoint}")
    return ImportResult(
        path=dest, name=display_name, pooling=pooling_name[pooling], n_tensors=len(tensors), outtype=outtype
    )


def default_name(checkpoint: Path) -> str:
    """A file name for an imported model: the directory name, or its parent's when that is generic."""
    checkpoint = checkpoint.expanduser().absolute()
    name = checkpoint.name
    if name.lower() in ("model", "models", "checkpoint", "") and checkpoint.parent.name:
        name = checkpoint.parent.name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"


__all__ = [
    "DEFAULT_OUTTYPE",
    "KEY_MAX_SEQ_LENGTH",
    "OUTTYPES",
    "ImportResult",
    "default_name",
    "import_checkpoint",
    "load_wordpiece_vocab",
    "pooling_type",
    "resolve_outtype",
    "transformer_dir",
]
