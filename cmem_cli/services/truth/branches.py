"""Branches: which memories were made on a branch the current work has not merged, ranked below the current
line's (search) or marked (`cmem view`, the briefing). Git is asked (and its answer kept per HEAD, table
``git_reach``) only when some row was made on another branch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from cmem_cli.core import worktree
from cmem_cli.store.anchors import Anchor, Reach

if TYPE_CHECKING:
    from cmem_cli.store.repository import Store

ALL_BRANCHES = "all"
R = TypeVar(
    "R", bound=Mapping[str, Any]
)  # a search's hits, a window's or a briefing's items: given back as given


def by_branch(
    store: Store,
    rows: list[R],
    branch: str | None,
    *,
    demote: bool = True,
    cwd: str | None = None,
    read: Callable[[list[Any]], dict[Any, Anchor]] | None = None,
) -> tuple[list[R], dict[Any, Anchor]]:
    """``rows`` by the branch each was recorded on, and the anchors read on the way (for :func:`annotate`).
    ``read`` reads the rows' anchors by their ids (default: this home's store; a team search reads the
    team database's).

    ``branch`` NAME keeps only observations recorded on that branch; ``all`` changes nothing. None (the
    default) with ``demote``: in a git work tree, observations of this repository recorded on another
    branch whose work HEAD does not contain (neither the commit they were recorded at nor the branch's tip
    is reachable from HEAD) weigh less (:func:`weigh_unmerged`); merging the branch ends it. One git
    process at most, and none when no row was recorded on another branch."""
    ids = [row["id"] for row in rows if is_observation(row)]
    anchors = (read or store.anchors.for_ids)(ids) if ids else {}
    if branch == ALL_BRANCHES:
        return rows, anchors
    if branch is not None:
        kept = [r for r in rows if is_observation(r) and (a := anchors.get(r["id"])) and a.branch == branch]
        return kept, anchors
    if not demote or not anchors:
        return rows, anchors
    demoted = _unmerged(store, anchors, cwd)
    if not demoted:
        return rows, anchors
    return weigh_unmerged(rows, {r["id"] for r in rows if is_observation(r) and r["id"] in demoted}), anchors


# An unmerged branch's memory counts this share of its evidence against the current line's hits: below a
# memory of this line that matches as well (or nearly: down to this share), above the weaker matches.
UNMERGED_WEIGHT = 0.7


def weigh_unmerged(rows: list[R], unmerged: set[Any]) -> list[R]:
    """``rows`` (best first) with each observation of ``unmerged`` moved down past the rows after it that
    have at least ``UNMERGED_WEIGHT`` of its evidence (``score``), and no further: work that HEAD does not
    contain may not hold here, so the current line's memory of the same strength wins, but it is still a
    match, and a loose one (a common word, a distant meaning) does not bury it. The other rows keep their
    order; so do the moved rows among rows of their own weight."""
    if not unmerged:
        return rows
    out: list[R] = []
    waiting: list[R] = []  # moved rows not placed yet, in their order

    def weighed(row: Mapping[str, Any]) -> float:
        return UNMERGED_WEIGHT * float(row.get("score") or 0.0)

    for row in rows:
        if is_observation(row) and row["id"] in unmerged:
            waiting.append(row)
            continue
        evidence = float(row.get("score") or 0.0)
        out += [w for w in waiting if weighed(w) > evidence]
        waiting = [w for w in waiting if weighed(w) <= evidence]
        out.append(row)
    return out + waiting


def unmerged(store: Store, obs_ids: Iterable[int], *, cwd: str | None = None) -> set[int]:
    """Which of ``obs_ids`` were recorded on a branch of the current repository whose work HEAD has not
    merged (what search weighs lower; `cmem view` and the briefing mark them). One git process at most, none while HEAD
    stays where it was when git last answered."""
    anchors = store.anchors.for_ids(list(obs_ids))
    return _unmerged(store, anchors, cwd) if anchors else set()


def _unmerged(store: Store, anchors: dict[int, Anchor], cwd: str | None) -> set[int]:
    """The observations recorded on a branch of the current repository that HEAD has not merged."""
    here = worktree.find_repo(cwd or os.getcwd())
    if here is None:
        return set()
    head = worktree.head(here)
    if head.commit is None:
        return set()
    here_key: list[str | None] = []  # read on first need
    tips: dict[str, str | None] = {}
    forks: dict[str, str | None] = {}
    evidence: dict[int, list[str]] = {}
    unborn: set[int] = set()  # recorded on a branch that has no commit of its own yet
    for obs_id, anchor in anchors.items():
        if anchor.branch is not None and anchor.branch == head.branch:
            continue
        if anchor.root != here.root:
            if not here_key:
                here_key.append(worktree.remote_key(here))
            if anchor.repo is None or anchor.repo != here_key[0]:
                continue  # another repository's memory: this HEAD says nothing about it
        if anchor.branch is not None and anchor.branch not in tips:
            tips[anchor.branch] = worktree.branch_commit(here, anchor.branch)
        tip = tips.get(anchor.branch or "")
        if anchor.branch is not None and tip is not None and anchor.commit is not None:
            if anchor.branch not in forks:
                forks[anchor.branch] = worktree.branch_fork(here, anchor.branch)
            if forks[anchor.branch] == anchor.commit:
                # recorded before the branch's first commit: its work is in none of the commits so far,
                # so it is merged once the branch's own commits are (its tip moved on and HEAD holds it)
                if tip == anchor.commit:
                    unborn.add(obs_id)
                else:
                    evidence[obs_id] = [tip]
                continue
        commits = [c for c in (anchor.commit, tip) if c]
        if commits and commits != [head.commit]:
            evidence[obs_id] = commits
    if not evidence:
        return unborn
    gone = _unreachable(store, here, head.commit, [c for commits in evidence.values() for c in commits])
    return unborn | {obs_id for obs_id, commits in evidence.items() if all(c in gone for c in commits)}


def _unreachable(store: Store, repo: worktree.Repo, head: str, commits: list[str]) -> set[str]:
    """Which of ``commits`` HEAD commit ``head`` does not contain: git's answer, kept per work tree and
    HEAD commit (a commit's ancestry never changes), so git runs again only when HEAD moves or a commit
    is new. A commit the repository lacked when asked counts as merged (as git says nothing of it), an
    answer kept only while no pack and no loose object arrived since (a fetch may bring it). When git
    cannot answer, what was kept is all there is."""
    anchors = store.anchors
    wanted = list(dict.fromkeys(commits))
    kept = anchors.reach(repo.git_dir, head, wanted)
    packs: int | None = None
    gone: set[str] = set()
    ask: list[str] = []
    for commit in wanted:
        answer = kept.get(commit)
        if answer is not None and answer.packs_ns is not None:
            packs = worktree.packs_stamp(repo) if packs is None else packs
            if answer.packs_ns != packs or worktree.stored_loose(repo, commit):
                answer = None  # it may have arrived since: ask again
        if answer is None:
            ask.append(commit)
        elif not answer.merged:
            gone.add(commit)
    if not ask:
        return gone
    packs = worktree.packs_stamp(repo)  # before git looks: a pack that lands meanwhile moves it
    loose = {commit for commit in ask if worktree.stored_loose(repo, commit)}
    unmerged = worktree.unreachable(repo, head, ask)
    if unmerged is None:
        return gone
    fresh = {
        commit: Reach(False, None) if commit in unmerged else Reach(True, None if commit in loose else packs)
        for commit in ask
    }
    store.write_if_free(lambda: anchors.remember_reach(repo.git_dir, head, fresh))
    return gone | unmerged


def is_observation(row: Mapping[str, Any]) -> bool:
    """An observation's row: its id is this home's (an integer) or, in a team search, its uid."""
    ident = row.get("id")
    return row.get("kind", "observation") == "observation" and isinstance(ident, int | str) and ident != ""
