"""The source tests use the session's tansu broker (``tansu`` / ``kafka_bootstrap`` in tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `tests.support` must import however pytest was started
    sys.path.insert(0, str(REPO))
