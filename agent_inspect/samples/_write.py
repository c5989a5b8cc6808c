"""Sample files: kcat ``-J`` JSONL (written here), plain JSONL and Parquet (the sources' writers), markers."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_inspect._jsonable import jsonable
from agent_inspect._types import LogLike

__all__ = ["write_kcat_jsonl", "write_markers", "FILE_SUFFIXES"]

#: file format -> file name suffix of a sample
FILE_SUFFIXES = {"jsonl": ".jsonl", "kcat": ".kcat.jsonl", "parquet": ".parquet", "markers": ".markers.json",
                 "trace": ".trace.log"}


def write_kcat_jsonl(log: LogLike, path: str | os.PathLike[str], *, topic: str | None = None,
                     broker: int = 1) -> Path:
    """Write a log's raw records as ``kcat -C -J`` prints them: one envelope per line.

    ``{"topic", "partition", "offset", "tstype": "create", "ts", "broker", "key", "payload"}`` in kcat's
    member order, key and value as text (a tombstone's payload is null), non-ASCII unescaped as kcat's
    JSON generator leaves it. Upstream records carry no headers (spec §6.2), so kcat writes no
    ``headers`` member. Values must be UTF-8, as the store writes them.

    For example::

        ai.samples.write_kcat_jsonl(log, "production.kcat.jsonl")   # as kcat -C -J prints the topic
        ai.load("production.kcat.jsonl").records.shape == log.records.shape
    """
    raw = log.raw
    name = topic if topic is not None else (getattr(log.source, "topic", None) or "action-state")
    out = Path(path)
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        for i in range(len(raw)):
            key, value, ts = raw.key[i], raw.value[i], raw.timestamp_ms[i]
            line: dict[str, Any] = {"topic": name, "partition": raw.partition[i], "offset": raw.offset[i]}
            if ts is not None:                  # kcat leaves both out when the broker gave no timestamp
                line["tstype"], line["ts"] = "create", ts
            line["broker"] = broker
            line["key"] = None if key is None else key.decode("utf-8")
            line["payload"] = None if value is None else value.decode("utf-8")
            fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return out


def write_markers(info: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a sample's markers file (JSON; partitions as string keys, as JSON requires)."""
    out = Path(path)
    out.write_text(json.dumps(jsonable(info), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out
