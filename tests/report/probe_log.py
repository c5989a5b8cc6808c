"""A hostile action-state log: script probes in keys, event types, attributes, memory paths, function ids.

Written as plain JSONL through the codec encoders, so it takes the production path (``ai.load``). Each
probe, if it ever ran in a browser, would push its label onto ``window.__xss_hits`` or open a dialog.
The history has a root conflict at seq 5 on the probe key, so every rule reports a divergence and
evicts or invalidates records of that key.
"""

from __future__ import annotations

import base64
from pathlib import Path

import msgspec

from agent_inspect import codec

__all__ = ["PROBES", "probe", "write_probe_log", "assert_no_live_probe"]


def probe(label: str) -> str:
    """Several classic injection shapes in one string, all reporting ``label`` when they execute."""
    hit = f"window.__xss_hits.push('{label}')"
    return (f"<img src=x onerror=\"{hit}\"><script>{hit}</script>"
            f"'\"><svg onload={hit}><img src=y onerror=alert('{label}')>")


PROBES = {name: probe(name) for name in
          ("key", "event_type", "attr", "memory_path", "function_id", "action", "payload", "output_type")}


def _event(event_type: str, attributes: dict, *, eid: str, upstream: str | None = None,
           upstream_action: str | None = None) -> codec.Event:
    return codec.Event(event_class=codec.GENERIC_EVENT, id=eid, type=event_type,
                       attributes=msgspec.Raw(msgspec.json.encode(attributes)),
                       upstream_event_id=upstream, upstream_action_name=upstream_action)


def _uuid(label: str) -> str:
    return codec.uuid3(f"probe:{label}".encode())


def write_probe_log(path: Path, probes: dict[str, str] | None = None) -> Path:
    """Write the probe log as plain JSONL at ``path`` and return it (``probes`` override :data:`PROBES`)."""
    PROBES = {**globals()["PROBES"], **(probes or {})}  # same names as the module's probes
    key = PROBES["key"]
    group = codec.key_group(codec.java_string_hash(key))
    work_type = PROBES["event_type"]
    root_action, child_action = "IA", PROBES["action"]
    envelope = msgspec.json.encode(codec.KryoEnvelope(payload=base64.b64encode(PROBES["payload"].encode()).decode()))
    lines: list[bytes] = []

    def write(seq: int, action: str, task: codec.Event, state: codec.ActionState, fingerprint: str) -> None:
        state_key = codec.format_state_key("K1.5", seq=seq, event_uuid=fingerprint,
                                           action_uuid=codec.name_action_uuid(action), key_text=key,
                                           key_group=group)
        value = codec.encode_action_state(state, value_format="V3")
        lines.append(msgspec.json.encode({"partition": 0, "offset": len(lines),
                                          "timestamp": 1_760_000_000_000 + 1000 * len(lines),
                                          "key": state_key, "value": msgspec.Raw(value)}))

    def execution(attempt: int, seq: int, label: str) -> None:
        attrs = {"input": label, PROBES["attr"]: PROBES["attr"], "attempt-note": f"attempt {attempt}"}
        root_id, work_id = _uuid(f"{attempt}/{label}/root"), _uuid(f"{attempt}/{label}/work")
        root = _event("_input_event", attrs, eid=root_id)
        work = _event(work_type, {"x": label, "note": PROBES["attr"]}, eid=work_id, upstream=root_id,
                      upstream_action=root_action)
        out = _event(PROBES["output_type"], {"y": PROBES["attr"]}, eid=_uuid(f"{attempt}/{label}/out"),
                     upstream=work_id, upstream_action=child_action)
        fp_root = codec.event_uuid(attrs)
        fp_work = codec.event_uuid({"x": label, "note": PROBES["attr"]})
        write(seq, root_action, root, codec.ActionState(task_event=root), fp_root)
        write(seq, root_action, root, codec.ActionState(task_event=root, output_events=(work,), completed=True),
              fp_root)
        call = codec.CallResult(function_id=PROBES["function_id"], args_digest="d41d8cd9",
                                result_payload=base64.b64encode(PROBES["payload"].encode()).decode(),
                                status="SUCCEEDED")
        memory = codec.MemoryUpdate(path=PROBES["memory_path"], value=msgspec.Raw(envelope))
        write(seq, child_action, work, codec.ActionState(task_event=work), fp_work)
        write(seq, child_action, work, codec.ActionState(task_event=work, call_results=(call,)), fp_work)
        write(seq, child_action, work, codec.ActionState(task_event=work, call_results=(call,),
                                                         short_term_memory_updates=(memory,),
                                                         sensory_memory_updates=(memory,),
                                                         output_events=(out,), completed=True), fp_work)

    execution(1, 5, "A")
    execution(1, 6, "B")
    execution(2, 5, "C")  # a different input at seq 5 after the restore: a root conflict
    execution(2, 6, "B")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def assert_no_live_probe(html: str) -> None:
    """No probe survives unescaped: neither whole nor its dangerous fragments."""
    for name, text in PROBES.items():
        assert text not in html, f"probe {name!r} reached the HTML unescaped"
    for fragment in ("<img src=x", "<img src=y", "<svg onload", "<script>window.__xss_hits"):
        assert fragment not in html, f"{fragment!r} reached the HTML unescaped"
