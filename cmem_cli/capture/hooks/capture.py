"""Agent capture: sessions, prompts, tool observations and turn summaries written through the Python API
(:class:`cmem_cli.api.Memory`'s :attr:`~cmem_cli.api.Memory.recorder`), de-duplicated by the store's
capture log (``recorder.capture_log``) so that a hook and a later transcript import of the same session
store each thing once. Used by ``cmem hook`` and ``cmem import``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from cmem_cli.api import Memory, strip_private
from cmem_cli.capture.hooks.bounds import MAX_PROMPT_CHARS, MAX_SUMMARY_CHARS, bounded, output_half
from cmem_cli.capture.hooks.rules import HookRules
from cmem_cli.capture.hooks.state import fingerprint, prompt_prefix
from cmem_cli.capture.hooks.tools import ToolCall, build_observation, clip


class Where(NamedTuple):
    """Who and where an event happened."""

    session: str
    project: str
    agent: str


class Capture:
    def __init__(
        self,
        mem: Memory,
        rules: HookRules,
        *,
        count_repeats: bool = True,
        exclude_projects: Sequence[str] = (),
        anchor: bool = True,
    ):
        self.rec = mem.recorder
        self.rules = rules
        self.count_repeats = count_repeats  # hooks count merged repeats; re-reading a transcript must not
        # hooks anchor observations to the files and branch of the work tree as it is now; a transcript
        # imported later describes a work tree that has moved on since, so it is not anchored
        self.anchor = anchor
        self.exclude_projects = tuple(exclude_projects)
        self.state = self.rec.capture_log

    def excluded(self, where: Where) -> bool:
        """Projects listed in ``[privacy] exclude_projects`` (or ``--exclude-project``) are never recorded."""
        return self.rec.excluded(where.project, self.exclude_projects)

    # -- sessions ------------------------------------------------------------------------------------
    def start_session(self, where: Where, *, at: int | None = None) -> str | None:
        """The session's full id once it exists; None for an excluded project. ``at``: when it began (an
        import's transcript time)."""
        if self.excluded(where):
            return None
        return self.rec.ensure_session(where.session, agent=where.agent, project=where.project, at=at)

    def end_session(self, where: Where, *, status: str = "completed") -> str | None:
        session = self.start_session(where)
        if session is None:
            return None  # a session that ends without having started still exists afterwards
        self.rec.close_session(where.session, status=status)
        return session

    def prompt_number(self, session: str) -> int | None:
        return self.rec.prompt_counter(session)

    # -- prompts ---------------------------------------------------------------------------------------
    def canonical_prompt(self, text: str) -> str:
        """The prompt exactly as it will be stored (private spans and secrets gone, clipped). Capture keys are
        computed from it, so that no key carries private text and hook and import agree."""
        return clip(self.rec.scrub(text), MAX_PROMPT_CHARS).strip()

    def prompt(
        self, where: Where, text: str, *, occurrence: int | None = None, created_at: int | None = None
    ) -> str | None:
        """Store a user prompt with its running number, unless this occurrence was stored already.

        ``occurrence`` is the 1-based count of this exact text in the session (transcript import counts
        it; a hook takes the next one)."""
        text = self.canonical_prompt(text)
        if not text or self.excluded(where):
            return None
        key_base = prompt_prefix(text)
        if occurrence is None:
            occurrence = self.state.count_prefix(where.session, key_base) + 1
        key = f"{key_base}{occurrence}"
        with self.rec.transaction():  # the prompt and its mark: both or neither (a replay must not repeat it)
            if self.state.seen(where.session, key):
                return None
            prompt_id = self.rec.add_prompt(
                text, session=where.session, project=where.project, agent=where.agent, created_at=created_at
            )
            self.state.mark(where.session, key)
        return prompt_id

    # -- tool calls ------------------------------------------------------------------------------------
    def tool(
        self,
        where: Where,
        call: ToolCall,
        *,
        tool_use_id: str | None = None,
        created_at: int | None = None,
        counts: dict[str, int] | None = None,
    ) -> int | None:
        """Store the observation for one tool call, returning its id; None when skipped by the rules or already stored.

        A call is keyed by its ``tool_use_id``; an agent that gives none (Gemini CLI, Cursor) by its name and
        arguments and their occurrence in the session, as prompts are: an import counts occurrences in
        ``counts`` (the file's), a hook takes the next one."""
        if self.excluded(where):
            return None
        clean = self.scrubbed_call(call)
        obs = build_observation(clean, self.rules)
        if obs is None:
            return None
        number = self.prompt_number(where.session)
        key = obs.repeat_key
        if key is not None and self.rules.merge_repeats == "prompt":
            key = f"{key}#{number or 0}"
        if key is not None:
            # Repeat keys hold paths, patterns and URLs: store a fingerprint of their scrubbed form only.
            kind, _, target = key.partition(":")
            key = f"{kind}:{fingerprint(self.rec.scrub(target).encode('utf-8'))}"
        elif tool_use_id:
            key = f"tool:{tool_use_id}"
        else:
            key = self.call_key(where.session, clean, counts)
        record = {
            **obs.record,
            "project": where.project,
            "session": where.session,
            "agent": where.agent,
            "prompt_number": number,
            "created_at": created_at,
        }
        cwd = call.cwd if self.anchor else None
        written = (obs.written or {}) if cwd is not None else None  # a hook never asks git what changed
        known = self.state.uid_for(where.session, key)
        if known is not None and self.rec.has_uid(known):
            if self.count_repeats:
                self.state.bump(where.session, key)  # merged into the first observation
            return None
        claim = self.state.claim(where.session, key, created_at)
        if not claim.fresh and self.rec.has_uid(claim.uid):
            return None  # the other capture path stored it a moment ago
        # Fresh, or a claim whose write never happened (a crash between claim and write): write it now.
        return self.rec.add_record({**record, "uid": claim.uid}, cwd=cwd, written=written)

    def call_key(self, session: str, call: ToolCall, counts: dict[str, int] | None) -> str:
        """``call:<fingerprint of name and arguments>:<n>`` for the n-th such call of ``session``."""
        arguments = json.dumps(call.input, sort_keys=True, ensure_ascii=False, default=str)
        identity = f"{call.name}\0{arguments}".encode()
        prefix = f"call:{fingerprint(identity)}:"
        if counts is None:
            return f"{prefix}{self.state.count_prefix(session, prefix) + 1}"
        count_key = f"{session}\t{prefix}"
        counts[count_key] = counts.get(count_key, 0) + 1
        return f"{prefix}{counts[count_key]}"

    def scrubbed_call(self, call: ToolCall) -> ToolCall:
        """The call with private spans and secrets removed *before* its output is clipped: clipping first
        could cut a ``<private>`` opening tag or a key's BEGIN line off and keep what they guarded."""
        raw = {"input": call.input, "response": call.response, "error": call.error}
        clean = self.rec.scrub_record(bounded(raw, output_half(self.rules.max_output_chars), strip_private))
        return ToolCall(
            name=call.name,
            input=clean["input"],
            response=clean["response"],
            error=clean["error"],
            interrupted=call.interrupted,
            cwd=call.cwd,
        )

    # -- summaries ---------------------------------------------------------------------------------------
    def latest_prompt_key(self, session: str) -> tuple[str | None, str | None]:
        """The session's latest prompt text and its capture key (for the turn summary's key)."""
        text = self.rec.latest_prompt(session)
        if not text:
            return None, None
        prefix = prompt_prefix(text)
        return text, f"{prefix}{max(1, self.state.count_prefix(session, prefix))}"

    def turn_summary(
        self,
        where: Where,
        completed: str | None,
        *,
        request: str | None = None,
        prompt_key: str | None = None,
        created_at: int | None = None,
    ) -> str | None:
        """At the end of a turn: what was asked and what the agent answered, once per prompt.

        Without ``prompt_key`` the session's latest prompt is the request (the Stop hook's case)."""
        if not self.rules.summary_on_stop or not completed or not completed.strip() or self.excluded(where):
            return None
        if prompt_key is None:
            request, prompt_key = self.latest_prompt_key(where.session)
        key = f"summary:{prompt_key or 'none'}"
        fields = {"completed": clip(self.rec.scrub(completed), MAX_SUMMARY_CHARS)}
        if request:
            fields["request"] = clip(self.rec.scrub(request), MAX_SUMMARY_CHARS)
        with self.rec.transaction():  # the summary and its mark: both or neither
            if self.state.seen(where.session, key):
                return None
            summary_id = self.rec.add_summary(
                where.session, fields, project=where.project, agent=where.agent, created_at=created_at
            )
            self.state.mark(where.session, key)
        return summary_id
