"""The small samples: histories of named cases of divergence-cases.md, produced by running attempts.

Each scenario runs a tiny agent through the attempts its case describes and returns the job and the
checkpoint the case's restore starts from. As in the cases, key ``k`` is restored at seq 4, so its
first replayed input gets seq 5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SCENARIOS"]

_MODULE = "shop_agent"


def _answer(q: str) -> str:
    return f"answer to {q}"


def _cascade_agent() -> Any:
    """``IA`` (root) remembers the input and emits ``WorkEvent``; ``WA`` asks the model (N04, P01)."""
    from agent_inspect.agents import PythonAgent
    from agent_inspect.executor import python_args_digest

    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"], module=_MODULE, qualname="IA")
    def ia(event: Any, ctx: Any) -> None:
        x = str(event.attributes["input"])
        ctx.short_term.set("last_input", x)
        ctx.send_event("WorkEvent", {"x": x.lower()})

    @agent.action("WA", listens=["WorkEvent"], module=_MODULE, qualname="WA")
    def wa(event: Any, ctx: Any) -> None:
        q = str(event.attributes["x"])
        ans = ctx.durable_execute(f"{_MODULE}.ask_llm", python_args_digest((q,), {}), lambda: _answer(q))
        ctx.send_event("_output_event", {"output": ans})

    return agent


def _memory_agent() -> Any:
    """``IA`` answers from what the previous input left in short-term memory (G01)."""
    from agent_inspect.agents import PythonAgent

    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"], module=_MODULE, qualname="IA")
    def ia(event: Any, ctx: Any) -> None:
        x = str(event.attributes["input"])
        before = ctx.short_term.get("last_input")
        ctx.short_term.set("last_input", x)
        ctx.send_event("_output_event", {"input": x, "after": before})

    return agent


def _shared_child_agent() -> Any:
    """``IA`` remembers the input and always emits ``W(x)``; ``WA`` answers from that memory (G02)."""
    from agent_inspect.agents import PythonAgent

    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"], module=_MODULE, qualname="IA")
    def ia(event: Any, ctx: Any) -> None:
        ctx.short_term.set("last_input", str(event.attributes["input"]))
        ctx.send_event("WorkEvent", {"x": "x"})

    @agent.action("WA", listens=["WorkEvent"], module=_MODULE, qualname="WA")
    def wa(event: Any, ctx: Any) -> None:
        ctx.send_event("_output_event", {"output": f"for {ctx.short_term.get('last_input')}"})

    return agent


def _subagent_agent(chained: bool = False) -> Any:
    """``P`` (root) calls sub-agent ``reviewer``: ``CA`` answers (S01), or ``CA1`` → ``CA2`` (chained)."""
    from agent_inspect.agents import PythonAgent

    child = PythonAgent()
    if chained:
        @child.action("CA1", listens=["_input_event"], module=_MODULE, qualname="Reviewer.CA1")
        def ca1(event: Any, ctx: Any) -> None:
            ctx.send_event("CheckedEvent", {"draft": event.attributes["input"], "ok": True})

        @child.action("CA2", listens=["CheckedEvent"], module=_MODULE, qualname="Reviewer.CA2")
        def ca2(event: Any, ctx: Any) -> None:
            ctx.send_event("_output_event", {"verdict": "approve" if event.attributes["ok"] else "reject"})
    else:
        @child.action("CA", listens=["_input_event"], module=_MODULE, qualname="Reviewer.CA")
        def ca(event: Any, ctx: Any) -> None:
            ctx.send_event("_output_event", {"verdict": f"reviewed {event.attributes['input']}"})

    agent = PythonAgent()

    @agent.action("P", listens=["_input_event"], module=_MODULE, qualname="P")
    def p(event: Any, ctx: Any) -> None:
        result = ctx.call_subagent("reviewer", "_input_event", {"input": str(event.attributes["input"])})
        ctx.send_event("_output_event", {"output": result})

    agent.subagent("reviewer", child)
    return agent


def _persisted(action: str, what: str, *, seq: int | None = None, key: str | None = None
               ) -> Callable[[Any], bool]:
    """True at the write of ``action``'s record ``what`` ("initial", "completed", "call results")."""
    from agent_inspect.executor import StepKind

    return lambda s: (s.kind is StepKind.PERSIST and s.action == action and (s.outcome or "").startswith(what)
                      and (seq is None or s.seq == seq) and (key is None or s.key == key))


