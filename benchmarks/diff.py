"""Diff benchmark: diffing two large logs against loading both.

Builds N records (default 500 000, about 1.1 KB each: the load benchmark's records), writes them as a
plain-JSONL dump (side a) and a second dump (side b) in which 1% of the executions changed (another
memory payload, another call digest, another input attribute) and 0.5% are missing, then measures in
one run the time to load both dumps (``ai.load_file``) and the time of ``ai.diff(a, b)`` on the two
loaded logs (alignment, field-level comparison of every pair, first divergences).

    .venv/bin/python benchmarks/diff.py [--records N] [--repeat R]

The last line is a JSON array: ``name`` "diff_vs_load", ``ratio`` = diff seconds / load-both seconds,
``target`` 2.0, ``better`` "lower"; plus ``records``, ``load_s``, ``diff_s`` and the pair counts.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import agent_inspect as ai  # noqa: E402
import agent_inspect.diffing  # noqa: E402 - import cost is not diff throughput
import agent_inspect.log  # noqa: E402
from agent_inspect.codec import (  # noqa: E402
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    decode_action_state,
    encode_action_state,
)
from agent_inspect.log import ActionStateLog  # noqa: E402
from agent_inspect.raw import RawBatch, SourceInfo  # noqa: E402

TARGET = 2.0


def _change(value: bytes, rng: random.Random) -> bytes:
    state = decode_action_state(value)
    what = rng.randrange(3)
    if what == 0 and state.short_term_memory_updates:
        mem = (MemoryUpdate.new(state.short_term_memory_updates[0].path, kryo_payload=rng.randbytes(24)),
               *state.short_term_memory_updates[1:])
        state = ActionState(task_event=state.task_event, short_term_memory_updates=mem,
                            output_events=state.output_events, call_results=state.call_results,
                            completed=state.completed)
    elif what == 1 and state.call_results:
        c = state.call_results[0]
        calls = (CallResult(function_id=c.function_id, args_digest=f"{rng.getrandbits(64):016x}",
                            result_payload=c.result_payload, status=c.status), *state.call_results[1:])
        state = ActionState(task_event=state.task_event, short_term_memory_updates=state.short_term_memory_updates,
                            output_events=state.output_events, call_results=calls, completed=state.completed)
    else:
        ev = state.task_event
        attrs = dict(ev.attrs())
        attrs["temperature"] = round(rng.random(), 3)
        task = Event.new(ev.type, attrs, id=ev.id)
        state = ActionState(task_event=task, short_term_memory_updates=state.short_term_memory_updates,
                            output_events=state.output_events, call_results=state.call_results,
                            completed=state.completed)
    return encode_action_state(state)


def _dump(records: list[tuple[str, bytes]], path: Path) -> None:
    n = len(records)
    batch = RawBatch(partition=[0] * n, offset=list(range(n)), timestamp_ms=[None] * n,
                     key=[k.encode() for k, _ in records], value=[v for _, v in records])
    info = SourceInfo(kind="file", location=str(path), topic=None, start_offsets={0: 0}, end_offsets={0: n})
    ai.sources.write_jsonl(ActionStateLog.from_raw(batch, info), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of N timings")
    args = parser.parse_args(argv)
    n = args.records
    from load import build_records

    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="agent-inspect-bench-") as tmp:
        t0 = time.perf_counter()
        records = build_records(n)
        other: list[tuple[str, bytes]] = []
        for k, v in records:
            r = rng.random()
            if r < 0.005:
                continue
            other.append((k, _change(v, rng) if r < 0.015 else v))
        a, b = Path(tmp) / "a.jsonl", Path(tmp) / "b.jsonl"
        _dump(records, a)
        _dump(other, b)
        del records, other
        gc.collect()
        print(f"built and wrote two dumps of ~{n} records in {time.perf_counter() - t0:.1f}s")
        load_s = diff_s = float("inf")
        result = None
        for _ in range(args.repeat):
            log_a = log_b = None
            gc.collect()
            t0 = time.perf_counter()
            log_a = ai.load_file(a)
            log_b = ai.load_file(b)
            load_s = min(load_s, time.perf_counter() - t0)
            result = None
            gc.collect()
            t0 = time.perf_counter()
            result = ai.diff(log_a, log_b)
            _ = result.first_divergences
            diff_s = min(diff_s, time.perf_counter() - t0)
        counts = result.counts() if result is not None else {}
        print(f"load both {load_s:.2f}s, diff {diff_s:.2f}s, pairs {counts}")
    out = [{"name": "diff_vs_load", "ratio": round(diff_s / load_s, 3), "target": TARGET, "better": "lower",
            "records": n, "load_s": round(load_s, 2), "diff_s": round(diff_s, 2),
            **{k.replace(" ", "_"): v for k, v in counts.items()}}]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
