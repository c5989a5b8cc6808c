"""Realistic action-state records for the source tests, built with the toolkit's own codec."""

from __future__ import annotations

import random
import uuid

from agent_inspect.codec import ActionState, Event, encode_action_state, event_uuid, format_state_key


def make_records(n_keys: int = 6, rounds: int = 3, *, seed: int = 7, prefix: str = "user",
                 key_format: str = "K1") -> list[tuple[str, bytes]]:
    """(state key, ActionState JSON) pairs: per business key and round an input-triggered action
    written incomplete then complete, and a child action, like upstream's store does."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    for k in range(n_keys):
        key_text = f"{prefix}-{k}"
        for seq in range(rounds):
            attrs = {"input": f"question {k}/{seq}", "model": "qwen3", "temperature": 0.2,
                     "tags": ["a", "b"], "n": rng.randint(0, 1000)}
            root = Event.new("_input_event", attrs, id=str(uuid.UUID(int=rng.getrandbits(128), version=4)))
            action = str(uuid.UUID(int=rng.getrandbits(128), version=3))
            key = format_state_key(key_format, seq=seq, event_uuid=event_uuid(root.attributes),
                                   action_uuid=action, key_text=key_text,
                                   **({"key_group": 0} if key_format == "K1.5" else {}))
            out.append((key, encode_action_state(ActionState(task_event=root, completed=False))))
            child = Event.new("chat_request", {"prompt": "x" * rng.randint(10, 200)}, upstream_event_id=root.id,
                              upstream_action_name="plan")
            out.append((key, encode_action_state(ActionState(task_event=root, output_events=(child,),
                                                             completed=True))))
    return out
