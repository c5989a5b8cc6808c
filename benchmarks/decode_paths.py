"""Per-record cost of decoding values into the log's value columns, against columnar alternatives (no broker).

Builds ``load.py``'s records in memory and times, per record (this thread's CPU, best of ``--repeat``),
over 10k-record batches as a Kafka load hands them to the builder:

- ``chunk_columns``: what the builder does per batch today (typed decode, rows, columns, arrays);
- ``fast_decode``: the typed msgspec decode alone; ``skip_decode``: a decode that skips every member
  (the cost of parsing ~1.1 KB of JSON); ``narrow_decode``: structs with only the members the columns
  use, others ignored (not exact: it takes values the codec refuses; the cost of the members it drops);
- ``join``: joining a batch's values by newline (what any one-buffer reader needs first);
- ``arrow_scalars`` / ``arrow_lists``: ``pyarrow.json.read_json`` of the joined batch (join not counted),
  one thread, with an explicit schema of the task event's scalars and ``completed`` / plus the output
  events, memory updates and call results as lists of structs.

    .venv/bin/python benchmarks/decode_paths.py [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.json as pj  # noqa: E402

from agent_inspect.codec.bulk import _FAST_DECODE  # noqa: E402
from agent_inspect.log._columns import Words, chunk_columns  # noqa: E402
from benchmarks.load import build_records  # noqa: E402

_EVENT = pa.struct([("@class", pa.string()), ("id", pa.string()), ("type", pa.string()),
                    ("upstreamEventId", pa.string()), ("upstreamActionName", pa.string())])
SCALARS = pa.schema([("taskEvent", _EVENT), ("completed", pa.bool_())])
LISTS = pa.schema([*SCALARS, ("outputEvents", pa.list_(_EVENT)),
                   ("sensoryMemoryUpdates", pa.list_(pa.struct([("path", pa.string())]))),
                   ("shortTermMemoryUpdates", pa.list_(pa.struct([("path", pa.string())]))),
                   ("callResults", pa.list_(pa.struct([("status", pa.string())])))])


class _Skipped(msgspec.Struct):
    """Every member skipped."""


class _Object(msgspec.Struct, frozen=True, gc=False):
    """Any object, members skipped."""


class _Memory(msgspec.Struct, frozen=True, gc=False):
    value: msgspec.Raw = msgspec.Raw(b"null")


class _Call(msgspec.Struct, frozen=True, gc=False):
    status: Literal["PENDING", "SUCCEEDED", "FAILED"]


class _Event(msgspec.Struct, rename="camel", frozen=True, gc=False):
    event_class: str | None = msgspec.field(default=None, name="@class")
    id: str = ""
    type: str = ""
    attributes: _Object = _Object()
    upstream_event_id: str | None = None
    upstream_action_name: str | None = None


class _Narrow(msgspec.Struct, rename="camel", frozen=True, gc=False):
    task_event: _Event
    sensory_memory_updates: tuple[_Memory, ...] = ()
    short_term_memory_updates: tuple[_Memory, ...] = ()
    output_events: tuple[_Event, ...] = ()
    call_results: tuple[_Call, ...] = ()
    completed: bool = False


def _best(fn: Callable[[], object], repeat: int, records: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return round(best / records * 1e6, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    values = [v for _, v in build_records(args.records)]
    batches = [values[i:i + 10_000] for i in range(0, len(values), 10_000)]
    joined = [b"\n".join(b) for b in batches]
    skip = msgspec.json.Decoder(_Skipped).decode
    narrow = msgspec.json.Decoder(_Narrow).decode
    read = pj.ReadOptions(use_threads=False, block_size=1 << 25)

    def arrow(schema: pa.Schema) -> Callable[[], object]:
        options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        return lambda: [pj.read_json(io.BytesIO(j), read_options=read, parse_options=options) for j in joined]

    steps: dict[str, Callable[[], object]] = {
        "chunk_columns": lambda: [chunk_columns(b, Words()) for b in cast("list[list[bytes | None]]", batches)],
        "fast_decode": lambda: [list(map(_FAST_DECODE, b)) for b in batches],
        "skip_decode": lambda: [list(map(skip, b)) for b in batches],
        "narrow_decode": lambda: [list(map(narrow, b)) for b in batches],
        "join": lambda: [b"\n".join(b) for b in batches],
        "arrow_scalars": arrow(SCALARS),
        "arrow_lists": arrow(LISTS),
    }
    out = {name: _best(fn, args.repeat, len(values)) for name, fn in steps.items()}
    for name, us in out.items():
        print(f"{name:>14}: {us:.3f} µs a record")
    print(json.dumps({"records": len(values), "us_per_record": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
