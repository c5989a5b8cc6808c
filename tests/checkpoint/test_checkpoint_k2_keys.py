"""A checkpoint names a key by its Flink key (its text); a K2 log by its digest: the plan over it matches them."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai
from agent_inspect.codec import string_key_digest

CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "production" / "checkpoints"


def test_a_checkpoints_plan_over_a_digest_keyed_log_keeps_the_checkpoints_state() -> None:
    chk = ai.checkpoint.read(CHECKPOINTS)
    v4 = ai.load(ai.samples.path("production_v4"))          # the same key texts, written as K2 (digest) keys
    plan = chk.replay_plan(v4)
    digest = string_key_digest("user-0009")
    assert plan.restored_seq[digest] == chk.keyed.message_seq["user-0009"]
    # its pending task, from the checkpoint's actionTasks (a plan may name a K2 key by its text)
    assert [ai.log.logged_key(p.key, set(v4.keys())) for p in plan.pending] == [digest]
    assert any("pending task from checkpoint 4's actionTasks" in n for n in plan.notes)
    assert any("restored seqNums from checkpoint" in n for n in plan.notes)
    keys = set(v4.keys())
    held = {n: v for k, v in chk.keyed.message_seq.items() if (n := ai.log.logged_key(k, keys)) is not None}
    assert len(held) == 12 and all(plan.restored_seq[n] == v for n, v in held.items())
    keyed = chk.keyed.for_keys(set(v4.keys()))
    assert set(keyed.message_seq) <= set(v4.keys()) and keyed.pending_tasks == (digest,)


def test_a_text_keyed_log_reads_the_checkpoint_as_before() -> None:
    chk = ai.checkpoint.read(CHECKPOINTS)
    log = ai.load(ai.samples.path("production"))
    keyed = chk.keyed.for_keys({"user-0009", "user-0001", "not-a-key"})
    assert set(keyed.message_seq) == {"user-0009", "user-0001"} and keyed.pending_tasks == ("user-0009",)
    assert len(chk.replay_plan(log).restored_seq) == 40
