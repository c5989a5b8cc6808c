"""The production-like sample: a customer-support agent with a reviewer sub-agent, recovered several times.

The agent (actions in module ``support_agent``):

- ``triage`` (root): retrieval (``support_agent.vector_store.query``), appends the question to the
  short-term ``history``; a "compare" question fans out one ``ToolRequest`` per item, any other
  question goes to ``chat``;
- ``audit`` (second root): counts questions in short-term memory (a multi-root round) and emits
  ``AuditRecorded``, which no action listens to;
- ``chat`` (on ``ChatRequest`` and ``ToolResult``): ReAct-style loop on ``support_agent.chat_model.chat``,
  retried on a timeout (so an action can hold several results of one identity, spec §13.1); it asks
  for a tool, answers, or hands a refund draft to ``review``;
- ``tool_call`` (on ``ToolRequest``): ``support_agent.tools.<name>``; ``create_ticket`` is a
  reconcilable call (a PENDING slot, then the terminal one);
- ``review`` (on ``DraftReady``): calls the sub-agent ``reviewer`` (``check_policy`` → ``approve``).

The job runs four attempts, every recovery under the upstream ``original`` rule, so the #1301
over-eviction shows as duplicated work in the topic: a fresh start that dies mid-body; a restore of
its last checkpoint; a manual restart from that same checkpoint with one key's inputs re-read in a
different order (a genuine branch change); and a restore of a checkpoint taken mid-round (a task in
flight) that runs to the end of the source.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.agents import PythonAgent
    from agent_inspect.samples._driver import Job

__all__ = ["support_agent", "production_story", "interleaved_source", "KEY_FORMATS"]

KEY_FORMATS = {"production": "K1.5", "production_k1": "K1"}
_MODULE = "support_agent"
_TOOLS = ("lookup_order", "check_stock", "shipping_eta", "create_ticket")
_ITEMS = ("laptop", "headset", "dock", "monitor", "keyboard", "webcam", "router", "tablet")
_TOPICS = ("where is my order {n}", "refund for order {n}", "compare {a} and {b}", "is the {a} in stock",
           "change delivery address for order {n}", "my {a} arrived broken", "open a ticket about {a}",
           "when does order {n} ship")


def _h(*parts: Any) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


class _World:
    """The external services of one job run: deterministic answers, a few transient failures."""

    def __init__(self) -> None:
        self._failed: set[str] = set()

    def retrieve(self, question: str) -> list[str]:
        return [f"kb-{_h('doc', question, i) % 900 + 100}" for i in range(2)]

    def chat(self, prompt: str) -> dict[str, Any]:
        # about one prompt in six times out once, then succeeds on the retry
        if _h("fail", prompt) % 6 == 0 and prompt not in self._failed:
            self._failed.add(prompt)
            raise TimeoutError("chat model did not answer within 30 s")
        h = _h("chat", prompt)
        if "observation:" not in prompt and h % 3 != 0:
            tool = _TOOLS[h % len(_TOOLS)]
            return {"action": "tool", "tool": tool, "arg": f"{h % 90000 + 10000}"}
        return {"action": "answer", "text": f"answer-{h % 10**6:06d}"}

    def tool(self, name: str, arg: str) -> dict[str, Any]:
        h = _h("tool", name, arg)
        return {"tool": name, "status": ("ok", "ok", "delayed", "not_found")[h % 4], "ref": f"R{h % 10**5:05d}"}

    def review(self, draft: str) -> dict[str, Any]:
        return {"verdict": "approve" if _h("review", draft) % 4 else "escalate", "policy": "refunds-v3"}


def _call(ctx: Any, fid: str, fn: Callable[..., Any], *args: Any, reconciler: Callable[[], Any] | None = None
          ) -> Any:
    from agent_inspect.executor import python_args_digest

    digest = python_args_digest(args, {})
    if reconciler is not None:
        return ctx.durable_execute_reconcilable(fid, digest, lambda: fn(*args), reconciler)
    return ctx.durable_execute(fid, digest, lambda: fn(*args))


def _chat_with_retries(ctx: Any, world: _World, prompt: str, fid: str) -> dict[str, Any]:
    last: BaseException | None = None
    for _ in range(3):
        try:
            answer: dict[str, Any] = _call(ctx, fid, world.chat, prompt)
            return answer
        except Exception as exc:  # noqa: BLE001 - a recorded timeout comes back as the executor's error type
            last = exc
    raise RuntimeError(f"chat failed three times: {last}")


def support_agent(world: _World, answer: Callable[[Any, Any, str, Any], dict[str, Any]] | None = None) -> PythonAgent:
    """The support agent of the production sample, calling ``world`` for every external service.

    ``answer(ctx, world, prompt, event)`` answers a chat turn (default: the chat model with retries)."""
    from agent_inspect.agents import PythonAgent

    agent = PythonAgent()

    def act(name: str, listens: list[str]) -> Callable[[Callable[..., Any]], Any]:
        return agent.action(name, listens=listens, module=_MODULE, qualname=f"SupportAgent.{name}")

    @act("triage", ["_input_event"])
    def triage(event: Any, ctx: Any) -> None:
        q = str(event.attributes["input"])
        docs = _call(ctx, f"{_MODULE}.vector_store.query", world.retrieve, q)
        history = list(ctx.short_term.get("history") or [])
        ctx.short_term.set("history", (history + [q])[-4:])
        ctx.sensory.set("docs", docs)
        if q.startswith("compare "):
            for item in q[len("compare "):].split(" and "):
                ctx.send_event("ToolRequest", {"tool": "check_stock", "arg": item, "question": q, "step": 1})
        else:
            ctx.send_event("ChatRequest", {"question": q, "docs": docs, "turn": len(history)})

    @act("audit", ["_input_event"])
    def audit(event: Any, ctx: Any) -> None:
        count = int(ctx.short_term.get("audit.questions") or 0) + 1
        ctx.short_term.set("audit.questions", count)
        ctx.send_event("AuditRecorded", {"questions": count})       # no listener: only the record shows it

    @act("chat", ["ChatRequest", "ToolResult"])
    def chat(event: Any, ctx: Any) -> None:
        a = event.attributes
        q = str(a["question"])
        step = int(a.get("step", 0))
        context = " | ".join(ctx.short_term.get("history") or [])
        prompt = f"user: {q}; context: {context}"
        if event.type == "ToolResult":
            prompt += f"; observation: {a['result']['tool']}={a['result']['status']}"
        reply = answer(ctx, world, prompt, event) if answer is not None else \
            _chat_with_retries(ctx, world, prompt, f"{_MODULE}.chat_model.chat")
        if reply["action"] == "tool" and step < 2:
            ctx.send_event("ToolRequest", {"tool": reply["tool"], "arg": reply["arg"], "question": q,
                                           "step": step + 1})
        elif q.startswith("refund"):
            ctx.send_event("DraftReady", {"question": q, "draft": reply.get("text", "refund approved")})
        else:
            ctx.short_term.set("last_answer", reply.get("text", "see ticket"))
            ctx.send_event("_output_event", {"question": q, "answer": reply.get("text", "see ticket")})

    @act("tool_call", ["ToolRequest"])
    def tool_call(event: Any, ctx: Any) -> None:
        a = event.attributes
        name, arg = str(a["tool"]), str(a["arg"])
        fid = f"{_MODULE}.tools.{name}"
        if name == "create_ticket":
            result = _call(ctx, fid, world.tool, name, arg,
                           reconciler=lambda: {"tool": name, "status": "ok", "ref": "reconciled"})
        else:
            result = _call(ctx, fid, world.tool, name, arg)
        ctx.send_event("ToolResult", {"question": a["question"], "result": result, "step": a["step"],
                                      "arg": arg})

    @act("review", ["DraftReady"])
    def review(event: Any, ctx: Any) -> None:
        a = event.attributes
        verdicts = ctx.call_subagent("reviewer", "_input_event", {"input": a["draft"], "question": a["question"]})
        ctx.send_event("_output_event", {"question": a["question"], "answer": a["draft"], "review": verdicts})

    reviewer = PythonAgent()

    @reviewer.action("check_policy", listens=["_input_event"], module=_MODULE, qualname="Reviewer.check_policy")
    def check_policy(event: Any, ctx: Any) -> None:
        verdict = _call(ctx, f"{_MODULE}.reviewer.chat_model.chat", world.review, str(event.attributes["input"]))
        ctx.send_event("PolicyChecked", verdict)

    @reviewer.action("approve", listens=["PolicyChecked"], module=_MODULE, qualname="Reviewer.approve")
    def approve(event: Any, ctx: Any) -> None:
        ctx.send_event("_output_event", {"approved": event.attributes["verdict"] == "approve",
                                         "policy": event.attributes["policy"]})

    agent.subagent("reviewer", reviewer)
    return agent


def _keys(k1: bool) -> list[str]:
    keys = [f"user-{n:04d}" for n in range(1, 13 if k1 else 37)]
    # K1.5 keeps the key text as the last segment, so '_' is harmless there; under K1 the snapshot's
    # Kafka store would crash on it (case P01), so the K1 variant uses '-' instead.
    sep = "-" if k1 else "_"
    return keys + [f"vip{sep}{n:04d}" for n in ((7, 42) if k1 else (7, 19, 23, 42))]


def _questions(key: str, rng: random.Random) -> list[str]:
    out = []
    for _ in range(rng.randint(3, 6)):
        a, b = rng.sample(_ITEMS, 2)
        out.append(rng.choice(_TOPICS).format(n=rng.randint(10000, 99999), a=a, b=b))
    return out


def interleaved_source(keys: list[str], rng: random.Random) -> list[tuple[str, str]]:
    """The job's input stream: a few questions per key, keys interleaved like a real stream."""
    per_key = {k: _questions(k, rng) for k in keys}
    source: list[tuple[str, str]] = []
    cursors = dict.fromkeys(keys, 0)
    while any(cursors[k] < len(per_key[k]) for k in keys):
        k = rng.choice([k for k in keys if cursors[k] < len(per_key[k])])
        source.append((k, per_key[k][cursors[k]]))
        cursors[k] += 1
    return source


