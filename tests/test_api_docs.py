"""docs/api.md's examples run as written, in order, against a fresh home."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def test_every_python_example_in_docs_api_md_runs(home, capsys):
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) == 9
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out
    assert "keyword" in out  # hits.mode in a home without an index
    assert "InvalidInput unknown type 'gossip'" in out
    assert "no observation with id 10000" in out
    assert "['notes:deploy.md']" in out and "1 ['memories']" in out  # the index's face
    assert "7 read into memories, notes" in out  # annotated with the types it returns, from cmem_cli.api
    assert (home / "cmem.db").exists()