def n04(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_cascade_agent(), [("k", "A"), ("k", "B")], restored_seq={"k": 4})
    job.run(fails=True, note="A@5 and B@6 run (cascade IA → WA each), then the job fails")
    return job, 1


def p01(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    # The snapshot's Kafka store cannot write this history: its strict K1 parser already throws on
    # WA's first miss. A store that parses keys from the right (the fixed rule) writes it; restoring
    # it with the snapshot store is what crashes (case P01, variant snapshot-kafka-k1).
    job = job_factory(_cascade_agent(), [("tenant_1", "A"), ("tenant_1", "B")], restored_seq={"tenant_1": 4},
                      key_format="K1", operator_rule="fixed")
    job.run(fails=True, note="as N04 for key text tenant_1 under K1 keys, on a store that parses keys from "
            "the right; then the job fails")
    return job, 1


def n07(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_cascade_agent(), [("k", "A"), ("k", "B")], restored_seq={"k": 4})
    job.run(stop=_persisted("WA", "call results", seq=6),
            note="A@5 runs; B@6's WA records its model call, then the job fails mid-body")
    return job, 1


def g01(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_memory_agent(), [("k", "A"), ("k", "C")], restored_seq={"k": 4})
    job.run(inputs=1, fails=True, note="A@5 runs, then the job fails")
    job.source = [("k", "B"), ("k", "C")]
    job.run(restore=1, rule="original", fails=True,
            note="restores checkpoint 1; the source order changed: B@5, then C@6 reads B's memory; fails")
    job.source = [("k", "A"), ("k", "C")]
    return job, 1


def g02(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_shared_child_agent(), [("k", "A")], restored_seq={"k": 4})
    job.run(fails=True, note="A@5: IA emits W(x), WA answers from A's memory; then the job fails")
    job.source = [("k", "B")]                          # the source re-reads a different input at seq 5
    return job, 1


def g03(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job, cp = g01(job_factory)
    job.run(restore=cp, rule="fixed", stop=_persisted("IA", "completed", seq=5),
            note="restores checkpoint 1 again, running the fixed rule: A@5 re-runs, then the job fails before C")
    return job, cp


def s01(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_subagent_agent(), [("k", "A")], restored_seq={"k": 4})
    job.run(stop=_persisted("CA", "completed"),
            note="P@5 calls reviewer; the child CA completes, the job fails before P records the call")
    return job, 1


def s05(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_subagent_agent(), [("k", "A"), ("k", "B")], restored_seq={"k": 4})
    job.run(fails=True, note="A@5 and B@6 each call reviewer (CA), then the job fails")
    return job, 1


def subagents(job_factory: Callable[..., Any]) -> tuple[Any, int]:
    job = job_factory(_subagent_agent(chained=True),
                      [("order-1", "A"), ("order-2", "X"), ("order-1", "B"), ("order-2", "Y")],
                      restored_seq={"order-1": 4, "order-2": 6}, num_partitions=2)
    job.run(stop=_persisted("CA2", "completed", key="order-2", seq=8),
            note="two keys, each calling reviewer (CA1 → CA2) per input; the job fails inside the last call")
    return job, 1


#: name -> (case id, scenario)
SCENARIOS: dict[str, tuple[str | None, Callable[..., tuple[Any, int]]]] = {
    "N04": ("N04", n04), "N07": ("N07", n07), "G01": ("G01", g01), "G02": ("G02", g02), "G03": ("G03", g03),
    "S01": ("S01", s01), "S05": ("S05", s05), "P01": ("P01", p01), "subagents": (None, subagents),
}
