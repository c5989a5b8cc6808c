#!/usr/bin/env bash
# Build the documentation site into site/ (strict: a broken reference, link or anchor fails the build).
# Extra arguments go to `mkdocs build` (e.g. --site-dir DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  source scripts/_env.sh
fi
if ! .venv/bin/python -c "import mkdocs, material, mkdocstrings_handlers.python, mkdocs_jupyter" 2>/dev/null; then
  .venv/bin/python -m pip install -q -e ".[all,docs]"
fi
# the site serves its own Mermaid, fetched from the npm registry at build time (docs/_hooks/mermaid.py)
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
  fi
fi
export NO_MKDOCS_2_WARNING=1
exec .venv/bin/python -m mkdocs build --strict "$@"
