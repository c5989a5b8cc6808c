"""Time to first render of the views: build the widget and its figure data, no browser.

Measures, in one process:
- ``timeline-10k``: ``KeyTimeline`` of one business key with 10k records (a reconstruction under
  the fixed rule, with an evicted suffix and a divergence), target ≤ 1 s;
- ``graph-10k``: ``GraphView`` of the same key (graph build + layered layout + figure), target ≤ 1 s;
- ``browser-1m``: ``LogBrowser`` of a 1M-record log (filters, counts figure, first page), target ≤ 2 s.

The one-off cost of the first chart widget in a process (``widgets._plot.Plot``: plotly's figure
classes and anywidget imported; plotly.js itself reaches the browser once per page, not per widget) is
paid before timing and printed separately. Usage: ``python benchmarks/views.py [--records N] [--key-records N]``.
The last line is a JSON array of ``{"name", "seconds", "ratio", "target"}`` (ratio = target time ÷
measured time; ≥ 1 meets the target).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import msgspec

from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    encode_action_state,
    event_uuid,
    format_state_key,
    java_string_hash,
    key_group,
    name_action_uuid,
)
from agent_inspect.raw import RawBatch, SourceInfo


def _event(type_: str, attributes: dict, ident: str, upstream: str | None = None) -> Event:
    return Event(event_class="org.apache.flink.agents.api.Event", id=ident, type=type_,
                 attributes=msgspec.Raw(msgspec.json.encode(attributes)), upstream_event_id=upstream)


def _round_values(tag: str, n: int) -> list[tuple[str, str, bytes]]:
    """(action, event uuid, value bytes) of the 4 writes of one round: root done, child initial/call/done."""
    root = _event("_input_event", {"input": f"{tag} {n}"}, f"00000000-0000-4000-8000-{n:012d}")
    work = _event("WorkEvent", {"task": f"t{n}"}, f"00000000-0000-4000-9000-{n:012d}", root.id)
    out = _event("_output_event", {"output": "ok"}, f"00000000-0000-4000-a000-{n:012d}", work.id)
    call = CallResult(function_id="chat", args_digest="d", result_payload="eyJ4IjoxfQ==", status="SUCCEEDED")
    root_uuid = event_uuid({"input": f"{tag} {n}"})
    work_uuid = event_uuid({"task": f"t{n}"})
    return [
        ("plan", root_uuid, encode_action_state(ActionState(task_event=root, completed=True, output_events=(work,)))),
        ("act", work_uuid, encode_action_state(ActionState(task_event=work))),
        ("act", work_uuid, encode_action_state(ActionState(task_event=work, call_results=(call,)))),
        ("act", work_uuid, encode_action_state(ActionState(task_event=work, completed=True, output_events=(out,)))),
    ]


def build_log(keys: int, rounds: int, *, branch_at: int | None = None) -> Any:
    """A one-partition K1.5 log: ``keys`` × ``rounds`` rounds of 4 records each.

    With ``branch_at``, key 0 is restored and re-run from that seq with different inputs (a root
    conflict: the first branch's suffix is invalidated under the fixed rule).
    """
    from agent_inspect.log import ActionStateLog

    batch = RawBatch()
    groups = {k: key_group(java_string_hash(f"user-{k}")) for k in range(keys)}
    templates = {tag: [_round_values(tag, n) for n in range(64)] for tag in ("A", "B")}
    action_uuids = {a: name_action_uuid(a) for a in ("plan", "act")}

    def emit(k: int, seq: int, tag: str) -> None:
        for action, ev_uuid, value in templates[tag][seq % 64]:
            sk = format_state_key("K1.5", seq=seq, event_uuid=ev_uuid, action_uuid=action_uuids[action],
                                  key_text=f"user-{k}", key_group=groups[k])
            off = len(batch.offset)
            batch.partition.append(0)
            batch.offset.append(off)
            batch.timestamp_ms.append(1_700_000_000_000 + off)
            batch.key.append(sk.encode())
            batch.value.append(value)

    for seq in range(rounds):
        for k in range(keys):
            emit(k, seq, "A")
    if branch_at is not None:
        for seq in range(branch_at, rounds):
            emit(0, seq, "B")
    source = SourceInfo(kind="file", location="memory://bench-views", topic="action-state",
                        start_offsets={0: 0}, end_offsets={0: len(batch.offset)}, file_format="jsonl")
    return ActionStateLog.from_raw([batch], source)  # (from_raw pauses the cyclic GC itself)


def _time(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records of the log browser's log")
    parser.add_argument("--key-records", type=int, default=10_000, help="records of the timeline/graph key")
    args = parser.parse_args(argv)

    import agent_inspect as ai
    from agent_inspect.widgets import GraphView, KeyTimeline, LogBrowser
    from agent_inspect.widgets._plot import Plot

    cold, _ = _time(Plot)
    print(f"first chart widget in this process (imports, paid once): {cold:.2f} s")

    rounds = max(2, args.key_records // 4 * 2 // 3)  # + the re-run half after the branch change
    t, key_log = _time(lambda: build_log(1, rounds, branch_at=rounds // 2))
    print(f"key log: {len(key_log.records):,} records built in {t:.1f} s")
    t, result = _time(lambda: ai.reconstruct(key_log, rule="fixed"))
    print(f"reconstruct (fixed): {t:.2f} s; statuses {result.records['status'].value_counts().to_dict()}")
    key = "user-0"

    results = []
    timeline_s, timeline = _time(lambda: KeyTimeline(result, key))
    results.append(("timeline-10k", timeline_s, 1.0))
    graph_s, graph = _time(lambda: GraphView(result, key))
    results.append(("graph-10k", graph_s, 1.0))
    print(f"timeline: {len(timeline.records):,} points in {timeline_s:.3f} s; "
          f"graph: {graph.graph.number_of_nodes():,} nodes in {graph_s:.3f} s")
    from agent_inspect.history import layered_layout

    build_s, g = _time(lambda: result.graph(key))
    layout_s, _ = _time(lambda: layered_layout(g))
    draw_s, _ = _time(lambda: GraphView(None, graph=g))
    print(f"graph breakdown: result.graph {build_s:.3f} s, layered_layout {layout_s:.3f} s, "
          f"view of a built graph (layout + figure) {draw_s:.3f} s")

    t, big = _time(lambda: build_log(max(1, args.records // 400), 100))
    print(f"browser log: {len(big.records):,} records built in {t:.1f} s")
    browser_s, browser = _time(lambda: LogBrowser(big))
    size = len(big.records)
    results.append(("browser-1m" if size == 1_000_000 else f"browser-{size}", browser_s, 2.0))
    filter_s, _ = _time(lambda: browser.set_filters(key="user-7", seq="10-20"))
    print(f"browser: first render {browser_s:.3f} s; one filter change {filter_s:.3f} s "
          f"→ {len(browser.filtered):,} rows")

    print(json.dumps([{"name": n, "seconds": round(s, 4), "ratio": round(target / s, 3), "target": 1}
                      for n, s, target in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
