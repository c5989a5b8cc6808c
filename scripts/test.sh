#!/usr/bin/env bash
# Set up .venv (and Debian's chromium for the browser tests) and run the whole test suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
bash scripts/check.sh   # the shape: one-way layers, lint, types (fails the run before the tests)
bash scripts/docs.sh    # the documentation site, strict (a broken reference or link fails the run)
export AGENT_INSPECT_DOCS_SITE="$PWD/site"   # tests/docs and the browser tests check this build
exec .venv/bin/python -m pytest "$@"