def production_story(job_factory: Callable[..., Job], *, k1: bool) -> Job:
    """Run the production job: four attempts, three recoveries under the upstream rule."""
    from agent_inspect.executor import StepKind

    rng = random.Random(1301)
    source = interleaved_source(_keys(k1), rng)
    world = _World()
    job = job_factory(support_agent(world), source)
    n = len(source)
    every = max(5, n // 9)

    def dies_at(count: int) -> Callable[[Any], bool]:
        # the job dies mid-body: right after the count-th durable call result is persisted
        seen = [0]

        def stop(step: Any) -> bool:
            if step.kind is StepKind.PERSIST and (step.outcome or "").startswith("call results"):
                seen[0] += 1
            return seen[0] >= count
        return stop

    def last_of(attempt: int) -> int:
        return [c.id for c in job.checkpoints if c.attempt == attempt][-1]

    job.run(stop=dies_at(int(n * 0.45) * 2), checkpoint_every=every,
            note="fresh start; dies mid-body (task manager lost)")
    job.run(restore=last_of(1), rule="original", stop=dies_at(int(n * 0.3) * 2), checkpoint_every=every,
            note="restores the last checkpoint; the original rule re-runs later rounds of multi-action keys")
    # restarted by hand from the checkpoint attempt 2 restored (retained), and the source is re-read
    # in a different order: one key's next two inputs swap places (a genuine branch change)
    again = job.attempts[-1].restored_from
    assert again is not None    # attempt 2 restored a checkpoint
    pos = job.checkpoints[again - 1].source_position
    moved = source[pos][0]
    i, j = [i for i in range(pos, n) if source[i][0] == moved][:2]
    job.source[i], job.source[j] = job.source[j], job.source[i]
    budget = int(n * 0.2) * 2
    stop = dies_at(budget)
    calls = [0]

    def mid_round(step: Any) -> bool:
        # one checkpoint of attempt 3 falls between two tasks of a round: tasks in flight
        if step.kind is StepKind.PERSIST and (step.outcome or "").startswith("call results"):
            calls[0] += 1
        if calls[0] >= budget * 0.8 and step.kind is StepKind.LOOKUP and step.action == "tool_call":
            calls[0] = -budget
            return True
        return False

    job.run(restore=again, rule="original", stop=stop, checkpoint_every=every, checkpoint_when=mid_round,
            note=f"restarted by hand from checkpoint {again} again; the source order of {moved} changed "
            "(branch change)")
    in_flight = [c.id for c in job.checkpoints if c.attempt == 3 and c.in_flight][-1]
    job.run(restore=in_flight, rule="original", checkpoint_every=every,
            note="restores the checkpoint taken mid-round (tasks in flight) and runs to the end of the source")
    return job
