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
export NO_MKDOCS_2_WARNING=1
exec .venv/bin/python -m mkdocs build --strict "$@"
