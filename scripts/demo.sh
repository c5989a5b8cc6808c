#!/usr/bin/env bash
# Set up .venv and run the main job on the embedded sample logs (no broker needed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
exec .venv/bin/agent-inspect demo "$@"
