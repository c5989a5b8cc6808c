"""Task outcomes keyed the same way across verbs: by state key and occurrence."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from agent_inspect.store import Outcome


def by_state_key(frame: pd.DataFrame, outcome: str = "outcome") -> dict[tuple[str, int], str]:
    """{(state key, occurrence): outcome} of the dispatched tasks of ``frame`` in dispatch order."""
    seen: Counter[str] = Counter()
    out = {}
    for sk, oc in zip(frame["state_key"].astype(str), frame[outcome].astype(str)):
        if oc in (Outcome.NOT_DISPATCHED, "nan", "None", "<NA>"):
            continue
        out[(sk, seen[sk])] = oc
        seen[sk] += 1
    return out
