"""What every agent driven by its real client must show in cmem after the two scripted sessions
(:func:`tests.agents_real.harness.run_agent`). Each agent's test module subclasses :class:`AgentContract`
with a module-scoped ``run`` fixture, so one client start serves every check."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, ClassVar

from tests.agents_real import harness as h
from tests.agents_real.model_server import request_text, tool_results

# What a client may not do headless (AgentContract.cannot's keys)
CANNOT = (
    "prompts", "failed commands", "turn summary", "session end", "briefing", "prompt recall", "file recall",
)  # fmt: skip
RECALL_HEADER = "cmem recalls (memories of this project that match the prompt"
FILE_RECALL_HEADER = f"cmem recalls notes on {h.FILE} ("


def sessions(run: h.Run) -> list[tuple[str, str, str, str]]:
    """(session id, agent, project, status) in the order they started."""
    return run.rows("SELECT session_id, agent, project, status FROM sessions ORDER BY started_at, id")


def observations(run: h.Run, session: str, home: Path | None = None) -> list[dict[str, Any]]:
    rows = run.rows(
        "SELECT title, type, files_read, files_modified, agent, session, created_at FROM observations "
        "WHERE session = ? ORDER BY id",
        (session,),
        home=home,
    )
    keys = ("title", "type", "read", "modified", "agent", "session", "created_at")
    found = [dict(zip(keys, row, strict=True)) for row in rows]
    for row in found:
        row["read"], row["modified"] = json.loads(row["read"]), json.loads(row["modified"])
    return found


class AgentContract:
    """The checks; a subclass names its agent and what its client does not do headless (``cannot``)."""

    agent: ClassVar[str]
    # What the client does not do in the scripted sessions, with why: the check then asserts that cmem stored
    # none of it (never a guess in its place), so a client that starts doing it fails until this is updated.
    # Keys: CANNOT's.
    cannot: ClassVar[dict[str, str]] = {}
    imports: ClassVar[bool] = True  # cmem import AGENT reads this client's own session files
    note_session: ClassVar[bool] = True  # the client tells its shell commands their session
    instructions: ClassVar[bool] = False  # cmem install writes instructions the client gives its model

    def test_the_installed_instructions_reach_the_model(self, run: h.Run) -> None:
        first = [r for r in run.sessions[0].requests if r.body.get("tools")]
        assert ("## Memory: cmem" in request_text(first[0])) is self.instructions

    def first(self, run: h.Run) -> str:
        found = sessions(run)
        assert len(found) >= 2, f"expected two sessions, cmem has {found}"
        return found[0][0]

    def test_both_sessions_are_recorded_with_agent_and_project(self, run: h.Run) -> None:
        found = sessions(run)
        assert [(agent, project) for _, agent, project, _ in found] == [(self.agent, "orders-api")] * 2

    def gives(self, what: str) -> bool:
        assert what in CANNOT, what
        return what not in self.cannot

    def test_each_prompt_is_stored_as_typed(self, run: h.Run) -> None:
        prompts = run.rows("SELECT session, text, agent FROM user_prompts ORDER BY created_at, id")
        ids = [s[0] for s in sessions(run)]
        if not self.gives("prompts"):
            assert prompts == [], prompts
            return
        assert prompts == [(ids[0], h.FIRST_PROMPT, self.agent), (ids[1], h.SECOND_PROMPT, self.agent)]

    def test_every_tool_call_is_an_observation_with_its_file_and_exit_status(self, run: h.Run) -> None:
        found = observations(run, self.first(run))
        mine = [o for o in found if o["title"] != h.NOTE_TITLE]
        assert all(o["agent"] == self.agent for o in found)
        assert any("src/batches.py" in o["read"] for o in mine), mine
        assert any("src/batches.py" in o["modified"] for o in mine), mine
        failed = [o["title"] for o in mine if o["title"].startswith("Command failed")]
        if self.gives("failed commands"):
            assert failed == ["Command failed: python3 -c 'raise SystemExit(3)'"], mine
        else:  # never recorded as a success either
            assert failed == [] and not [o for o in mine if "SystemExit(3)" in o["title"]], mine
        assert any(
            "import batches" in o["title"] and not o["title"].startswith("Command failed") for o in mine
        )

    def test_the_agents_own_cmem_command_is_not_recorded_as_work(self, run: h.Run) -> None:
        found = observations(run, self.first(run))
        assert not [o for o in found if " add --type decision" in o["title"]], found

    def test_the_note_the_agent_adds_joins_its_session(self, run: h.Run) -> None:
        [(session, agent, project)] = run.rows(
            "SELECT session, agent, project FROM observations WHERE title = ?", (h.NOTE_TITLE,)
        )
        if self.note_session:
            assert (session, agent, project) == (self.first(run), self.agent, "orders-api")
        else:  # the client hands its shell no session: cmem never guesses one
            assert (session, agent, project) == (None, "cli", "orders-api")

    def test_the_turn_ends_with_a_summary_of_the_answer(self, run: h.Run) -> None:
        texts = run.rows(
            "SELECT coalesce(completed, '') || coalesce(learned, '') || coalesce(notes, '') "
            "FROM session_summaries WHERE session = ?",
            (self.first(run),),
        )
        assert any(h.ANSWER in text for (text,) in texts) is self.gives("turn summary"), texts

    def test_the_session_ends(self, run: h.Run) -> None:
        [first, *_] = sessions(run)
        assert (first[3] == "completed") is self.gives("session end"), first

    def test_the_second_session_starts_with_the_briefing(self, run: h.Run) -> None:
        second = run.sessions[1]
        main = [r for r in second.requests if r.body.get("tools")]
        assert main, "the second session made no request with tools"
        # the note's line in prompt recall ("#ID DATE decision TITLE") is not the briefing's (a type icon)
        briefed = request_text(main[0]).replace(f"decision {h.NOTE_TITLE}", "")
        assert (h.NOTE_TITLE in briefed) is self.gives("briefing")

    def test_the_prompt_recalls_the_note_inside_the_models_request(self, run: h.Run) -> None:
        """The second prompt asks about what the first session's note decided: recall's line for that note
        (``#ID DATE decision TITLE``, issue 44) is in the model's request after the prompt, not only the
        briefing's mention of it."""
        [(note,)] = run.rows("SELECT id FROM observations WHERE title = ?", (h.NOTE_TITLE,))
        texts = [request_text(r) for r in run.sessions[1].requests if r.body.get("tools")]
        recalled = [t[t.index(RECALL_HEADER) :] for t in texts if RECALL_HEADER in t]
        if not self.gives("prompt recall"):
            assert recalled == [], recalled[0][:400]
            return
        assert recalled, "no recall in the second session's requests"
        block = recalled[0][:600]
        assert f"#{note} " in block and f"decision {h.NOTE_TITLE}" in block, block
        # and the prompt itself is still the person's words, not the recall (Gemini CLI prepends context)
        assert any(h.SECOND_PROMPT in t for t in texts)

    def test_reading_a_file_recalls_its_note_inside_the_models_next_request(self, run: h.Run) -> None:
        """The second session reads the file the first one changed: file recall's line for the note on that
        file (``#ID DATE decision [fresh] TITLE``, issue 44 item 2) is in the model's request after the read,
        next to the tool's result."""
        [(note,)] = run.rows("SELECT id FROM observations WHERE title = ?", (h.FILE_NOTE_TITLE,))
        requests = [r for r in run.sessions[1].requests if r.body.get("tools")]
        before = [request_text(r) for r in requests if not tool_results(r)]
        after = [request_text(r) for r in requests if tool_results(r)]
        assert after, "the second session made no request after its read"
        assert not [t for t in before if FILE_RECALL_HEADER in t]  # the read's, not the prompt's
        recalled = [t[t.index(FILE_RECALL_HEADER) :] for t in after if FILE_RECALL_HEADER in t]
        if not self.gives("file recall"):
            assert recalled == [], recalled[0][:400]
            return
        assert recalled, "no file recall in the requests after the read"
        block = recalled[0][:600]
        assert f"#{note} " in block and h.FILE_NOTE_TITLE in block, block

    def test_uninstall_puts_every_config_byte_back(self, run: h.Run) -> None:
        assert run.after_uninstall == run.before_install

    def test_import_finds_what_the_hooks_stored_once_with_real_dates(
        self, run: h.Run, tmp_path: Path
    ) -> None:
        if not self.imports:
            return
        again = run.cmem("import", self.agent, "--settle", "0", "--json")
        first = self.first(run)
        hooked = observations(run, first)
        assert observations(run, first) == hooked, again  # nothing twice
        fresh = tmp_path / "fresh-home"
        run.cmem("import", self.agent, "--settle", "0", env={"CMEM_HOME": str(fresh)})
        imported = observations(run, first, home=fresh)
        titles = sorted(o["title"] for o in hooked if o["title"] != h.NOTE_TITLE)
        assert sorted(o["title"] for o in imported) == titles  # nothing lost
        prompts = run.rows("SELECT text, created_at FROM user_prompts ORDER BY id", home=fresh)
        assert [p[0] for p in prompts] == [h.FIRST_PROMPT, h.SECOND_PROMPT], prompts
        now = int(time.time() * 1000)
        began = dict(run.rows("SELECT session_id, started_at FROM sessions"))
        first_prompt = dict(
            run.rows("SELECT session, min(created_at) FROM user_prompts GROUP BY session", home=fresh)
        )
        for session, started in run.rows("SELECT session_id, started_at FROM sessions", home=fresh):
            assert started <= first_prompt[session], (
                "a session began after its first prompt: dated at the import"
            )
            assert abs(started - began[session]) < 60_000, (session, started, began[session], now)
        hooked_at = {o["title"]: o["created_at"] for o in hooked}
        for o in imported:  # dated when they happened, not at the import
            assert abs(o["created_at"] - hooked_at[o["title"]]) < 60_000, (o, now)
