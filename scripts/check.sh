#!/usr/bin/env bash
# The shape checks CI holds (run by scripts/test.sh before the tests): one-way layers, lint, types.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
echo "== import contracts (.importlinter)"
.venv/bin/lint-imports
echo "== ruff"
.venv/bin/ruff check agent_inspect tests benchmarks
echo "== mypy (every package, see [tool.mypy] in pyproject.toml)"
.venv/bin/mypy
