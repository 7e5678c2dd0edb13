#!/usr/bin/env bash
# Install the pinned agent clients the real-client harness drives (tests/agents_real/) into one cache folder.
# Usage: scripts/install_agents.sh [PREFIX]   (default: $CMEM_AGENTS_PREFIX or ~/.cache/cmem-agents)
# Fails (non-zero) when a client cannot be installed: CI must not silently skip an agent.
set -euo pipefail
prefix="${1:-${CMEM_AGENTS_PREFIX:-$HOME/.cache/cmem-agents}}"
pins="$(dirname "$0")/../tests/agents_real/clients.txt"
mkdir -p "$prefix"
mapfile -t specs < <(grep -v '^#' "$pins" | grep -v '^$')
npm install --no-audit --no-fund --loglevel=error --prefix "$prefix" "${specs[@]}"
for bin in claude codex gemini opencode; do
    test -x "$prefix/node_modules/.bin/$bin" || { echo "install_agents: $bin missing in $prefix" >&2; exit 1; }
done
echo "agents installed in $prefix"
