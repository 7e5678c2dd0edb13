"""Nothing outside a collection or the export tree is read or written through a symlink, and every folder
and file cmem makes under its home is private (0700 / 0600)."""

from __future__ import annotations

import os
import stat

from tests.index_helpers import write


def test_index_skips_a_symlink_out_of_the_collection_and_status_reports_it(cli, home, tmp_path):
    secret = tmp_path / "user-home" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text("# creds\n\naws_secret_access_key = ZZTOPSECRETVALUEZZ\n")
    notes = tmp_path / "notes"
    write(notes, "guide.md", "# Guide\n\nplain words here\n")
    write(notes, "real.md", "# Real\n\ninside words\n")
    (notes / "docs").mkdir()
    (notes / "docs" / "setup.md").symlink_to(secret)
    (notes / "alias.md").symlink_to(notes / "real.md")  # inside the root: fine
    assert cli("collection", "add", str(notes)).exit_code == 0
    assert cli("index").exit_code == 0
    index_bytes = (home / "index.db").read_bytes()
    assert b"ZZTOPSECRETVALUEZZ" not in index_bytes
    found = cli("search", "ZZTOPSECRETVALUEZZ", "--json", "--mode", "keyword")
    assert "ZZTOPSECRETVALUEZZ" not in found.stdout
    status = cli("status", "--json").json()
    notes_status = next(c for c in status["collections"] if c["name"] == "notes")
    assert notes_status["skipped_symlinks"] == ["docs/setup.md"]
    assert notes_status["documents"] == 3
    assert "skipped\tnotes:docs/setup.md" in cli("status").stdout


def test_writes_do_not_follow_a_symlinked_project_folder_in_the_export(cli, home, tmp_path):
    assert cli("add", "-t", "first", "-p", "other").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "export" / "evil").symlink_to(elsewhere)
    result = cli("add", "-t", "through the link", "-p", "evil")
    assert result.exit_code == 7, result.stderr
    assert "symlink" in result.stderr and result.stderr.count("\n") == 1
    assert list(elsewhere.rglob("*")) == []
    assert cli("search", "through", "--json").json() == []  # nothing half-written


def _modes(home):
    for folder, dirs, files in os.walk(home):
        for name in dirs:
            yield os.path.join(folder, name), 0o700
        for name in files:
            yield os.path.join(folder, name), 0o600


def test_every_folder_and_file_under_home_is_private(cli, home, tmp_path):
    previous = os.umask(0o022)  # the usual umask, under which mkdir(parents=True) made 0755 folders
    try:
        _check_private_modes(cli, home, tmp_path)
    finally:
        os.umask(previous)


def _check_private_modes(cli, home, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "a.md", "# A\n\nalpha\n")
    assert cli("add", "-t", "one", "-p", "proj", "--session", "s1").exit_code == 0
    assert cli("collection", "add", str(notes)).exit_code == 0
    assert cli("index").exit_code == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    wrong = {
        path: oct(stat.S_IMODE(os.lstat(path).st_mode))
        for path, mode in _modes(home)
        if stat.S_IMODE(os.lstat(path).st_mode) != mode
    }
    assert wrong == {}
    assert (home / ".collections.lock").exists()
    assert (home / "export" / "proj" / "s1").is_dir()


def test_doctor_reports_and_fixes_loose_modes_left_by_older_versions(cli, home):
    assert cli("add", "-t", "one", "-p", "proj", "--session", "s1").exit_code == 0
    project = home / "export" / "proj"
    project.chmod(0o755)
    observation = next(project.rglob("*.md"))
    observation.chmod(0o644)
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    modes = {c["name"]: c for c in report.json()["checks"]}["private modes"]
    assert sorted(modes["paths"]) == sorted(
        [project.relative_to(home).as_posix(), observation.relative_to(home).as_posix()]
    )
    assert cli("doctor", "--fix").exit_code == 0
    assert stat.S_IMODE(project.stat().st_mode) == 0o700
    assert stat.S_IMODE(observation.stat().st_mode) == 0o600
    assert cli("doctor").exit_code == 0


def test_doctor_tightens_the_model_cache_older_versions_left_readable(cli, home, tmp_path):
    cache = tmp_path / "cache" / "cmem"  # the home fixture's XDG_CACHE_HOME
    (cache / "models").mkdir(parents=True)
    for folder in (cache, cache / "models"):
        folder.chmod(0o755)
    model = cache / "models" / "minilm.gguf"
    model.write_bytes(b"GGUF")
    model.chmod(0o644)
    assert cli("add", "-t", "one").exit_code == 0
    modes = {c["name"]: c for c in cli("doctor", "--json").json()["checks"]}["private modes"]
    assert modes["status"] == "fail"
    assert sorted(modes["paths"]) == sorted([str(cache), str(cache / "models"), str(model)])
    assert cli("doctor", "--fix").exit_code == 0
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(model.stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "models").stat().st_mode) == 0o700


def test_a_symlink_retargeted_outside_drops_its_document_from_the_index(cli, home, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "inside.md", "# Inside\n\nharmless words\n")
    (notes / "link.md").symlink_to(notes / "inside.md")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nQQLEAKEDQQ\n")
    assert cli("collection", "add", str(notes)).exit_code == 0
    assert cli("index").exit_code == 0
    assert cli("status", "--json").json()["documents"] == 2
    (notes / "link.md").unlink()
    (notes / "link.md").symlink_to(outside)
    assert cli("index").exit_code == 0
    assert cli("status", "--json").json()["documents"] == 1
    assert b"QQLEAKEDQQ" not in (home / "index.db").read_bytes()
