"""State-key parsing and formatting (spec §2.1, §4.7)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent_inspect import KeyFormatError
from agent_inspect.codec import format_state_key, parse_state_key, resolve_state_keys

EV = "b6dc5e36-12ea-3bb2-8ca3-e0ea9865efcf"
ACT = "cd464c8a-2428-3f02-b0ac-787c88c69ef6"
ACT2 = "80908fa5-68c8-3df4-b9f1-b5765f3ee2c7"
DIGEST = "E7o9BwqaXQ7wLxweJnKSs2N4ilcHgVnTVUg5wKuAPhg="
FP = "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="


def test_spec_example_keys():
    k1 = parse_state_key(f"user-42_7_{EV}_{ACT}")
    assert (k1.format, k1.key_text, k1.seq, k1.event_uuid, k1.action_uuid, k1.key_group, k1.flags) == \
        ("K1", "user-42", 7, EV, ACT, None, ())
    k15 = parse_state_key(f"20_7_{EV}_{ACT}_user-42")
    assert (k15.format, k15.key_group, k15.seq, k15.key_text, k15.business_key) == ("K1.5", 20, 7, "user-42",
                                                                                    "user-42")
    k2 = parse_state_key(f"v2:20_7_{EV}_{ACT2}_{FP}_{DIGEST}")
    assert (k2.format, k2.key_group, k2.seq, k2.action_uuid, k2.serializer_fingerprint, k2.key_digest,
            k2.key_text, k2.business_key) == ("K2", 20, 7, ACT2, FP, DIGEST, None, DIGEST)


def test_key_text_with_separators_and_bytes_input():
    k = parse_state_key(f"order_1001_3_{EV}_{ACT}".encode())
    assert (k.format, k.key_text, k.seq) == ("K1", "order_1001", 3)
    assert "key-text-contains-separator" in k.flags and "prefix-collision-risk" in k.flags
    k = parse_state_key(f"tenant_user_3_{EV}_{ACT}")
    assert k.key_text == "tenant_user" and "prefix-collision-risk" not in k.flags
    k = parse_state_key(f"20_7_{EV}_{ACT}_a_b_c")
    assert (k.format, k.key_text) == ("K1.5", "a_b_c")
    k = parse_state_key(f"_7_{EV}_{ACT}")
    assert (k.format, k.key_text) == ("K1", "")


def test_k16_and_k0_and_draft():
    k = parse_state_key(f"20_7_{EV}_{ACT}_{DIGEST}")
    assert (k.format, k.key_digest, k.key_text) == ("K1.6", DIGEST, None)
    assert "k1.6-likely" in k.flags
    k = parse_state_key(f"user-42-{EV}-{ACT}")
    assert (k.format, k.key_text, k.seq) == ("K0", "user-42", None)
    draft = f"20_user-42_7_{EV}_{ACT}"
    assert parse_state_key(draft).format == "K1"
    k = parse_state_key(draft, prefer="K1.5-draft")
    assert (k.format, k.key_group, k.key_text, k.seq) == ("K1.5-draft", 20, "user-42", 7)


def test_non_v3_uuid_is_flagged():
    v4 = "5b0f6f1e-3c2a-4c1e-9a57-0d1f2b3c4d5e"
    assert "non-v3-uuid" in parse_state_key(f"k_1_{v4}_{ACT}").flags


@pytest.mark.parametrize(("key", "reason"), [
    ("garbage", "fewer than four"),
    (f"user_x_{EV}_{ACT}", "matches no layout"),
    (f"user_07_{EV}_{ACT}", "matches no layout"),                     # non-canonical integer
    (f"user_7_{EV.upper()}_{ACT}", "matches no layout"),              # uppercase UUID
    (f"v2:20_7_{EV}_{ACT}_{FP}", "expected 6"),
    (f"v2:20_7_{EV}_{ACT}_short_{DIGEST}", "base64"),
    (f"v2:x_7_{EV}_{ACT}_{FP}_{DIGEST}", "decimal"),
    (f"user_{2**63}_{EV}_{ACT}", "matches no layout"),                 # seq beyond a Java long
    (f"v2:{2**31}_7_{EV}_{ACT}_{FP}_{DIGEST}", "Java int"),           # key group beyond a Java int
])
def test_unparseable_keys_raise_with_reason(key, reason):
    with pytest.raises(KeyFormatError, match=reason):
        parse_state_key(key)


def test_largest_java_numbers_still_parse():
    assert parse_state_key(f"user_{2**63 - 1}_{EV}_{ACT}").seq == 2**63 - 1
    assert parse_state_key(f"{2**31 - 1}_0_{EV}_{ACT}_user").key_group == 2**31 - 1


def test_key_group_bound():
    with pytest.raises(KeyFormatError, match="outside"):
        parse_state_key(f"v2:200_7_{EV}_{ACT}_{FP}_{DIGEST}", max_parallelism=128)
    # a K1.5 layout with an out-of-range group is not K1.5; the key falls back to K1 when that fits
    with pytest.raises(KeyFormatError):
        parse_state_key(f"200_7_{EV}_{ACT}_user", max_parallelism=128)


def test_ambiguous_layout_resolved_by_partition_majority():
    ambiguous = f"1_2_{EV}_{ACT}_5_{EV}_{ACT2}"
    single = parse_state_key(ambiguous)
    assert "ambiguous-layout" in single.flags
    k1_keys = [f"user{i}_3_{EV}_{ACT}" for i in range(3)]
    k15_keys = [f"9_3_{EV}_{ACT}_user{i}" for i in range(3)]
    out = resolve_state_keys([*k1_keys, ambiguous, *k15_keys, ambiguous, None, "bad"],
                             [0, 0, 0, 0, 1, 1, 1, 1, 0, 0])
    assert out[3].format == "K1" and out[3].key_text == f"1_2_{EV}_{ACT}"
    assert out[7].format == "K1.5" and out[7].key_text == f"5_{EV}_{ACT2}"
    assert "ambiguous-layout" in out[3].flags and "ambiguous-layout" in out[7].flags
    assert out[8] is None and isinstance(out[9], KeyFormatError)
    assert out[:3] == [parse_state_key(k) for k in k1_keys]


def test_unknown_prefer_is_rejected():
    with pytest.raises(KeyFormatError, match="unknown key format"):
        parse_state_key(f"user-42_7_{EV}_{ACT}", prefer="K9")


uuids = st.uuids(version=3).map(str)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(deadline=None, max_examples=200)
@given(fmt=st.sampled_from(["K0", "K1", "K1.5", "K1.6", "K2"]), seq=st.integers(0, 2**63 - 1),
       ev=uuids, act=uuids, text=texts, group=st.integers(0, 32767),
       digest=st.binary(min_size=32, max_size=32), fp=st.binary(min_size=32, max_size=32))
def test_format_then_parse_round_trips(fmt, seq, ev, act, text, group, digest, fp):
    import base64

    d64, f64 = base64.b64encode(digest).decode(), base64.b64encode(fp).decode()
    if fmt == "K1.5":
        assume(text and not text.startswith("v2:"))
    if fmt == "K0":
        assume("_" not in text)
    if fmt == "K1":
        assume(not text.startswith("v2:"))
    raw = format_state_key(fmt, seq=seq, event_uuid=ev, action_uuid=act, key_text=text, key_group=group,
                           key_digest=d64, serializer_fingerprint=f64)
    parsed = parse_state_key(raw)
    assert resolve_state_keys([raw.encode()]) == [parsed]  # the batch fast path agrees with the parser
    assert parsed.raw == raw
    assert (parsed.format, parsed.event_uuid, parsed.action_uuid) == (fmt, ev, act)
    if fmt != "K0":
        assert parsed.seq == seq
    if fmt in ("K0", "K1", "K1.5"):
        assert parsed.key_text == text
    else:
        assert parsed.key_digest == d64 and parsed.key_group == group
    assert format_state_key(parsed.format, seq=parsed.seq, event_uuid=parsed.event_uuid,
                            action_uuid=parsed.action_uuid, key_text=parsed.key_text,
                            key_group=parsed.key_group, key_digest=parsed.key_digest,
                            serializer_fingerprint=parsed.serializer_fingerprint) == raw


def test_format_needs_its_fields():
    with pytest.raises(KeyFormatError, match="needs key_group"):
        format_state_key("K1.5", seq=1, event_uuid=EV, action_uuid=ACT, key_text="x")
    with pytest.raises(KeyFormatError, match="unknown key format"):
        format_state_key("K7", seq=1, event_uuid=EV, action_uuid=ACT)


def test_prefix_collision_risk_is_a_k1_concern():
    k1 = parse_state_key(f"a_5_3_{EV}_{ACT}")
    assert k1.key_text == "a_5" and "prefix-collision-risk" in k1.flags
    k15 = parse_state_key(f"20_3_{EV}_{ACT}_a_5")
    assert k15.key_text == "a_5" and k15.flags == ("key-text-contains-separator",)
