#!/usr/bin/env bash
# Install the pinned agent CLIs that tests/e2e drives, from the npm registry,
# into $TODOLEDGER_E2E_CACHE (default ~/.cache/todoledger-e2e). Idempotent:
# a package already at its pinned version is not fetched again.
# Usage: tests/e2e/install_agents.sh [claude|opencode|codex|gemini|inspector ...]
set -euo pipefail
CACHE="${TODOLEDGER_E2E_CACHE:-$HOME/.cache/todoledger-e2e}"
# Pins: the versions tests/e2e/test_agents.py was checked against. Each ships
# its native binary as a per-platform npm package (optional dependency), so
# nothing is fetched from outside the npm registry.
declare -A PINS=(
  [claude]="@anthropic-ai/claude-code@2.1.332"
  [opencode]="opencode-ai@1.18.33"
  [codex]="@openai/codex@0.171.0"
  [gemini]="@google/gemini-cli@0.61.0"
  # Not an agent: the MCP Inspector's CLI, a client for tests/test_mcp.py. 0.15.0
  # is the last release that runs on Node 20 (later ones need Node >= 22.7.5).
  [inspector]="@modelcontextprotocol/inspector@0.15.0"
)
agents=("$@")
[ ${#agents[@]} -eq 0 ] && agents=(claude opencode codex gemini inspector)
command -v npm >/dev/null || { echo "install_agents: npm not found" >&2; exit 1; }
for agent in "${agents[@]}"; do
  spec="${PINS[$agent]:-}"
  [ -n "$spec" ] || { echo "install_agents: unknown agent $agent" >&2; exit 2; }
  name="${spec%@*}" version="${spec##*@}" prefix="$CACHE/$agent"
  manifest="$prefix/node_modules/$name/package.json"
  if [ -f "$manifest" ] && [ -f "$prefix/.installed" ] && [ "$(cat "$prefix/.installed")" = "$spec" ]; then
    echo "install_agents: $spec already in $prefix"
    continue
  fi
  mkdir -p "$prefix"
  rm -f "$prefix/.installed"
  echo "install_agents: installing $spec into $prefix"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error "$spec"
  echo "$spec" > "$prefix/.installed"
done
# opencode installs its plugin SDK into every config folder it loads (.opencode/,
# ~/.config/opencode/) on first start, which costs 10-20 s a run; the tests link
# these prepared node_modules in instead.
if [[ " ${agents[*]} " == *" opencode "* ]]; then
  deps="$CACHE/opencode-deps" want="${PINS[opencode]##*@}"
  if ! grep -qs "\"$want\"" "$deps/package.json" || [ ! -d "$deps/node_modules/@opencode-ai/plugin" ]; then
    mkdir -p "$deps"
    printf '{\n  "dependencies": {\n    "@opencode-ai/plugin": "%s"\n  }\n}\n' "$want" > "$deps/package.json"
    (cd "$deps" && npm install --no-audit --no-fund --loglevel=error)
  fi
fi
