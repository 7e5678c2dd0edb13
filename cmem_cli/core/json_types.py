"""The JSON objects the API hands its front ends (`--json`, MCP), one type per shape, for the type checker only.

As :mod:`cmem_cli.store.row_types` does for rows, this file makes no class at run time: a front end prints
the plain dict it is given, and modules import these names under ``TYPE_CHECKING``. Times are ISO-8601
text (None: never); key order is the printed order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    class SessionJson(TypedDict):
        """A session as `cmem session show|list --json` prints it (the row's id left out)."""

        session_id: str
        agent: str
        project: str
        label: str | None
        status: str
        prompt_counter: int
        started_at: str | None
        completed_at: str | None
        last_activity_at: str | None
        goal: str | None
        outcome: str | None
        next_steps: str | None
        observations: NotRequired[int]  # a listing and `session show`: how many it holds
        machine: NotRequired[str | None]  # the machine it ran on
        prompts: NotRequired[list[PromptBrief]]  # `session show`
        summaries: NotRequired[list[str]]  # `session show`: ``S<id>`` each

    class PromptBrief(TypedDict):
        """A prompt as `cmem session show` lists it."""

        number: int
        text: str
        created_at: str | None

    class ProjectJson(TypedDict):
        """A project as `cmem projects --json` prints it (see :meth:`cmem_cli.api.Memory.projects`)."""

        project: str
        observations: int
        last: str | None
        repository: str | None  # the key of the git repository it stands for
        mapped: str | None  # how that was learnt: ``claimed`` or ``anchors``
        same_as: str | None  # an older name of a repository: the name its work goes under now

    class StatsJson(TypedDict):
        """`cmem stats --json`."""

        counts: dict[str, int]  # rows per table
        by_type: dict[str, int]
        by_project: dict[str, int]
        first: str | None  # the oldest observation's time
        last: str | None
        database: str
        export_dir: str
        database_bytes: int

    class CandidateJson(TypedDict):
        """An older memory a new one may replace, as `cmem add --format json` tells the writer."""

        id: int
        title: str
        score: float
        inferred: bool  # confident: recorded as maybe replaced at once
        why: str
        confirm: str  # the command that confirms it

    class ModelJson(TypedDict):
        """A configured model as `cmem models list --json` prints it."""

        role: str  # ``embed`` or ``rerank``
        spec: str | None
        path: str | None  # its local file (None: no spec, or one that cannot be read)
        present: bool  # a GGUF file is there
        size: int | None
        error: NotRequired[str]  # why the spec cannot be read

    class ModelFileJson(TypedDict):
        """A GGUF file in the models directory."""

        path: str
        size: int

    class PathReason(TypedDict):
        """A file left untouched, and why."""

        path: str
        reason: str

    class AdoptJson(TypedDict):
        """What adopting the export tree did (`cmem sync --json` without a remote)."""

        adopted: list[str]
        created: list[str]
        forgotten: list[str]
        invalid: list[PathReason]
        conflicts: list[PathReason]
        rolled_back: list[str]
        debris: list[str]
        ignored: list[str]

    class RebuildJson(TypedDict):
        """`cmem export --rebuild --json`: files written and left as they were, then what adoption did."""

        written: int
        unchanged: int
        adopted: int
        created: int
        rolled_back: int
        invalid: list[PathReason]
