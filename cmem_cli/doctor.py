"""`cmem doctor`: is the database sound, and does the export tree match it?

``--fix`` never deletes or overwrites what a person wrote: files edited by hand and markdown files no row
accounts for are adopted into the store (``cmem_cli.adopt``); only files that are missing, or that cmem
wrote and a newer rendering changes, are rewritten; interrupted writes are rolled back first.
"""

from __future__ import annotations

from typing import Any

from export import digest, layout
from export.journal import pending


def run_checks(memory: Any, *, fix: bool = False) -> dict[str, Any]:
    db = memory.store.db
    checks: list[dict[str, Any]] = []

    integrity = [r[0] for r in db.execute("PRAGMA quick_check")]
    checks.append(
        {
            "name": "database integrity",
            "status": "ok" if integrity == ["ok"] else "fail",
            "detail": "; ".join(integrity[:3]),
        }
    )
    fk = list(db.execute("PRAGMA foreign_key_check"))
    checks.append(
        {"name": "foreign keys", "status": "ok" if not fk else "fail", "detail": f"{len(fk)} violation(s)"}
    )
    fts = db.scalar("SELECT count(*) FROM observations") == db.scalar(
        "SELECT count(*) FROM observations_fts"
    )  # contentless: counts rows of the index
    checks.append(
        {
            "name": "keyword index",
            "status": "ok" if fts else "fail",
            "detail": "in sync" if fts else "row counts differ",
        }
    )

    expected = memory.expected_files()
    hashes = memory.store.file_hashes()
    missing, changed, edited = [], [], []
    for relpath, text in expected.items():
        path = layout.resolve_inside(memory.export_root, relpath)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            missing.append(relpath)
            continue
        except OSError:
            data = b""
        if data == text.encode("utf-8"):
            continue
        if relpath in hashes and digest.bytes_hash(data) != hashes[relpath]:
            edited.append(relpath)  # a person changed what cmem wrote: adopt it, never overwrite it
        else:
            changed.append(relpath)
    new = [p.relative_to(memory.export_root).as_posix() for p in memory.orphan_files(set(expected))]
    interrupted = [str(file.name) for file, _ in pending(memory.journal_dir)]
    for name, items in (
        ("missing files", missing),
        ("changed files", changed),
        ("changed, to adopt", edited),
        ("new files, to adopt", new),
        ("interrupted writes", interrupted),
    ):
        checks.append(
            {
                "name": name,
                "status": "ok" if not items else ("fixed" if fix else "fail"),
                "detail": f"{len(items)}" + (": " + ", ".join(items[:5]) if items else ""),
                "paths": items,
            }
        )
    if fix and (missing or changed or edited or new or interrupted):
        result = memory.rebuild_export()
        if result["invalid"]:
            checks.append(
                {
                    "name": "files not adopted",
                    "status": "fail",
                    "detail": "; ".join(f"{i['path']}: {i['reason']}" for i in result["invalid"][:5]),
                    "paths": [i["path"] for i in result["invalid"]],
                }
            )
    ok = all(c["status"] in ("ok", "fixed") for c in checks)
    return {"ok": ok, "checks": checks}
