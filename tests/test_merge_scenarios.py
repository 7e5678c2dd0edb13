"""One table of merge scenarios, run against a git remote (a bare repository) and a team database (a real
PostgreSQL): the outcome on both machines is the same for both remotes, and every machine is told of
every conflict, with both uids (issue 32: one way in, one merge rule).

Each scenario starts from memories both machines hold (made on ``a``, synced to ``b``), changes them on
each machine (``b``'s edits are the later ones), then syncs ``first``, ``second``, ``first``, ``second``
through the real CLI (`cmem sync --json`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import team_helpers
from tests.sync_helpers import bare_repo

pytestmark = pytest.mark.postgres  # the team half shares the session's server (tests/conftest.py)

SAME_FIELD = "both machines changed {}: the later edit kept, the other kept as a copy"
EDIT_BEATS_FORGET = "edited on one machine, forgotten on the other: the edit is kept"
KEY_CLASH = "key 'deploy' was given to two memories: the earlier one keeps it"


class Home(team_helpers.Home):
    """One machine (team_helpers.Home) with the remote it syncs through and what it was told."""

    def __init__(self, path: Path, capsys: Any, name: str, remote: str):
        super().__init__(path, capsys, name)
        self.remote = remote
        self.told: list[dict[str, Any]] = []

    def add(self, title: str, *extra: str, project: str = "web") -> str:
        """Add a memory; its uid (the same on every machine), not its local number."""
        obs_id = super().add(title, *extra, project=project)
        return str(json.loads(self.ok("get", str(obs_id), "--json"))[0]["uid"])

    def join(self, url: str) -> None:
        extra = ("--machine", self.name) if url.startswith("postgresql") else ()
        self.told += json.loads(self.ok("sync", "init", url, *extra, "--json"))["conflicts"]

    def sync(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.ok("sync", "--json"))
        self.told += report["conflicts"]
        return report

    def rows(self) -> dict[str, dict[str, Any]]:
        """uid -> the memory as `cmem get --json` shows it (links by uid)."""
        listed = json.loads(self.ok("search", "--json", "--all-projects", "-n", "100"))
        ids = [str(item["id"]) for item in listed]
        return {row["uid"]: row for row in json.loads(self.ok("get", *ids, "--json"))} if ids else {}


def outcome(home: Home, uids: dict[str, str]) -> set[tuple[Any, ...]]:
    """What a machine holds, by name (the scenario's names for its uids; a copy is named after its title):
    title, narrative, facts, key, and links as (type, name)."""
    rows = home.rows()
    names = {uid: name for name, uid in uids.items()}
    for uid, row in rows.items():
        names.setdefault(uid, row["title"])
    held = set()
    for uid, row in rows.items():
        links = tuple(sorted((link["type"], names.get(link["uid"], link["uid"])) for link in row["links"]))
        held.add(
            (
                names[uid],
                row["title"],
                row.get("narrative"),
                tuple(row.get("facts") or ()),
                row.get("key"),
                links,
            )
        )
    return held


@dataclass
class Scenario:
    name: str
    setup: Callable[[Home], dict[str, str]]  # on a, before both join: the scenario's uids by name
    change_a: Callable[[Home, dict[str, str]], None]
    change_b: Callable[[Home, dict[str, str]], None]
    expected: set[tuple[Any, ...]]
    told: list[tuple[str, str, str | None]] = field(default_factory=list)  # (uid name, resolution, other)
    a_first: bool = True


def _one(home: Home) -> dict[str, str]:
    return {"m": home.add("Deploy target", "--narrative", "staging", "--fact", "runs on fly")}


def _linked(home: Home) -> dict[str, str]:
    uids = {"m": home.add("Deploy target", "--narrative", "staging")}
    uids["p"] = home.add("Pager rota")
    uids["q"] = home.add("Queue choice")
    home.ok("link", uids["m"], "related", uids["q"])
    return uids


def _edit(*args: str, name: str = "m") -> Callable[[Home, dict[str, str]], None]:
    return lambda home, uids: home.ok("edit", uids[name], *args) and None


def _forget(home: Home, uids: dict[str, str]) -> None:
    home.ok("forget", uids["m"], "--yes")


def _keyed(title: str) -> Callable[[Home, dict[str, str]], None]:
    def add(home: Home, uids: dict[str, str]) -> None:
        uids[title] = home.add(title, "--key", "deploy")

    return add


BASE = ("m", "Deploy target", "staging", ("runs on fly",), None, ())
SCENARIOS = [
    Scenario(
        "disjoint fields",
        _one,
        _edit("--title", "Deploy target (prod)"),
        _edit("--fact", "runs on k8s"),
        {("m", "Deploy target (prod)", "staging", ("runs on k8s",), None, ())},
    ),
    Scenario(
        "same field",
        _one,
        _edit("--narrative", "production, from a"),
        _edit("--narrative", "production, from b"),
        {
            ("m", "Deploy target", "production, from b", ("runs on fly",), None, ()),
            (
                "Deploy target (conflict copy)",
                "Deploy target (conflict copy)",
                "production, from a",
                ("runs on fly",),
                None,
                (("related", "m"),),
            ),
        },  # fmt: skip
        told=[("m", SAME_FIELD.format("narrative"), "copy")],
    ),
    Scenario(
        "forget, then edit",
        _one,
        _forget,
        _edit("--narrative", "still needed"),
        {("m", "Deploy target", "still needed", ("runs on fly",), None, ())},
        told=[("m", EDIT_BEATS_FORGET, None)],
    ),
    Scenario(
        "edit, then forget",
        _one,
        _forget,
        _edit("--narrative", "still needed"),
        {("m", "Deploy target", "still needed", ("runs on fly",), None, ())},
        told=[("m", EDIT_BEATS_FORGET, None)],
        a_first=False,
    ),
    Scenario(
        "retitle",
        _linked,
        _edit("--title", "Where we deploy"),
        _edit("--narrative", "production"),
        {
            ("m", "Where we deploy", "production", (), None, (("related", "q"),)),
            ("p", "Pager rota", None, (), None, ()),
            ("q", "Queue choice", None, (), None, ()),
        },
    ),
    Scenario(
        "link changes",
        _linked,
        lambda home, uids: home.ok("link", uids["m"], "related", uids["p"]) and None,
        lambda home, uids: home.ok("link", uids["m"], "related", uids["q"], "--remove") and None,
        {
            ("m", "Deploy target", "staging", (), None, (("related", "p"),)),
            ("p", "Pager rota", None, (), None, ()),
            ("q", "Queue choice", None, (), None, ()),
        },
    ),
    Scenario(
        "key clash",
        lambda home: {},
        _keyed("Deploy with fly"),
        _keyed("Deploy with k8s"),
        {
            ("Deploy with fly", "Deploy with fly", None, (), "deploy", ()),
            ("Deploy with k8s", "Deploy with k8s", None, (), None, ()),
        },
        told=[("Deploy with fly", KEY_CLASH, "other")],
    ),
]


@pytest.fixture(params=["git", "team"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "git":
        return bare_repo(tmp_path / "remote.git")
    return str(request.getfixturevalue("team_db"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_one_rule_for_both_remotes(
    scenario: Scenario, remote: str, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
):
    a, b = (Home(tmp_path / f"home-{n}", capsys, n, remote) for n in ("a", "b"))
    uids = scenario.setup(a)
    a.join(remote)
    b.join(remote)
    scenario.change_a(a, uids)
    time.sleep(0.01)  # b's edit is the later one
    scenario.change_b(b, uids)
    first, second = (a, b) if scenario.a_first else (b, a)
    for home_ in (first, second, first, second):
        home_.sync()
    assert outcome(a, uids) == outcome(b, uids) == scenario.expected
    for home_ in (a, b):  # every machine told, with both uids
        told = []
        for item in home_.told:
            other = "copy" if item.get("copy_uid") else "other" if item.get("other_uid") else None
            names = {uid: name for name, uid in uids.items()}
            told.append((names.get(item["uid"], item["uid"]), item["resolution"], other))
        assert told == scenario.told, home_.name
    for home_ in (a, b):  # settled: nothing more to tell
        assert home_.sync()["conflicts"] == [], home_.name


def test_the_text_report_names_both_memories_on_both_machines(
    remote: str, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
):
    a, b = (Home(tmp_path / f"home-{n}", capsys, n, remote) for n in ("a", "b"))
    uids = _one(a)
    a.join(remote)
    b.join(remote)
    _edit("--narrative", "production, from a")(a, uids)
    time.sleep(0.01)
    _edit("--narrative", "production, from b")(b, uids)
    a.ok("sync")
    lines = []
    for machine in (b, a):  # b settles it, a is told at its next sync
        code, out, err = machine.run("sync")
        assert code == 0 and out == "", err
        lines.append([line for line in err.splitlines() if "conflict on" in line])
    rows = a.rows()
    copy = next(uid for uid in rows if uid != uids["m"])
    where = ""  # git names the file too, as it is in the tree
    if not remote.startswith("postgresql"):
        where = f" in {Path(rows[uids['m']]['path']).relative_to(a.path / 'export').as_posix()}"
    expected = (
        f"cmem: conflict on {uids['m']} (copy {copy}){where}: both machines changed narrative: the later edit "
        "kept, the other kept as a copy"
    )
    assert lines == [[expected], [expected]]
    assert "conflicts 1" in err
