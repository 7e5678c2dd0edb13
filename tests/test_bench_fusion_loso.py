"""python -m bench.fusion_loso --bootstrap: how often each code factor wins when the questions are drawn again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _question_against_code(relevant: str) -> dict[str, object]:
    """Vectors rank the relevant function first; a keyword list of code is led by two functions that merely
    share the question's words. Only a keyword list counting for little lets the relevant one into the
    first three."""
    vector = [[f"d{i}", 0.80 - 0.01 * i] for i in range(30)]
    keyword = [["d3", 12.0], ["d5", 11.0]] + [[f"d{i}", 5.0 - 0.1 * i] for i in range(6, 30)]
    return {
        "qid": relevant,
        "relevant": {relevant: 1},
        "lists": {"keyword": keyword, "vector": vector},
        "signals": {"keyword": ["keyword", 5.0, 1.0, None], "vector": ["vector", None, 0.0, None]},
    }


def test_bootstrap_counts_the_winning_code_factor_in_every_draw(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"code": {"queries": [_question_against_code("d0")] * 4}}))
    result = subprocess.run(
        [sys.executable, "-m", "bench.fusion_loso", str(dump), "--bootstrap", "7"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # every factor up to 0.35 ties (the relevant function third); the first of a tie wins, in all 7 draws
    assert json.loads(result.stdout) == {"mean": {"0.1": 7}, "smallest margin": {"0.1": 7}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bootstrap", "0"], "error: --bootstrap: at least one draw, not 0"),
        (["--bootstrap", "-2"], "error: --bootstrap: at least one draw, not -2"),
    ],
)
def test_bootstrap_needs_at_least_one_draw(tmp_path: Path, args: list[str], message: str) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"code": {"queries": [_question_against_code("d0")]}}))
    result = subprocess.run(
        [sys.executable, "-m", "bench.fusion_loso", str(dump), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(message)
    assert result.stdout == ""


def test_an_unreadable_dump_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.fusion_loso", str(missing), "--bootstrap", "3"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(
        f"error: cannot read the dump: [Errno 2] No such file or directory: '{missing}'"
    )
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
