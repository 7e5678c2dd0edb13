#!/usr/bin/env bash
# Install the pinned agent clients the real-client harness drives (tests/agents_real/) into one cache folder.
# Usage: scripts/install_agents.sh [PREFIX]   (default: $CMEM_AGENTS_PREFIX or ~/.cache/cmem-agents)
# Fails (non-zero) when a client cannot be installed: CI must not silently skip an agent.
# One npm install without install scripts, then the scripts of the pins above clients.txt's "# --ignore-scripts"
# line (npm rebuild): the pins below it never run theirs, whichever pins changed since the folder was filled.
set -euo pipefail
prefix="${1:-${CMEM_AGENTS_PREFIX:-$HOME/.cache/cmem-agents}}"
pins="$(dirname "$0")/../tests/agents_real/clients.txt"
mkdir -p "$prefix"
mapfile -t plain < <(sed '/^# --ignore-scripts/,$d' "$pins" | grep -v '^#' | grep -v '^$')
mapfile -t bare < <(sed -n '/^# --ignore-scripts/,$p' "$pins" | grep -v '^#' | grep -v '^$')
npm=(npm --no-audit --no-fund --loglevel=error --prefix "$prefix")
"${npm[@]}" install --save-exact --ignore-scripts "${plain[@]}" "${bare[@]}"
"${npm[@]}" rebuild "${plain[@]%@*}"  # their install scripts (Claude Code's and opencode's set up a binary)
for bin in claude codex gemini opencode copilot qwen droid kilo cline; do
    test -x "$prefix/node_modules/.bin/$bin" || { echo "install_agents: $bin missing in $prefix" >&2; exit 1; }
done
echo "agents installed in $prefix"
