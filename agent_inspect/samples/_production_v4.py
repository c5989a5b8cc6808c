"""The 0.4+ production-like sample: the support agent as post-0.4 main runs it (addendum §1, §2, §4).

The agent of :mod:`agent_inspect.samples._production`, with one change: the first chat turn of a
question goes through a model router (addendum §4) — ``route:support-router`` (the decision),
``chat:support-router:<candidate>`` per candidate attempt in fallback order (the primary model times
out on some prompts, the fallback answers) and ``judge:support-router`` (the judge's chat call), all
with an empty ``argsDigest`` as Java writes them. Tool-call turns keep the plain chat call.

The operator is main (``runtime="main"``), so every record is V4 (``subagentResultEvents``, the
reviewer's answers in its child completions), internal sub-agent calls reserve PENDING caller slots,
and every checkpoint re-appends the retained states (refresh rows) after its marker. The job runs
two attempts under the upstream ``original`` rule: a fresh start that dies mid-body, and a restore of
its last checkpoint that, at the last input, takes a checkpoint in the middle of a routed chat action
(the fallback has answered, the judge has not run) and dies right then. The restore the sample shows
is that checkpoint's: its refresh rows bring the pending state back, and the action RESUMEs with zero
repeated calls.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.samples._driver import Job

from agent_inspect.samples._production import (
    _MODULE,
    _chat_with_retries,
    _h,
    _World,
    interleaved_source,
    support_agent,
)

__all__ = ["ROUTER", "CANDIDATES", "routed_chat", "production_v4_story"]

ROUTER = "support-router"
#: candidates in fallback order: the primary model, then the fallback
CANDIDATES = ("gpt-large", "gpt-mini")


class _RoutedWorld(_World):
    """The production sample's services plus a router, two candidate models and a judge."""

    def route(self, prompt: str) -> dict[str, Any]:
        return {"strategy": "cost-aware", "candidates": list(CANDIDATES)}

    def primary_fails(self, prompt: str) -> bool:
        return _h("primary", prompt) % 3 == 0

    def candidate(self, model: str, prompt: str) -> dict[str, Any]:
        # the primary times out on about one prompt in three; the fallback always answers
        if model == CANDIDATES[0] and self.primary_fails(prompt):
            raise TimeoutError(f"{model} did not answer within 30 s")
        h = _h("chat", model, prompt)
        if h % 3 == 1:
            return {"action": "tool", "tool": ("lookup_order", "check_stock", "shipping_eta")[h % 3],
                    "arg": f"{h % 90000 + 10000}", "model": model}
        return {"action": "answer", "text": f"answer-{h % 10**6:06d}", "model": model}

    def judge(self, prompt: str, reply: dict[str, Any]) -> dict[str, Any]:
        return {"accept": True, "score": _h("judge", prompt, reply.get("model")) % 100 / 100}


def routed_chat(ctx: Any, world: Any, prompt: str, event: Any) -> dict[str, Any]:
    """One chat turn: the first turn of a question is routed (route, candidates in fallback order, judge);
    a tool-result turn calls the chat model directly, as in the 0.3 sample."""
    if event.type != "ChatRequest":
        return _chat_with_retries(ctx, world, prompt, f"{_MODULE}.chat_model.chat")
    decision = ctx.durable_execute(f"route:{ROUTER}", "", lambda: world.route(prompt))
    reply: dict[str, Any] | None = None
    for model in decision["candidates"]:
        try:
            reply = ctx.durable_execute(f"chat:{ROUTER}:{model}", "",
                                        lambda m=model: world.candidate(m, prompt))
            break
        except Exception:  # noqa: BLE001 - a failed candidate (recorded FAILED) falls back to the next one
            continue
    if reply is None:
        raise RuntimeError(f"every candidate of {ROUTER} failed")
    ctx.durable_execute(f"judge:{ROUTER}", "", lambda: world.judge(prompt, reply))
    return reply


def _last_question(world: _RoutedWorld, source: list[tuple[str, str]], key: str) -> tuple[str, str]:
    """A last question for ``key`` whose routed chat turn falls back (the primary fails) and answers directly,
    so the restore of a checkpoint taken in its middle has that one action to resume."""
    prev = [q for k, q in source if k == key]
    for order in range(10000, 100000):
        q = f"where is my order {order}"
        prompt = f"user: {q}; context: {' | '.join((prev + [q])[-4:])}"      # as triage + chat build it
        if world.primary_fails(prompt) and world.candidate(CANDIDATES[1], prompt)["action"] == "answer":
            return key, q
    raise AssertionError("no question falls back")       # pragma: no cover - the range always has one


def _keys() -> list[str]:
    return [f"user-{n:04d}" for n in range(1, 15)] + ["vip_0007", "vip_0042"]


def _persisted_calls(step: Any) -> bool:
    from agent_inspect.executor import StepKind

    return step.kind is StepKind.PERSIST and (step.outcome or "").startswith("call results")


def production_v4_story(job_factory: Callable[..., Job]) -> tuple[Job, int]:
    """Run the 0.4+ production job (two attempts, one recovery under the upstream rule); returns the job and
    the mid-action checkpoint, whose restore the sample shows."""
    rng = random.Random(1175)
    source = interleaved_source(_keys(), rng)
    # every key's first question early in the stream, so each key has records before any restore (a K2
    # key's identity is a digest: a key the log never shows cannot be predicted from the log alone)
    first = {k: i for i, (k, _) in reversed(list(enumerate(source)))}
    source = [source[i] for i in sorted(first.values())] + \
        [x for i, x in enumerate(source) if i not in set(first.values())]
    world = _RoutedWorld()
    source.append(_last_question(world, source, "vip_0042"))
    job = job_factory(support_agent(world, answer=routed_chat), source)
    n = len(source)
    every = max(4, n // 8)

    def dies_at(count: int) -> Callable[[Any], bool]:
        seen = [0]

        def stop(step: Any) -> bool:
            seen[0] += _persisted_calls(step)
            return seen[0] >= count
        return stop

    job.run(stop=dies_at(int(n * 0.4) * 2), checkpoint_every=every,
            note="fresh start; dies mid-body (task manager lost)")
    last = [c.id for c in job.checkpoints if c.attempt == 1][-1]

    # at the last input, a checkpoint in the middle of its routed chat action: the primary failed, the
    # fallback's answer is persisted, the judge has not run; the job dies right after it
    from agent_inspect.executor import StepKind

    remaining = n - job.checkpoints[last - 1].source_position
    rounds, fell_back, taken = [0], [False], [False]

    def mid_action(step: Any) -> bool:
        if step.kind is StepKind.ROUND_COMPLETE and step.event_id is not None:
            rounds[0] += 1
        if step.function_id == f"chat:{ROUTER}:{CANDIDATES[1]}" and step.outcome == "execute":
            fell_back[0] = rounds[0] == remaining - 1
        elif fell_back[0] and _persisted_calls(step) and step.action == "chat":
            taken[0] = True
        return taken[0]

    job.run(restore=last, rule="original", checkpoint_every=every, checkpoint_when=mid_action,
            stop=lambda step: taken[0],
            note="restores the last checkpoint; at the last input a checkpoint is taken mid-action (routed chat: "
                 "the primary failed, the fallback answered, the judge has not run) and the job dies right after it")
    if not taken[0]:
        raise AssertionError("the last input's routed chat did not fall back: no mid-action checkpoint")
    mid = [c.id for c in job.checkpoints if c.attempt == 2][-1]
    return job, mid
