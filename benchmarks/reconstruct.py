"""Reconstruct benchmark: the recovery model's per-record cost and its speed-up over the upstream lookup shape.

``reconstruct`` runs the replay on the recovery engine, which reads record values, so ``scaling`` times it on
fleet logs (``ai.samples`` fleet: 18 records a key over restores, decoded values included; loading them is the
load benchmark's business). The store comparison uses synthetic record frames: per key, rounds of a root action
(initial + completed) and a child action (initial + one call + completed), 5 records per round, with a branch
change (a second, different root at one seq after a restore) on every 10th key. Measures

- ``scaling``: per-record cost of ``reconstruct(rule="fixed")`` on 1M records / on 100k records
  (target <= 1.3);
- ``vs_upstream_scan``: a faithful port of the upstream ``get`` (a whole-cache scan per lookup to
  count the round's records and another to evict) against this toolkit's indexed store, both
  running the original rule (K1.5 segment matching) over the same 200k-record recovery: rebuild,
  then every logged task looked up again. The port's scans are timed on an evenly spaced sample of
  lookups, each on the cache as it is at that point of the run, and extrapolated (a full run would
  take many minutes); both caches end identical (checked); target >= 100.

    .venv/bin/python benchmarks/reconstruct.py            # 100k, 1M and 200k runs (a few minutes)
    .venv/bin/python benchmarks/reconstruct.py --quick    # 20k / 100k / 50k

The last line is a JSON array: ``name``, ``ratio``, ``target``, ``better`` ("lower"/"higher").
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from agent_inspect.log import ActionStateLog  # noqa: E402
from agent_inspect.raw import SourceInfo  # noqa: E402
from agent_inspect.recovery import reconstruct  # noqa: E402
from agent_inspect.recovery._rebuild import iter_entries  # noqa: E402
from agent_inspect.rules import resolve_rule  # noqa: E402
from agent_inspect.samples._fleet import fleet_batches  # noqa: E402
from agent_inspect.store import Entry, RecoverySession, Task  # noqa: E402

ROUNDS_PER_KEY = 10
PARTITIONS = 16


def synthetic_records(n_records: int, seed: int = 7) -> pd.DataFrame:
    """A records frame of about ``n_records`` rows, physical order per partition."""
    rng = random.Random(seed)
    per_key = 5 * ROUNDS_PER_KEY
    n_keys = max(1, n_records // per_key)
    rows: dict[str, list] = {c: [] for c in (
        "partition", "offset", "state_key", "key_format", "key_group", "business_key", "key_text", "seq",
        "event_uuid", "action_uuid", "tombstone", "completed", "task_event_type", "task_event_id",
        "upstream_event_id", "is_root", "output_event_count", "output_event_ids", "call_count", "calls_pending",
        "calls_succeeded", "calls_failed", "error")}
    by_part: dict[int, list[tuple]] = {p: [] for p in range(PARTITIONS)}
    ids = iter(range(10**9))
    for k in range(n_keys):
        key = f"user-{k}"
        part = k % PARTITIONS
        branch_at = 3 if k % 10 == 0 else None
        for r in range(ROUNDS_PER_KEY):
            seq = 5 + r
            fp = f"{rng.getrandbits(128):032x}"
            root_id, child_id = f"e{next(ids)}", f"e{next(ids)}"
            root_sk = f"{k % 128}_{seq}_{fp}_ia_{key}"
            child_fp = f"{rng.getrandbits(128):032x}"
            child_sk = f"{k % 128}_{seq}_{child_fp}_wa_{key}"
            recs = [
                (root_sk, key, seq, fp, "ia", True, False, "_input_event", root_id, None, (), 0),
                (root_sk, key, seq, fp, "ia", True, True, "_input_event", root_id, None, (child_id,), 0),
                (child_sk, key, seq, child_fp, "wa", False, False, "WorkEvent", child_id, root_id, (), 0),
                (child_sk, key, seq, child_fp, "wa", False, False, "WorkEvent", child_id, root_id, (), 1),
                (child_sk, key, seq, child_fp, "wa", False, True, "WorkEvent", child_id, root_id, (), 0),
            ]
            if branch_at == r:  # a restore at this round with a different input: 2 more root records
                other = f"{rng.getrandbits(128):032x}"
                other_sk = f"{k % 128}_{seq}_{other}_ia_{key}"
                recs[:0] = [(other_sk, key, seq, other, "ia", True, False, "_input_event", f"e{next(ids)}", None,
                             (), 0),
                            (other_sk, key, seq, other, "ia", True, True, "_input_event", f"e{next(ids)}", None,
                             (), 0)]
            by_part[part].extend(recs)
    for part, recs in by_part.items():
        for off, (sk, key, seq, fp, au, root, done, etype, eid, up, outs, calls) in enumerate(recs):
            rows["partition"].append(part)
            rows["offset"].append(off)
            rows["state_key"].append(sk)
            rows["key_format"].append("K1.5")
            rows["key_group"].append(int(sk.split("_", 1)[0]))
            rows["business_key"].append(key)
            rows["key_text"].append(key)
            rows["seq"].append(seq)
            rows["event_uuid"].append(fp)
            rows["action_uuid"].append(au)
            rows["tombstone"].append(False)
            rows["completed"].append(done)
            rows["task_event_type"].append(etype)
            rows["task_event_id"].append(eid)
            rows["upstream_event_id"].append(up)
            rows["is_root"].append(root)
            rows["output_event_count"].append(len(outs))
            rows["output_event_ids"].append(outs)
            rows["call_count"].append(calls)
            rows["calls_pending"].append(0)
            rows["calls_succeeded"].append(calls)
            rows["calls_failed"].append(0)
            rows["error"].append(None)
    frame = pd.DataFrame(rows)
    for c in ("key_format", "task_event_type", "action_uuid"):
        frame[c] = frame[c].astype("category")
    return frame


def timed(fn, *args, **kwargs):
    """(result, CPU seconds): CPU time, because the machine's cores are shared with other work."""
    gc.collect()
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


