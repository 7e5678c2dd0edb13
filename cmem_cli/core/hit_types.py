"""A search's rows, one type per kind, for the type checker only.

The retrievers make them (``cmem_cli.services.read.search_pipeline``'s row makers, the team source), each
stage after retrieval takes and returns them, and the page hands them out as its JSON (``cmem search
--json`` prints them as they are). At run time a row is a plain dict: modules import this file under
``TYPE_CHECKING``, so a search makes no class (the start-up test pins that).

Every kind has the keys of :class:`HitFields` (in the order the JSON prints them) and :class:`Marks`. The
stages add the ``NotRequired`` ones: ``score`` places, ``signals`` and ``stages`` with ``--explain``, ``superseded_by`` and
``possibly_superseded_by`` (supersession), ``stale``, ``drifted``, ``behind`` and ``branch`` (anchors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal, NotRequired, TypeAlias, TypedDict

    class SignalJson(TypedDict):
        """One ranked list's view of a hit, with ``--explain``: its rank, raw score and normalised score;
        ``whole`` for a vector list searched with words left out (the cosine to the whole query)."""

        rank: int
        score: float | None
        norm: float | None
        whole: NotRequired[float]

    class Marks(TypedDict):
        """What the truth stages mark on a row: what replaced it (:mod:`cmem_cli.services.truth.supersession`)
        and what its anchor says now (:mod:`cmem_cli.services.truth.anchor_notes`)."""

        superseded_by: NotRequired[int | str | None]
        possibly_superseded_by: NotRequired[int | str | None]
        stale: NotRequired[list[str] | None]
        drifted: NotRequired[list[str] | None]
        behind: NotRequired[list[str] | None]
        branch: NotRequired[str | None]

    class HitFields(Marks):
        """The keys of every search row (``id``: an observation's number, ``S<n>``, ``P<n>``,
        ``doc:<docid>``; a team search's rows carry uids until the page is shown)."""

        id: int | str
        uid: str | None
        type: str
        title: str | None
        subtitle: str | None
        project: str | None
        session: str | None
        agent: str | None
        machine: str | None
        key: str | None
        created_at: str | None
        score: float | None
        tokens: int | None
        path: str | None
        # what one kind has: an observation's invalidation, a prompt's number, a document's line
        invalidated: NotRequired[str | None]
        prompt_number: NotRequired[int | None]
        line: NotRequired[int | None]
        # what the stages add (None in an API Hit's JSON where the stage did not run)
        signals: NotRequired[dict[str, SignalJson] | None]
        stages: NotRequired[dict[str, int] | None]
        evidence: NotRequired[float]

    class ObservationHit(HitFields):
        """An observation found (``invalidated`` always present)."""

        kind: Literal["observation"]

    class SummaryHit(HitFields):
        """A session summary found (id ``S<n>``)."""

        kind: Literal["summary"]

    class PromptHit(HitFields):
        """A user prompt found (id ``P<n>``, ``prompt_number`` present)."""

        kind: Literal["prompt"]

    class DocumentHit(HitFields):
        """A passage of a collection document found by the index (``line`` present)."""

        kind: Literal["document"]

    HitRow: TypeAlias = ObservationHit | SummaryHit | PromptHit | DocumentHit

    class TimelineRow(Marks):
        """One item of `cmem timeline --json`, oldest first; ``anchor`` marks the item asked about."""

        id: int | str
        uid: str
        kind: str
        type: str
        title: str
        project: str
        session: str | None
        agent: str
        machine: str | None
        created_at: str | None
        tokens: int
        anchor: bool
        invalidated: str | None

    class TimelineJson(TypedDict):
        """What `cmem timeline --json` prints."""

        anchor: str
        project: str
        items: list[TimelineRow]
