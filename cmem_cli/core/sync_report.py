"""What one exchange with a remote did: the typed result every remote returns and one printer prints.

A git remote and a team database share most of it (``kind`` .. ``queued``, docs/sync.md); each adds its
own counts. A remote fills its report as it goes and hands it to the face as soon as it exists, so a sync
that fails half-way still says what it did. :meth:`SyncReport.to_json` gives the keys back in the order
`cmem sync --json` has always printed them, so scripts and docs keep their shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Required, TypedDict

Direction = Literal["pushed", "pulled"]

# The keys of each kind's `--json` object, in their printed order.
GIT_KEYS = (
    "kind", "remote", "adopted", "pulled", "forgotten", "conflicts", "rejected", "notes", "queued",
    "committed", "pushed",
)  # fmt: skip
TEAM_KEYS = (
    "kind", "remote", "machine", "projects", "adopted", "pushed", "pulled", "sessions", "prompts",
    "forgotten", "forgotten_there", "conflicts", "rejected", "restored", "skipped", "notes", "queued",
)  # fmt: skip


class Flow(TypedDict):
    """A team's sessions or prompts: how many went each way."""

    pushed: int
    pulled: int


class ConflictItem(TypedDict, total=False):
    """A conflict a sync settled, as `--json` and a git commit's trailer carry it (:meth:`Conflict.to_json`
    of ``cmem_cli.services.inbound.reconcile.rule``; a file git could not merge names only its path)."""

    uid: str
    resolution: Required[str]
    copy_uid: str  # the losing side, kept as a linked copy
    other_uid: str  # the other memory of a key clash
    path: str
    fields: list[str]  # the fields both sides changed


class Rejected(TypedDict):
    """A file or memory not adopted, and why (git names the memory and machine its front matter names)."""

    path: str
    reason: str
    uid: NotRequired[str | None]
    machine: NotRequired[str | None]


class Skipped(TypedDict):
    """A row of the team database refused (``cmem_cli.team.inbound``)."""

    kind: str
    uid: str
    machine: str
    reason: str


@dataclass
class SyncReport:
    """One sync, init, pull or push with a remote (git or a team database)."""

    kind: str  # "git" or "team"
    remote: str  # the URL, every credential hidden
    adopted: int = 0  # files and memories taken into the store (hand edits and arrivals)
    pulled: int = 0  # memories that arrived from the remote
    forgotten: int = 0
    conflicts: list[ConflictItem] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)  # not adopted
    notes: list[str] = field(default_factory=list)
    queued: int = 0  # what waits for the next sync
    pushed: int | bool = 0  # git: whether it pushed; a team: memories pushed
    committed: int = 0  # git: files committed
    machine: str = ""  # a team: this home's name there
    projects: list[str] = field(default_factory=list)  # a team: the projects pulled (empty: all)
    sessions: Flow = field(default_factory=lambda: Flow(pushed=0, pulled=0))  # a team
    prompts: Flow = field(default_factory=lambda: Flow(pushed=0, pulled=0))  # a team
    forgotten_there: int = 0  # a team: forgets pushed
    restored: bool = False  # a team: the server went back in time and was pulled again
    skipped: list[Skipped] = field(default_factory=list)  # a team: rows refused

    @property
    def failed_files(self) -> bool:
        """Was a file or memory left out (exit 4)?"""
        return bool(self.rejected)

    def to_json(self) -> dict[str, Any]:
        """The `--json` object, keys in the order of this kind's documented shape."""
        keys = GIT_KEYS if self.kind == "git" else TEAM_KEYS
        return {key: getattr(self, key) for key in keys}

    def summary(self) -> str:
        """The one line `cmem sync` says on stderr when it is done."""
        if self.kind == "git":
            return (
                f"committed {self.committed}, adopted {self.adopted}, forgotten {self.forgotten}, "
                f"conflicts {len(self.conflicts)}, rejected {len(self.rejected)}"
                + (", pushed" if self.pushed else "")
            )
        return (
            f"{self.remote}: adopted {self.adopted}, pushed {self.pushed}, pulled {self.pulled}, "
            f"forgotten {self.forgotten + self.forgotten_there}, conflicts {len(self.conflicts)}, "
            f"rejected {len(self.rejected)}, skipped {len(self.skipped)}, queued {self.queued}"
        )

    @property
    def told_on_failure(self) -> bool:
        """Is the report worth printing when the exchange then failed? A team sync's pull is done by the
        time a read-only role's push is refused; a failed git sync exchanged nothing to tell."""
        return self.kind == "team" and bool(self.remote)


@dataclass(frozen=True)
class Refusal:
    """The last push the remote refused (until one goes through)."""

    at: str  # ISO-8601
    reason: str
    read_only: bool  # the role may never write: what is queued stays here until its grants change


@dataclass(frozen=True)
class RemoteStatus:
    """What this home knows of its remote without reaching it (`cmem status`): which remote, when it last
    synced and pulled, what waits to be pushed, the last refused push. :meth:`to_json` is `cmem status
    --json`'s ``remote``; :meth:`table_rows` what `cmem status` prints of it."""

    kind: str  # "git" or "team"
    url: str  # every credential hidden
    machine: str | None  # a team member's name there; None for git
    last_sync: str | None  # ISO-8601, None: never
    last_pull: str | None
    queued: int | None  # local writes waiting to be pushed; None for git (its next sync commits them)
    refused: Refusal | None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "url": self.url,
            "machine": self.machine,
            "last_sync": self.last_sync,
            "last_pull": self.last_pull,
            "queued": self.queued,
            "refused": None if self.refused is None else vars(self.refused).copy(),
        }

    def table_rows(self) -> list[list[str]]:
        """The remote's rows of `cmem status` (key, value): which, when it last synced, what waits, why a
        push was refused."""
        if self.kind == "team":
            rows = [["remote", f"team database {self.url} (machine {self.machine})"]]
        else:
            rows = [["remote", f"git {self.url}"]]
        rows.append(["last sync", self.last_sync or "never"])
        if self.last_pull and self.last_pull != self.last_sync:
            rows.append(["last pull", self.last_pull])
        queued = self.queued
        if queued is not None:
            verb = "waits" if queued == 1 else "wait"
            rows.append(["queued", f"{_writes(queued)} {verb} to be pushed" if queued else "none"])
        refused = self.refused
        if refused is not None:
            if refused.read_only:
                stay = "stays" if queued == 1 else "stay"
                said = f"read-only role: {_writes(queued or 0)} {stay} queued here (refused at {refused.at})"
            else:
                said = f"{refused.reason} (at {refused.at})"
            rows.append(["refused", said])
        return rows


def _writes(count: int) -> str:
    return f"{count} write{'s' if count != 1 else ''}"
