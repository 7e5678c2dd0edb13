"""Many writers at once: WAL, BEGIN IMMEDIATE and busy timeouts mean nothing is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import apsw
import pytest


@pytest.mark.slow
def test_eight_processes_adding_fifty_each_lose_nothing(home, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        from cmem_cli.__main__ import main
        worker = sys.argv[1]
        for i in range(50):
            code = main(["add", "--title", f"worker {worker} note {i}", "--project", "load",
                         "--fact", f"w{worker}-{i}"])
            if code != 0:
                sys.exit(code)
    """)
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(w)],
            env=os.environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for w in range(8)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors

    conn = apsw.Connection(str(home / "cmem.db"))
    titles = {row[0] for row in conn.execute("SELECT title FROM observations")}
    paths = [row[0] for row in conn.execute("SELECT path FROM observations")]
    assert len(titles) == 400
    assert titles == {f"worker {w} note {i}" for w in range(8) for i in range(50)}
    files = sorted(p.relative_to(home / "export").as_posix() for p in (home / "export").rglob("*.md"))
    assert files == sorted(paths)
    assert not list((home / "export").rglob(".tmp-*"))
    assert (
        conn.execute("SELECT count(*) FROM observations_fts WHERE observations_fts MATCH 'note'").fetchone()[
            0
        ]
        == 400
    )
