"""Embedding throughput on SciFact abstracts: llama.cpp configurations side by side.

Reads ../shared/data/scifact/corpus.jsonl at run time (never copied into the repo), converts
all-MiniLM-L6-v2 with cmem's own importer and prints a markdown table of abstracts per second for:
llama-cpp-python's high-level ``Llama.embed`` (defaults, then flash attention), cmem's ``Embedder`` with
several batch sizes, attention kernels, weight types and thread counts, and, when sentence-transformers
and torch are importable in the same interpreter, the original model on torch (256-token truncation).

    python -m bench.embed_throughput [--limit 120] [--rounds 3] [--corpus PATH]

Every row embeds the same abstracts end to end (tokenisation included) after one warm-up call. Rows are
measured in interleaved rounds and the median is printed, with abstracts per CPU-second of this process
alongside: on a shared machine the CPU-second figure shows efficiency even when other work steals cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

ROOT = Path(__file__).resolve().parent.parent

from tests.model_fixtures import build_minilm_gguf, minilm_checkpoint  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
Runner: TypeAlias = Callable[[list[str]], object]
Factory: TypeAlias = Callable[[], Runner | None]


def load_abstracts(path: Path, limit: int) -> list[str]:
    texts = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("text"):
                texts.append(row["text"])
            if len(texts) >= limit:
                break
    return texts


def measure(fn: Callable[[list[str]], object], texts: list[str]) -> tuple[float, float]:
    """(abstracts per wall-clock second, abstracts per CPU second of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(texts) / wall, len(texts) / max(cpu, 1e-9)


def high_level_row(model: Path, flash_attn: bool, threads: int) -> Callable[[list[str]], object]:
    import llama_cpp

    llm = llama_cpp.Llama(str(model), embedding=True, verbose=False, flash_attn=flash_attn, n_threads=threads)
    return lambda texts: llm.embed(texts, normalize=True)


def embedder_row(model: Path, **kwargs: object) -> Callable[[list[str]], object]:
    from cmem_index.embedder import Embedder

    embedder = Embedder.load(model, **kwargs)  # type: ignore[arg-type]
    return lambda texts: embedder.embed_documents([(None, t) for t in texts])


def torch_row(threads: int) -> Callable[[list[str]], object] | None:
    try:
        import sentence_transformers
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    model = sentence_transformers.SentenceTransformer(str(minilm_checkpoint()), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)


def configurations(models: dict[str, Path], threads: int) -> list[tuple[str, Factory]]:
    def emb(outtype: str, **kwargs: object) -> Factory:
        return lambda: embedder_row(models[outtype], **kwargs)

    one = dict(n_threads=threads, workers=1)
    return [
        (
            "llama-cpp-python `Llama.embed(list)`, defaults",
            lambda: high_level_row(models["f32"], False, threads),
        ),
        (
            "llama-cpp-python `Llama.embed(list)`, flash_attn=True",
            lambda: high_level_row(models["f32"], True, threads),
        ),
        (
            f"cmem, f32, 1 context x {threads} threads, 2048-token batches (~8 abstracts each)",
            emb("f32", batch_tokens=2048, **one),
        ),
        (
            f"cmem, f32, 1 context x {threads} threads, one abstract per batch, no flash attention",
            emb("f32", batch_tokens=256, flash_attn=False, **one),
        ),
        (
            f"cmem, f32, 1 context x {threads} threads, one abstract per batch",
            emb("f32", batch_tokens=256, **one),
        ),
        (f"cmem, f32, {threads} contexts x 1 thread, one abstract per batch", emb("f32", batch_tokens=256)),
        (f"cmem, f16, {threads} contexts x 1 thread", emb("f16", batch_tokens=256)),
        (f"cmem, q8_0, {threads} contexts x 1 thread", emb("q8_0", batch_tokens=256)),
        (f"cmem, bf16, {threads} contexts x 1 thread", emb("bf16", batch_tokens=256)),
        ("cmem defaults: `cmem models import` (auto weight type) + `Embedder.load(path)`", emb("auto")),
        ("sentence-transformers 6 on torch (reference)", lambda: torch_row(threads)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=120, help="abstracts per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    args = parser.parse_args()
    if not args.corpus.is_file():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    texts = load_abstracts(args.corpus, args.limit)
    threads = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="cmem-bench-"))
    models = {t: build_minilm_gguf(work, t) for t in ("auto", "f32", "f16", "bf16", "q8_0")}
    rows = configurations(models, threads)
    runners = []
    for label, make in rows:
        fn = make()
        if fn is not None:
            fn(texts[:4])  # warm-up: first-call allocations and page faults are not throughput
        runners.append((label, fn))
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in rows}
    loads = []
    for _ in range(args.rounds):  # interleaved, so a busy moment on the machine hits every row alike
        for label, fn in runners:
            if fn is not None:
                results[label].append(measure(fn, texts))
        loads.append(os.getloadavg()[0])

    print(
        f"{len(texts)} SciFact abstracts per run, all-MiniLM-L6-v2 converted by `cmem models import`, "
        f"{threads} cores, 256-token truncation (llama-cpp-python's `Llama.embed` rows: 512), median of "
        f"{args.rounds} interleaved rounds; 1-minute load average during the rounds: "
        f"{', '.join(f'{x:.1f}' for x in loads)}\n"
    )
    print("| configuration | abstracts/s | abstracts per CPU-second |")
    print("|---|---:|---:|")
    for label, fn in runners:
        if fn is None:
            print(f"| {label} | not measured (needs sentence-transformers and torch) | |")
            continue
        walls = sorted(r[0] for r in results[label])
        cpus = sorted(r[1] for r in results[label])
        print(f"| {label} | {walls[len(walls) // 2]:.1f} | {cpus[len(cpus) // 2]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
