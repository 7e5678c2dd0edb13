"""The replay benchmarks (bench/keyword_replay.py, bench/token_matching.py, bench/vector_transforms.py) refuse
a bad dump, or homes they lack, with a usage error before they load a model or a home."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


REPLAYS = [  # each replay script with the other arguments it requires, none of which it gets to read
    ("token_matching.py", ["--model", "no-such-model.gguf"]),
    ("keyword_replay.py", ["--work", "no-such-homes"]),
    ("vector_transforms.py", ["--model", "no-such-model.gguf", "--work", "no-such-homes"]),
]


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("script", "extra"), REPLAYS)
def test_an_unreadable_dump_is_a_usage_error(tmp_path: Path, script: str, extra: list[str]) -> None:
    result = _run(script, "--dump", str(tmp_path / "missing.json"), *extra)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(f"cannot read the dump {tmp_path / 'missing.json'}: "
                                                   "[Errno 2] No such file or directory: "
                                                   f"'{tmp_path / 'missing.json'}'")  # fmt: skip
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(("script", "extra"), REPLAYS)
def test_a_set_missing_from_the_dump_is_a_usage_error(tmp_path: Path, script: str, extra: list[str]) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"madial": {"queries": []}}))
    result = _run(script, "--dump", str(dump), "--sets", "madial,nope,other", *extra)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(f"error: not in the dump {dump}: nope, other")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("script", "extra", "named"),
    [
        ("keyword_replay.py", [], "madial"),
        ("vector_transforms.py", ["--model", "no-such-model.gguf", "--transform", "centre"], "madial"),
        # the adapter trains on stdlib-code's home
        (
            "vector_transforms.py",
            ["--model", "no-such-model.gguf", "--transform", "adapter"],
            "madial, stdlib-code",
        ),
    ],
)
def test_a_set_without_a_benchmark_home_is_a_usage_error(
    tmp_path: Path, script: str, extra: list[str], named: str
) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"madial": {"queries": []}}))
    result = _run(script, "--dump", str(dump), "--work", str(tmp_path / "homes"), *extra)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        f"error: no benchmark home in {tmp_path / 'homes'} for: {named}"
    )
    assert result.stdout == ""
