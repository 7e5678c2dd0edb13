#!/usr/bin/env bash
# Install the pinned agent clients the real-client harness drives (tests/agents_real/) into one cache folder.
# Usage: scripts/install_agents.sh [PREFIX]   (default: $CMEM_AGENTS_PREFIX or ~/.cache/cmem-agents)
# Fails (non-zero) when a client cannot be installed: CI must not silently skip an agent.
# The pins after clients.txt's "# --ignore-scripts" line are installed without their install scripts, in a
# second npm run, the platform binaries pinned beside their wrappers (linux-x64).
set -euo pipefail
prefix="${1:-${CMEM_AGENTS_PREFIX:-$HOME/.cache/cmem-agents}}"
pins="$(dirname "$0")/../tests/agents_real/clients.txt"
mkdir -p "$prefix"
mapfile -t plain < <(sed '/^# --ignore-scripts/,$d' "$pins" | grep -v '^#' | grep -v '^$')
mapfile -t bare < <(sed -n '/^# --ignore-scripts/,$p' "$pins" | grep -v '^#' | grep -v '^$')
npm=(npm install --no-audit --no-fund --loglevel=error --save-exact --prefix "$prefix")
"${npm[@]}" "${plain[@]}"
"${npm[@]}" --ignore-scripts "${bare[@]}"
for bin in claude codex gemini opencode copilot qwen droid kilo cline; do
    test -x "$prefix/node_modules/.bin/$bin" || { echo "install_agents: $bin missing in $prefix" >&2; exit 1; }
done
echo "agents installed in $prefix"
