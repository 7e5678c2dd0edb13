"""The opencode plugin ``cmem install opencode`` writes (``plugins/cmem.js``): plain JavaScript that opencode
loads as it is, no build step and no dependency. For each event it starts ``cmem hook --agent opencode EVENT``
with the event as JSON on stdin and does not wait for it, so the agent is never slowed; the hook runner and
the opencode adapter (``capture/hooks/adapters/opencode.py``) do the rest.
"""

from __future__ import annotations

import json

MARK = "// cmem: added by `cmem install opencode`; `cmem install opencode --uninstall` removes this file"

_TEMPLATE = """__MARK__
import { spawn } from "node:child_process"

const CMEM = __ARGV__

function send(event, payload) {
  try {
    const child = spawn(CMEM[0], [...CMEM.slice(1), "hook", "--agent", "opencode", event], {
      stdio: ["pipe", "ignore", "ignore"],
    })
    child.on("error", () => {})
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }))
    child.unref()
  } catch {
    // a memory tool must never break the agent
  }
}

function text(parts) {
  return (parts || [])
    .filter((part) => part && part.type === "text" && !part.synthetic && typeof part.text === "string")
    .map((part) => part.text)
    .join("\\n")
}

export const CmemPlugin = async ({ directory }) => {
  const cwd = directory
  const args = new Map() // callID -> the tool's arguments (older opencode passes them to "before" only)
  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      if (event.type === "session.created" && props.info) {
        send("session.created", { session_id: props.info.id, cwd })
      } else if (event.type === "session.idle" && props.sessionID) {
        send("session.idle", { session_id: props.sessionID, cwd })
      } else if (event.type === "session.deleted" && props.info) {
        send("session.deleted", { session_id: props.info.id, cwd })
      }
    },
    "chat.message": async (input, output) => {
      const prompt = text(output && output.parts)
      if (prompt) send("chat.message", { session_id: input.sessionID, cwd, prompt })
    },
    "tool.execute.before": async (input, output) => {
      if (input && input.callID && output && output.args) args.set(input.callID, output.args)
    },
    "tool.execute.after": async (input, output) => {
      const given = input.args || args.get(input.callID) || {}
      args.delete(input.callID)
      send("tool.execute.after", {
        session_id: input.sessionID,
        cwd,
        tool: input.tool,
        call_id: input.callID,
        args: given,
        title: output && output.title,
        output: output && typeof output.output === "string" ? output.output : "",
        metadata: (output && output.metadata) || {},
      })
    },
  }
}
"""


def plugin_source(argv: list[str]) -> str:
    """The plugin, calling cmem as ``argv`` (the absolute cmem, or this Python with ``-m cmem_cli``)."""
    return _TEMPLATE.replace("__MARK__", MARK).replace("__ARGV__", json.dumps(argv))
