"""Call trees of journals the replay executor writes as the operator (real ids per spec §11.2)."""

from __future__ import annotations

import networkx as nx

from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import ReplayExecutor
from agent_inspect.history import action_graph, subagent_tree
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch
from agent_inspect.recovery import reconstruct


def ask(text: str) -> str:
    return text.upper()


def reviewing_agent() -> PythonAgent:
    # One level of sub-agents: the executor does not yet nest them (its grandchild records carry the
    # outer call's task event), so nesting is covered by the codec-built histories instead.
    reviewer = PythonAgent()

    @reviewer.action("CA", listens=["_input_event"])
    def ca(event, ctx):
        ctx.send_event("Draft", {"draft": ctx.durable_execute(ask, event.attributes["input"])})

    @reviewer.action("CB", listens=["Draft"])
    def cb(event, ctx):
        ctx.send_event("_output_event", {"output": event.attributes["draft"]})

    agent = PythonAgent()

    @agent.action("P", listens=["_input_event"])
    def p(event, ctx):
        result = ctx.call_subagent("reviewer", "_input_event", {"input": "review " + event.attributes["input"]})
        ctx.send_event("_output_event", {"output": result})

    agent.subagent("reviewer", reviewer)
    return agent


def _run(inputs, *, fail_after=None):
    ex = ReplayExecutor(agent=reviewing_agent(), plan={"inputs": inputs}, key_format="K1.5", seed=7)
    ex.step()
    marker = ex.checkpoint()
    if fail_after is not None:
        ex.fail_after(fail_after)
    ex.run()
    return ex.to_log(), marker


def _labels_on_path(tree: nx.DiGraph, label: str) -> list[str]:
    node = next(n for n, d in tree.nodes(data=True) if d.get("label") == label)
    return [tree.nodes[n]["label"] if tree.nodes[n]["kind"] == "action" else tree.nodes[n]["kind"]
            for n in nx.shortest_path(tree, "round:0", node)]


def test_a_finished_call_is_rebuilt_from_the_journal() -> None:
    log, _ = _run([("user-42", "diff")])
    assert log.errors.empty
    tree = subagent_tree(log, "user-42", 0)
    assert nx.is_arborescence(tree)
    assert _labels_on_path(tree, "CB") == ["round", "P", "session", "call", "CA", "CB"]
    roles = {d["label"]: d["role"] for _, d in tree.nodes(data=True) if d["kind"] == "action"}
    assert roles == {"P": "caller", "CA": "bootstrap", "CB": "forwarded"}
    call = next(d for _, d in tree.nodes(data=True) if d["kind"] == "call")
    # P's journal held <sessionId>#<callId> before it completed; the call's result is in P's outputs now
    assert (call["attribution"], call["call_status"], call["target_scope"]) == ("call-result", "consumed", "reviewer")
    ca = next(d for _, d in tree.nodes(data=True) if d.get("label") == "CA")
    assert ca["completed"] and ca["calls_succeeded"] == 1 and ca["level"] == 1


def test_without_the_callers_journal_the_namespace_digest_attributes_the_call() -> None:
    log, _ = _run([("user-42", "diff")])
    recs = log.records
    journal = (recs["task_event_type"] == "_input_event") & (recs["call_count"] > 0)
    assert journal.sum() == 1
    keep = [p for p in recs.index if not journal[p]]  # the same topic without P's call-result record
    raw = RawBatch(*([col[p] for p in keep] for col in
                     (log.raw.partition, log.raw.offset, log.raw.timestamp_ms, log.raw.key, log.raw.value)))
    tree = subagent_tree(ActionStateLog.from_raw(raw, log.source), "user-42", 0)
    call = next(d for _, d in tree.nodes(data=True) if d["kind"] == "call")
    assert (call["attribution"], call["call_status"]) == ("namespace-digest", "consumed")


def test_an_interrupted_call_falls_back_to_lineage_or_the_digest() -> None:
    complete, _ = _run([("user-42", "diff")])
    for cut in range(1, 4 * len(complete.records)):
        log, _ = _run([("user-42", "diff")], fail_after=cut)
        recs = log.records
        child = recs["task_event_type"] == "InternalSubagentCallEvent"
        if child.any() and not recs.loc[child, "completed"].fillna(False).all():
            break
    else:
        raise AssertionError("no cut leaves a child running")
    # The caller records the call's result only when the call quiesces (spec §11.3), and it emitted
    # nothing yet, so neither its journal nor its name is in the log: the bootstrap's lineage decides.
    tree = subagent_tree(log, "user-42", 0)
    assert nx.is_arborescence(tree)
    call = next(d for _, d in tree.nodes(data=True) if d["kind"] == "call")
    assert (call["attribution"], call["call_status"]) == ("upstream-event", "in-flight")
    caller = tree.nodes[call["caller"]]
    assert caller["role"] == "caller" and not caller["completed"]
    assert caller["calls_pending"] + caller["calls_succeeded"] + caller["calls_failed"] == 0
    # K1.5 Python action UUIDs are hash-based, so the name comes as {action_uuid: name}
    p_uuid = recs.loc[recs["is_root"].fillna(False).astype(bool), "action_uuid"].iloc[0]
    named = subagent_tree(log, "user-42", 0, action_names={p_uuid: "P"})
    assert next(d for _, d in named.nodes(data=True) if d["kind"] == "call")["attribution"] == "namespace-digest"


def test_the_evicted_later_round_is_marked_in_its_tree() -> None:
    log, marker = _run([("user-42", "a"), ("user-42", "b")])
    result = reconstruct(log, rule="original", markers=[marker])
    later = result.subagent_tree("user-42", 1)
    assert nx.is_arborescence(later)
    children = [d for _, d in later.nodes(data=True) if d.get("role") in ("bootstrap", "forwarded")]
    assert children and all(d["status"] == "evicted" and d["evicted"] for d in children)
    assert all(d["evicted"] for _, d in later.nodes(data=True) if d["kind"] in ("call", "session", "round"))
    assert not any(d["evicted"] for _, d in result.subagent_tree("user-42", 0).nodes(data=True))
    fixed = reconstruct(log, rule="fixed", markers=[marker])
    assert not any(d["evicted"] for _, d in fixed.subagent_tree("user-42", 1).nodes(data=True))
    graph = result.graph("user-42")
    assert {graph.nodes[n]["seq"] for n in graph.graph["evicted"]} == {1}
    assert action_graph(log, "user-42").graph["rounds"] == (0, 1)
