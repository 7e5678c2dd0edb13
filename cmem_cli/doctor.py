"""`cmem doctor`: is the database sound, and does the export tree match it?"""

from __future__ import annotations

from typing import Any

from export import layout


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
    missing, changed = [], []
    for relpath, text in expected.items():
        path = layout.resolve_inside(memory.export_root, relpath)
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            missing.append(relpath)
            continue
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:
            changed.append(relpath)
    orphans = [p.relative_to(memory.export_root).as_posix() for p in memory.orphan_files(set(expected))]
    for name, items in (("missing files", missing), ("changed files", changed), ("orphaned files", orphans)):
        checks.append(
            {
                "name": name,
                "status": "ok" if not items else ("fixed" if fix else "fail"),
                "detail": f"{len(items)}" + (": " + ", ".join(items[:5]) if items else ""),
                "paths": items,
            }
        )
    if fix and (missing or changed or orphans):
        memory.rebuild_export()
    ok = all(c["status"] in ("ok", "fixed") for c in checks)
    return {"ok": ok, "checks": checks}
