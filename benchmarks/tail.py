"""Live tail: how soon a written record shows in the window, and what one update costs.

Usage::

    .venv/bin/python benchmarks/tail.py [--window 1000] [--writes 30] [--partitions 4]

Starts tansu on 127.0.0.1 (in-memory), fills a topic with ``--window`` records, follows it with
``ai.log.follow(url, window=N, refresh=0)``, then writes ``--writes`` records one at a time (send +
flush, like the upstream store) and measures, per record, the time from its acknowledged write to the
first published window holding it (``write_to_window``). It also times, on the full window,
``LiveLog.publish`` (decode the window: ``publish``) and one update of the default live views
(reconstruct + key timeline + divergences: ``views_update``). Medians; the last line is a JSON array of
``{name, seconds, target, ratio = target / seconds}``. The targets are ours: a record on screen within
a second, an update well inside the default refresh.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support.tansu starts and stops the broker

from agent_inspect.log import ActionStateLog, follow  # noqa: E402
from tests.sources._records import make_records  # noqa: E402
from tests.support.tansu import create_topic, produce_like_upstream, start_tansu  # noqa: E402

TARGETS = {"write_to_window": 1.0, "publish": 0.5, "views_update": 1.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    rounds = max(1, (args.window + args.writes) // (2 * 20) + 1)
    records = make_records(20, rounds, prefix="bench")
    fill, more = records[:args.window], records[args.window:args.window + args.writes]
    broker = start_tansu(log_path=Path(tempfile.mkdtemp()) / "tansu.log")
    try:
        topic = create_topic(broker.bootstrap, args.partitions)
        produce_like_upstream(broker.bootstrap, topic, fill, num_partitions=args.partitions)
        live = follow(f"kafka://{broker.bootstrap}/{topic}", window=args.window, refresh=0)
        seen: dict[tuple[int, int], float] = {}
        arrived = threading.Condition()

        def on_log(log: ActionStateLog) -> None:
            now = time.perf_counter()
            with arrived:
                for pos in zip(log.raw.partition, log.raw.offset):
                    seen.setdefault(pos, now)
                arrived.notify_all()

        live.add_listener(on_log)
        deadline = time.monotonic() + 60
        while live.count < len(fill) and time.monotonic() < deadline:
            time.sleep(0.05)
        latencies = []
        for record in more:
            (pos,) = produce_like_upstream(broker.bootstrap, topic, [record], num_partitions=args.partitions)
            written = time.perf_counter()
            with arrived:
                arrived.wait_for(lambda pos=pos: pos in seen, timeout=30)
            latencies.append(seen[pos] - written)
        live.pause()
        publish = []
        for _ in range(5):
            t = time.perf_counter()
            log = live.publish()
            publish.append(time.perf_counter() - t)
        views = []
        from agent_inspect.widgets import LiveDivergences, LiveKeyTimeline
        from agent_inspect.widgets._tail import _reconstruction

        for _ in range(3):
            log = ActionStateLog.from_raw([log.raw], log.source)  # a new window: nothing cached
            timeline, divergences = LiveKeyTimeline(), LiveDivergences()
            t = time.perf_counter()
            timeline.show_log(log)
            divergences.show_log(log)
            views.append(time.perf_counter() - t)
            _reconstruction.cache_clear()
        live.stop()
        measured = {"write_to_window": statistics.median(latencies), "publish": statistics.median(publish),
                    "views_update": statistics.median(views)}
    finally:
        broker.stop()
    out = []
    for name, seconds in measured.items():
        print(f"{name:16s} median {seconds:.3f} s (window {args.window}; target ≤ {TARGETS[name]} s)")
        out.append({"name": name, "seconds": round(seconds, 4), "target": TARGETS[name],
                    "ratio": round(TARGETS[name] / seconds, 3), "window": args.window})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
