"""The opencode plugin ``cmem install opencode`` writes (``plugins/cmem.js``): plain JavaScript that opencode
loads as it is, no build step and no dependency. For each event it starts ``cmem hook --agent opencode EVENT``
with the event as JSON on stdin and does not wait for it, so the agent is never slowed, except where cmem
answers: the briefing, prompt recall (added to the turn's system prompt) and file recall after read, edit,
multiedit and write (appended to the tool's output). The hook runner and the opencode adapter
(``capture/hooks/adapters/opencode.py``) do the rest.
"""

from __future__ import annotations

import json

MARK = "// cmem: added by `cmem install opencode`; `cmem install opencode --uninstall` removes this file"

_TEMPLATE = """__MARK__
import { spawn, spawnSync } from "node:child_process"

const CMEM = __ARGV__

function send(event, payload) {
  try {
    const child = spawn(CMEM[0], [...CMEM.slice(1), "hook", "--agent", "opencode", event], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true, // its own process group: opencode ending (`opencode run`) must not take the hook with it
    })
    child.on("error", () => {})
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }))
    child.unref()
  } catch {
    // a memory tool must never break the agent
  }
}

// Waited for: the briefing goes into the first request's system prompt, recall into the turn's system prompt
// (a prompt) or after a file tool's output; the session's end at exit.
function ask(event, payload) {
  try {
    const done = spawnSync(CMEM[0], [...CMEM.slice(1), "hook", "--agent", "opencode", event], {
      input: JSON.stringify({ hook_event_name: event, ...payload }),
      encoding: "utf8",
      timeout: 15000,
    })
    return done.stdout ? JSON.parse(done.stdout) : null
  } catch {
    return null
  }
}

function text(parts) {
  return (parts || [])
    .filter((part) => part && part.type === "text" && !part.synthetic && typeof part.text === "string")
    .map((part) => part.text)
    .join("\\n")
}

// The tools after which cmem may recall the notes on the file (its answer is appended to the tool's output).
const FILE_TOOLS = new Set(["read", "edit", "multiedit", "write"])

export const CmemPlugin = async ({ directory }) => {
  const cwd = directory
  const args = new Map() // callID -> the tool's arguments (older opencode passes them to "before" only)
  const briefings = new Map() // sessionID -> the briefing its system prompt carries
  const recalls = new Map() // sessionID -> what cmem recalled for its latest prompt (this turn's system prompt)
  const answers = new Map() // sessionID -> { message: its latest assistant message id, texts: id -> text }
  const seen = new Set() // the sessions this process worked on: they end when it exits
  process.on("exit", () => {
    for (const id of seen) ask("session.deleted", { session_id: id, cwd })
  })
  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      if (event.type === "session.created" && props.info) {
        seen.add(props.info.id)
        send("session.created", { session_id: props.info.id, cwd })
      } else if (event.type === "message.updated" && props.info && props.info.role === "assistant") {
        const answer = answers.get(props.info.sessionID) || { message: null, texts: new Map() }
        answer.message = props.info.id
        answers.set(props.info.sessionID, answer)
      } else if (event.type === "message.part.updated" && props.part && props.part.type === "text") {
        const answer = answers.get(props.part.sessionID)
        if (answer && !props.part.synthetic) answer.texts.set(props.part.messageID, props.part.text)
      } else if (event.type === "session.idle" && props.sessionID) {
        const answer = answers.get(props.sessionID)
        const last = answer && answer.message ? answer.texts.get(answer.message) : undefined
        send("session.idle", { session_id: props.sessionID, cwd, last_assistant_message: last })
      } else if (event.type === "session.deleted" && props.info) {
        seen.delete(props.info.id)
        send("session.deleted", { session_id: props.info.id, cwd })
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      const id = input && input.sessionID
      if (!id || !output || !Array.isArray(output.system)) return
      if (!briefings.has(id)) {
        seen.add(id)
        const answer = ask("session.started", { session_id: id, cwd })
        briefings.set(id, (answer && answer.additionalContext) || "")
      }
      if (briefings.get(id)) output.system.push(briefings.get(id))
      if (recalls.get(id)) output.system.push(recalls.get(id))
    },
    "chat.message": async (input, output) => {
      const prompt = text(output && output.parts)
      if (!prompt) return
      const answer = ask("chat.message", { session_id: input.sessionID, cwd, prompt }) // waited for: recall
      recalls.set(input.sessionID, (answer && answer.additionalContext) || "")
    },
    "tool.execute.before": async (input, output) => {
      if (input && input.callID && output && output.args) args.set(input.callID, output.args)
    },
    "tool.execute.after": async (input, output) => {
      const given = input.args || args.get(input.callID) || {}
      args.delete(input.callID)
      const event = {
        session_id: input.sessionID,
        cwd,
        tool: input.tool,
        call_id: input.callID,
        args: given,
        title: output && output.title,
        output: output && typeof output.output === "string" ? output.output : "",
        metadata: (output && output.metadata) || {},
      }
      if (!FILE_TOOLS.has(input.tool) || !output || typeof output.output !== "string") {
        send("tool.execute.after", event)
        return
      }
      const answer = ask("tool.execute.after", event) // waited for: the notes on the file, after its output
      if (answer && answer.additionalContext) output.output += "\\n\\n" + answer.additionalContext
    },
  }
}
"""


def plugin_source(argv: list[str]) -> str:
    """The plugin, calling cmem as ``argv`` (the absolute cmem, or this Python with ``-m cmem_cli``)."""
    return _TEMPLATE.replace("__MARK__", MARK).replace("__ARGV__", json.dumps(argv))
