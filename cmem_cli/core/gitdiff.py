"""Which lines of a file a change touched, as git says: what a memory about a modification is about.

`cmem add --modified` runs this (one or two git processes); hooks and searches never do: a hook knows the
text it wrote, and a search compares line hashes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cmem_cli.core.worktree import Repo, is_commit_id, plain

# A memory is written while an agent waits: git gets this long, then the file is anchored as a whole.
GIT_DIFF_TIMEOUT_S = 3.0
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")

Hunks = dict[str, list[tuple[int, int]]]


def worktree_hunks(repo: Repo, paths: Sequence[str]) -> Hunks | None:
    """For each of ``paths`` (relative to the top level) that differs from HEAD, the hunks of its
    uncommitted change (``start``, ``count`` of lines of the file as it is now); None when git cannot say."""
    return _diff(repo, ["diff", "HEAD"], paths)


def commit_hunks(repo: Repo, commit: str, paths: Sequence[str]) -> Hunks | None:
    """The hunks commit ``commit`` made in ``paths`` (lines of the files as it left them), for a memory
    written just after that commit: its change is what the memory is about."""
    if not is_commit_id(commit):
        return None
    return _diff(repo, ["diff-tree", "-r", "--root", "--no-commit-id", "-p", commit], paths)


def blob_hunks(repo: Repo, old: str, new: str) -> list[tuple[int, int]] | None:
    """The hunks that turn blob ``old`` into blob ``new`` (lines of ``new``): what changed in a committed
    file since an earlier memory anchored it as ``old``. None when git lacks either blob (an earlier
    anchor of an uncommitted state, or another clone's) or cannot say."""
    if not (is_commit_id(old) and is_commit_id(new)) or old == new:
        return None
    out = _run(repo, ["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", old, new])
    if out is None:
        return None
    hunks = parse_hunks(out)
    return hunks.get(new) or None


def _diff(repo: Repo, command: list[str], paths: Sequence[str]) -> Hunks | None:
    if not paths:
        return {}
    if not plain(repo):
        return None
    import subprocess

    args = [
        "git", "-C", repo.root, "-c", "core.quotePath=false", "-c", "diff.noprefix=false",
        *command, "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--", *paths,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_LITERAL_PATHSPECS="1", GIT_CONFIG_NOSYSTEM="1")
    try:
        proc = subprocess.run(
            args, capture_output=True, timeout=GIT_DIFF_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return parse_hunks(proc.stdout)


def parse_hunks(diff: bytes) -> Hunks:
    """``git diff -U0`` output -> for each file of the new side, its hunks (start, count)."""
    found: Hunks = {}
    current: list[tuple[int, int]] | None = None
    for line in diff.split(b"\n"):
        if line.startswith(b"+++ "):
            name = line[4:]
            if name.startswith(b"b/"):
                current = found.setdefault(name[2:].decode("utf-8", "surrogateescape"), [])
            else:
                current = None  # /dev/null (deleted) or a quoted name: nothing to anchor
        elif line.startswith(b"@@") and current is not None:
            match = _HUNK.match(line)
            if match:
                current.append(
                    (int(match.group(1)), int(match.group(2)) if match.group(2) is not None else 1)
                )
    return found


def history(repo: Repo, head: str, commits: Sequence[str]) -> dict[str, str] | None:
    """For each commit: ``yes`` when HEAD commit ``head`` contains it, ``no`` when the clone has it but
    HEAD does not, ``missing`` when the clone does not have it (a teammate's commit not fetched yet). Two
    git processes at most; None when git cannot answer."""
    wanted = [c for c in dict.fromkeys(commits) if is_commit_id(c)]
    if not wanted or not is_commit_id(head):
        return {} if wanted == [] else None
    present = _run(repo, ["cat-file", "--batch-check"], stdin="".join(f"{c}\n" for c in wanted))
    if present is None:
        return None
    kinds = dict(
        line.split(" ", 1) for line in present.decode("ascii", "replace").splitlines() if " " in line
    )
    found = {c: "missing" for c in wanted if not kinds.get(c, "missing").startswith("commit")}
    have = [c for c in wanted if c not in found]
    if have:
        out = _run(repo, ["rev-list", "--ignore-missing", *have, "--not", head])
        if out is None:
            return None
        printed = set(out.decode("ascii", "replace").split())
        found.update({c: "no" if c in printed else "yes" for c in have})
    return found


def renames(repo: Repo, commit: str) -> dict[str, str] | None:
    """The files renamed since commit ``commit`` (old path -> new path, relative to the top level), as the
    index has them (committed or staged with ``git mv``); None when git cannot say."""
    if not is_commit_id(commit):
        return None
    out = _run(
        repo,
        ["-c", "diff.renameLimit=1000", "diff", "--cached", "-M", "--name-status", "-z",
         "--diff-filter=R", "--no-ext-diff", commit],
    )  # fmt: skip
    if out is None:
        return None
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    moved: dict[str, str] = {}
    at = 0
    while at + 2 < len(fields):
        status, old, new = fields[at], fields[at + 1], fields[at + 2]
        if status.startswith("R"):
            moved[old] = new
        at += 3
    return moved


def _run(repo: Repo, command: list[str], stdin: str | None = None) -> bytes | None:
    if not plain(repo):
        return None
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_CONFIG_NOSYSTEM="1")
    try:
        proc = subprocess.run(
            ["git", "-C", repo.root, *command],
            capture_output=True,
            timeout=GIT_DIFF_TIMEOUT_S,
            env=env,
            input=stdin.encode("ascii") if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None