# --- the baseline: the upstream get, ported faithfully (whole-cache scans) ----------------------------

class UpstreamScanStore:
    """The 0.4-era store shape: a plain map, ``get`` scans every cached key to count the round's records
    and, on a miss or count > 1, scans again to evict the key's later rounds (spec §8.2, K1.5 matching)."""

    def __init__(self) -> None:
        self.cache: dict[str, Entry] = {}

    def put(self, e: Entry) -> None:
        self.cache[e.state_key] = e

    def get(self, key: str, seq: int, state_key: str) -> Entry | None:
        count = 0
        for e in self.cache.values():
            if e.business_key == key and e.seq == seq:
                count += 1
        if state_key not in self.cache or count > 1:
            doomed = [sk for sk, e in self.cache.items() if e.business_key == key and e.seq > seq]
            for sk in doomed:
                del self.cache[sk]
        return self.cache.get(state_key)


def fleet_log(n_records: int) -> ActionStateLog:
    """A fleet log of about ``n_records`` records (18 a key), decoded in memory."""
    batches = fleet_batches(max(1, n_records // 18), partitions=PARTITIONS)
    info = SourceInfo(kind="kafka", location="kafka://bench/fleet", topic="fleet",
                      start_offsets={p: 0 for p in batches}, end_offsets={p: len(b) for p, b in batches.items()})
    return ActionStateLog.from_raw(list(batches.values()), info)


def recovery_tasks(records: pd.DataFrame) -> tuple[list[Entry], list[Task]]:
    entries = [e for _, e, _ in iter_entries(records) if e is not None]
    last: dict[str, Entry] = {}
    for e in entries:
        last[e.state_key] = e
    ordered = sorted(last.values(), key=lambda e: (e.business_key, e.seq, e.pos))
    return entries, [Task.for_entry(e) for e in ordered]


def indexed_recovery(entries: list[Entry], tasks: list[Task]) -> int:
    session = RecoverySession(resolve_rule("original:segment"))
    for e in entries:
        session.rebuild_entry(e)
    for t in tasks:
        session.lookup(t)
    return len(session.store)


def scan_recovery_sampled(entries: list[Entry], tasks: list[Task], sample: int) -> float:
    """Seconds the scan port needs for the whole recovery: the rebuild timed in full, the lookups from an
    evenly spaced sample of ``sample`` gets, each timed on the cache as it is at that point of the run
    (between samples the port's cache follows the same evictions through the indexed store, untimed)."""
    store = UpstreamScanStore()
    t0 = time.process_time()
    for e in entries:
        store.put(e)
    rebuild_s = time.process_time() - t0
    mirror = RecoverySession(resolve_rule("original:segment"))
    for e in entries:
        mirror.rebuild_entry(e)
    step = max(1, len(tasks) // sample)
    timed_s, n_timed = 0.0, 0
    for i, t in enumerate(tasks):
        if i % step == 0 and n_timed < sample:
            t0 = time.process_time()
            store.get(t.business_key, t.seq, t.state_key)
            timed_s += time.process_time() - t0
            n_timed += 1
            mirror.lookup(t)
        else:
            for ev in mirror.lookup(t).events:
                for e in ev.removed:
                    store.cache.pop(e.state_key, None)
    assert set(store.cache) == set(mirror.store), "the port and the indexed store disagree"
    return rebuild_s + timed_s / n_timed * len(tasks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k / 100k / 50k records instead of 100k / 1M / 200k")
    parser.add_argument("--sample", type=int, default=200, help="lookups timed on the scan port")
    args = parser.parse_args()
    small, large, recovery = (20_000, 100_000, 50_000) if args.quick else (100_000, 1_000_000, 200_000)

    per_record = {}
    for n in (small, large):
        log = fleet_log(n)
        result, secs = timed(reconstruct, log, rule="fixed")
        per_record[n] = secs / len(log)
        s = result.summary()
        print(f"reconstruct(fixed) {len(log):>9,} records: {secs:7.2f}s = {per_record[n] * 1e6:6.2f} us/record; "
              f"{s['status']}, divergences {s['divergences']}")
        del log, result
    scaling = per_record[large] / per_record[small]

    frame = synthetic_records(recovery)
    entries, tasks = recovery_tasks(frame)
    _, ours_s = timed(indexed_recovery, entries, tasks)
    scan_s = scan_recovery_sampled(entries, tasks, args.sample)
    speedup = scan_s / ours_s
    _, full_s = timed(reconstruct, fleet_log(recovery), rule="original")
    print(f"original-rule recovery of {len(frame):,} records ({len(tasks):,} lookups): indexed store {ours_s:.2f}s, "
          f"upstream scan port ~{scan_s:,.0f}s (extrapolated from {args.sample} lookups) -> {speedup:,.0f}x; "
          f"full reconstruct(original) {full_s:.2f}s")

    results = [
        {"name": "scaling", "ratio": round(scaling, 3), "target": 1.3, "better": "lower",
         "us_per_record_small": round(per_record[small] * 1e6, 3),
         "us_per_record_large": round(per_record[large] * 1e6, 3), "small": small, "large": large},
        {"name": "vs_upstream_scan", "ratio": round(speedup, 1), "target": 100, "better": "higher",
         "records": len(frame), "lookups": len(tasks), "indexed_s": round(ours_s, 3), "scan_s": round(scan_s, 1)},
    ]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
