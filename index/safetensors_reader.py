"""Read tensors from ``.safetensors`` files with numpy alone.

The format is an 8-byte little-endian header length, a JSON header (name -> dtype, shape, byte offsets)
and the raw little-endian data. Reading it directly keeps ``cmem models import`` free of torch and of the
safetensors package; the data is memory-mapped, so a 90 MB checkpoint costs no extra copy until used.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cmem_cli.core.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np

_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "BF16": "<u2"}
_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors(path: Path) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (name, float32-or-integer array) for every tensor; BF16 is widened to float32."""
    import numpy as np

    try:
        with open(path, "rb") as fh:
            (header_len,) = struct.unpack("<Q", fh.read(8))
            if header_len > _MAX_HEADER:
                raise InvalidInput(f"{path} is not a safetensors file (header of {header_len} bytes)")
            header = json.loads(fh.read(header_len))
    except (OSError, struct.error, ValueError) as exc:
        raise InvalidInput(f"cannot read {path} as safetensors: {exc}") from None
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype")
        if dtype not in _DTYPES:
            raise InvalidInput(f"{path}: tensor {name} has unsupported dtype {dtype}")
        start, end = info["data_offsets"]
        array = data[start:end].view(_DTYPES[dtype]).reshape(info["shape"])
        if dtype == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        yield name, array


def checkpoint_files(model_dir: Path) -> list[Path]:
    """The safetensors shard(s) of a Hugging Face checkpoint directory, in index order."""
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        return [model_dir / name for name in dict.fromkeys(weight_map.values())]
    single = model_dir / "model.safetensors"
    if single.is_file():
        return [single]
    if (model_dir / "pytorch_model.bin").is_file():
        raise InvalidInput(
            f"{model_dir} has only pytorch_model.bin; cmem reads safetensors checkpoints "
            "(convert once with `transformers` and save_pretrained(safe_serialization=True))"
        )
    raise InvalidInput(f"{model_dir} has no model.safetensors")


__all__ = ["checkpoint_files", "read_safetensors"]
