"""`cmem sync` merges two machines' versions of a memory by uid, field by field (two or three homes and a
bare repository); nothing ever commits conflict markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sync_helpers import (
    Machine,
    a_test_s_environment,
    all_text,
    bare_repo,
    copy_machines,
    remote_blobs,
)


@pytest.fixture(scope="module")
def team_template(tmp_path_factory: pytest.TempPathFactory):
    """Machine ``a`` with one note and machine ``b`` connected to one bare repository, made once a module."""
    root = tmp_path_factory.mktemp("team")
    with a_test_s_environment(root):
        url = bare_repo(root / "team.git")
        a, b = Machine(root / "a", None), Machine(root / "b", None)
        note = a.add("Login uses JWT", "--narrative", "tokens expire after an hour", "--fact", "HS256")
        a.sync(url)
        b.sync(url)
    return root, note["uid"]


@pytest.fixture
def team(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], team_template):
    """This test's copy of the module's two machines and their repository."""
    root, uid = team_template
    copy_machines(root, tmp_path)
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    return a, b, str(tmp_path / "team.git"), uid


def _id(machine: Machine, uid: str) -> str:
    return str(machine.by_uid()[uid]["id"])


def _copies(machine: Machine) -> list[dict]:
    return [r for r in machine.by_uid().values() if r["title"].endswith("(conflict copy)")]


def _no_markers(*texts: str) -> None:
    for text in texts:
        assert "<<<<<<<" not in text and ">>>>>>>" not in text


def test_edits_of_different_fields_merge_without_a_copy(team):
    a, b, url, uid = team
    a.ok("edit", _id(a, uid), "--title", "Login uses JWT (HS256)")
    b.ok("edit", _id(b, uid), "--narrative", "tokens expire after 15 minutes")
    a.sync()
    report = b.sync()
    a.sync()
    assert report["conflicts"] == []
    for machine in (a, b):
        row = machine.by_uid()[uid]
        assert (row["title"], row["narrative"]) == (
            "Login uses JWT (HS256)",
            "tokens expire after 15 minutes",
        )
        assert _copies(machine) == []
        assert machine.run("doctor")[0] == 0
    assert a.file_of(uid).read_text() == b.file_of(uid).read_text()
    _no_markers(remote_blobs(url), all_text(a.export), all_text(b.export))


def test_identical_concurrent_edits_make_no_copy(team):
    a, b, url, uid = team
    for machine in (a, b):
        machine.ok("edit", _id(machine, uid), "--narrative", "tokens expire after 5 minutes")
    a.sync()
    report = b.sync()
    a.sync()
    assert report["conflicts"] == []
    assert _copies(a) == _copies(b) == []
    assert set(a.by_uid()) == set(b.by_uid()) == {uid}


@pytest.mark.parametrize("later", ["a", "b"])
def test_two_retitles_keep_the_later_title_and_the_earlier_as_a_copy(team, later):
    a, b, url, uid = team
    edits = [(a, "JWT login (title from a)"), (b, "JWT login (title from b)")]
    if later == "a":
        edits.reverse()
    for machine, title in edits:  # the second one is the later edit
        machine.ok("edit", _id(machine, uid), "--title", title)
    a.sync()
    report = b.sync()
    a.sync()
    b.sync()
    earlier = "a" if later == "b" else "b"
    assert [c["copy_uid"] for c in report["conflicts"]]
    for machine in (a, b):
        rows = machine.by_uid()
        assert rows[uid]["title"] == f"JWT login (title from {later})"
        assert [c["title"] for c in _copies(machine)] == [f"JWT login (title from {earlier}) (conflict copy)"]
        assert machine.run("doctor")[0] == 0
    assert set(a.by_uid()) == set(b.by_uid())
    assert a.file_of(uid).name == b.file_of(uid).name  # one name everywhere, the first title's
    _no_markers(remote_blobs(url), all_text(a.export), all_text(b.export))


def test_three_retitles_on_three_machines_converge_to_the_latest(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "team.git")
    machines = [Machine(tmp_path / name, capsys) for name in "abc"]
    uid = machines[0].add("Cache lives in redis")["uid"]
    for machine in machines:
        machine.sync(url)
    for machine in machines:  # a, then b, then c: c's is the latest edit
        machine.ok("edit", _id(machine, uid), "--title", f"Cache title from {machine.home.name}")
    for machine in (*machines, *machines):
        machine.sync()
    for machine in machines:
        assert machine.by_uid()[uid]["title"] == "Cache title from c"
        assert sorted(c["title"] for c in _copies(machine)) == [
            "Cache title from a (conflict copy)",
            "Cache title from b (conflict copy)",
        ]
        assert machine.run("doctor")[0] == 0
    assert len({frozenset(m.by_uid()) for m in machines}) == 1
    _no_markers(remote_blobs(url))


def test_the_same_field_edited_on_both_keeps_the_later_and_merges_the_rest(team):
    a, b, url, uid = team
    a.ok("edit", _id(a, uid), "--narrative", "narrative from a", "--fact", "fact from a")
    b.ok("edit", _id(b, uid), "--narrative", "narrative from b", "--subtitle", "subtitle from b")
    a.sync()
    report = b.sync()
    a.sync()
    [conflict] = report["conflicts"]
    assert "narrative" in conflict["resolution"]
    for machine in (a, b):
        row = machine.by_uid()[uid]
        assert (row["narrative"], row["facts"], row["subtitle"]) == (
            "narrative from b", ["fact from a"], "subtitle from b"
        )  # fmt: skip
        [copy] = _copies(machine)
        assert copy["uid"] == conflict["copy_uid"] and copy["narrative"] == "narrative from a"
        assert [link["uid"] for link in machine.links(copy["id"])] == [uid]


def test_a_merged_file_lists_its_links_as_the_write_service_writes_them(home: Path):
    """One renderer of link lines (``cmem_export.markdown.link_entries``): git sync's merge renders a
    memory's file byte for byte as the write service wrote it, links to memories held here (their title,
    a path relative to the file) and to one not here yet (as its file showed it) alike."""
    from cmem_cli.core.config import load_config
    from cmem_cli.services.inbound.arrivals import parse_file
    from cmem_cli.services.write.service import WriteService
    from cmem_cli.sync.merge import render

    with WriteService.open(load_config(home)) as memory:
        target = memory.records.add_observation({"title": "Cache lives in redis", "project": "api"})
        other = memory.records.add_observation({"title": "Sessions in cookies", "project": "web"})
        links = [{"type": "related", "uid": target["uid"]}, {"type": "caused_by", "uid": other["uid"]}]
        row = memory.records.add_observation({"title": "Login uses JWT", "project": "web", "links": links})
        with memory.write_transaction() as files:  # a link git sync brought whose target is not here yet
            memory.store.links.add_pending(
                row["id"], "01J0000000000000000000WXYZ", "led_to", "Later", "x/y.md"
            )
            memory.export.export_observation(memory.store.observations.get(row["id"]), files)
        stored = memory.store.observations.get(row["id"])
        written = (memory.export_root / stored["path"]).read_bytes()
        assert b"- related: [Cache lives in redis](../../api/" in written
        assert b"- led_to: [Later](x/y.md)" in written
        assert render(memory, parse_file(memory, stored["path"], written), stored["path"]) == written
