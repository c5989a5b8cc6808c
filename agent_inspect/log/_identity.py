"""Identity checks of a log: each record's identities recomputed and compared with its key (spec §15 step 4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._errors import DecodeError
from agent_inspect.codec import (
    event_uuid,
    java_string_hash,
    key_group,
    murmur_hash,
    name_action_uuid,
    python_action_uuid,
)
from agent_inspect.codec.bulk import task_event_attributes
from agent_inspect.log._dtypes import masked_int

if TYPE_CHECKING:
    from agent_inspect.log._log import ActionStateLog

__all__ = ["verify_identity"]


def verify_identity(log: ActionStateLog, *, num_partitions: int | None = None, max_parallelism: int = 128,
                    plan: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """See :meth:`ActionStateLog.verify_identity`."""

    r = log.records
    n = len(r)
    fmts = r["key_format"].astype(object).tolist()
    texts = r["key_text"].astype(object).tolist()
    digests = r["key_digest"].astype(object).tolist()
    vfmts = r["value_format"].astype(object).tolist()
    actual_ev = r["event_uuid"].astype(object).tolist()

    ev_expected: list[str | None] = [None] * n
    by_attrs: dict[bytes, str | None] = {}
    for pos in range(n):
        data = log.raw.value[pos]
        if data is None or vfmts[pos] in (None, "V0", "V1"):
            continue
        attrs = task_event_attributes(data)
        if not attrs:
            continue
        if attrs not in by_attrs:
            try:
                by_attrs[attrs] = event_uuid(attrs)
            except DecodeError:
                by_attrs[attrs] = None
        ev_expected[pos] = by_attrs[attrs]

    if num_partitions is None and log.source.kind == "kafka":
        num_partitions = log.source.options.get("num_partitions") or (
            max(log.source.end_offsets) + 1 if log.source.end_offsets else None)
    part_expected: list[int] = [-1] * n
    if num_partitions:
        by_basis: dict[str, int] = {}
        for pos, fmt in enumerate(fmts):
            if fmt in ("K1", "K1.5-draft"):
                basis = (texts[pos] or "").split("_", 1)[0] or None
            elif fmt == "K1.5":
                basis = texts[pos]
            elif fmt in ("K1.6", "K2", "K2-ordinal"):
                basis = digests[pos]
            else:
                basis = None
            if basis is not None:
                if basis not in by_basis:
                    by_basis[basis] = murmur_hash(java_string_hash(basis)) % num_partitions
                part_expected[pos] = by_basis[basis]

    group_expected = [key_group(java_string_hash(texts[pos]), max_parallelism)
                      if fmt in ("K1.5", "K1.5-draft") and texts[pos] is not None else -1
                      for pos, fmt in enumerate(fmts)]

    names: list[str | None] = [None] * n
    action_ok: list[bool | None] = [None] * n
    if plan is not None:
        actions = plan.get("actions", plan)
        hashed: dict[str, str] = {}
        named = {name_action_uuid(name): name for name in actions}
        java = False
        for name, spec in actions.items():
            exec_ = (spec or {}).get("exec") or {}
            if exec_.get("module") is not None and exec_.get("qualname") is not None:
                triggers = spec.get("trigger_conditions") or spec.get("triggers") or []
                hashed[python_action_uuid(name, exec_["module"], exec_["qualname"], triggers)] = name
            else:
                java = True
        for pos, (fmt, act) in enumerate(zip(fmts, r["action_uuid"].astype(object).tolist())):
            if fmt is None or act is None:
                continue
            table = named if fmt in ("K2", "K2-ordinal") else hashed
            names[pos] = table.get(act)
            if names[pos] is not None:
                action_ok[pos] = True
            elif fmt in ("K2", "K2-ordinal") or not java:
                action_ok[pos] = False

    ev_ok = [None if e is None or a is None else e == a for e, a in zip(ev_expected, actual_ev)]
    parts = r["partition"].tolist()
    groups = r["key_group"].fillna(-1).astype(int).tolist()
    return pd.DataFrame({
        "event_uuid_expected": pd.array(ev_expected, dtype="str"),
        "event_uuid_ok": pd.array(ev_ok, dtype="boolean"),
        "partition_expected": masked_int(part_expected, np.int32),
        "partition_ok": pd.array([None if e < 0 else e == p for e, p in zip(part_expected, parts)],
                                 dtype="boolean"),
        "key_group_expected": masked_int(group_expected, np.int32),
        "key_group_ok": pd.array([None if e < 0 else e == g for e, g in zip(group_expected, groups)],
                                 dtype="boolean"),
        "action_name": pd.Categorical(names),
        "action_uuid_ok": pd.array(action_ok, dtype="boolean"),
    }, index=pd.RangeIndex(n))
