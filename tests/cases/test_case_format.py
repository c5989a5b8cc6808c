"""The case-file format: event and outcome notation, fields, variants, errors (docs/reference/cases.md)."""

from __future__ import annotations

import re
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect import CaseFileError
from agent_inspect.cases._format import parse_case
from agent_inspect.cases._notation import event_label, parse_event, parse_expectation

MINIMAL = """
id = "X01"
replay = ["k:In(A)"]
log = [{ att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" }]
[agent]
actions = [{ name = "IA", triggers = ["_input_event"] }]
[expect]
fixed = "A.IA=REUSE"
"""


def parse(text: str):
    return parse_case(tomllib.loads(text), path="<test>")


@pytest.mark.parametrize(("text", "etype", "attrs", "label"), [
    ("In(A)#a1", "_input_event", {"input": "A"}, "a1"),
    ("W(a)", "WorkEvent", {"x": "a"}, None),
    ("W{}#2", "WorkEvent", {}, "2"),
    ("Out(L-result)", "_output_event", {"output": "L-result"}, None),
    ("Begin(m0)#g1", "_agent_run_begin_event", {"memory": "m0"}, "g1"),
    ("Ev(Custom,{\"a\": [1, 2.5]})#e", "Custom", {"a": [1, 2.5]}, "e"),
    ("Sub(s0,s0-1,_input_event)#b1", "InternalSubagentCallEvent",
     {"targetScope": "child", "sessionId": "s0", "callId": "s0-1", "delegateType": "_input_event",
      "delegateAttributes": {}}, "b1"),
    ("Sub(s0,s0-1,_output_event,{\"output\":\"ok\"},reviewer)", "InternalSubagentCallEvent",
     {"targetScope": "reviewer", "sessionId": "s0", "callId": "s0-1", "delegateType": "_output_event",
      "delegateAttributes": {"output": "ok"}}, None),
])
def test_event_notation(text, etype, attrs, label):
    ev = parse_event(text)
    assert (ev.type, dict(ev.attributes), ev.id_label) == (etype, attrs, label)


def test_event_table_form():
    ev = parse_event({"type": "T", "attributes": {"k": 1}, "id": "#x"})
    assert (ev.type, ev.attributes, ev.id_label) == ("T", {"k": 1}, "x")


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(["In", "W", "Out", "Begin", "CE"]),
       st.text(alphabet=st.characters(blacklist_characters="()#", blacklist_categories=("Cs", "Cc")), min_size=1,
               max_size=12))
def test_event_label_round_trips(short, value):
    ev = parse_event(f"{short}({value})")
    assert ev.attributes and list(ev.attributes.values()) == [value]
    again = parse_event(event_label(ev.type, ev.attributes))
    assert (again.type, dict(again.attributes)) == (ev.type, dict(ev.attributes))


def test_outcome_notation():
    exp = parse_expectation("original", "k:A.IA=REUSE[evict k>5] A.WA#w1=REUSE B.WA=RESUME ✗stale "
                                        "CA=NOT-DISPATCHED X.IA=RERUN[invalidate k>=5][evict *>6]")
    items = exp.items
    assert [i.label for i in items] == ["k:A.IA", "A.WA#w1", "B.WA", "CA", "X.IA"]
    assert items[0].ops[0].kind == "evict" and items[0].ops[0].key == "k" and items[0].ops[0].bound == 5
    assert items[2].stale and not items[1].stale
    assert [(o.kind, o.key, o.bound) for o in items[4].ops] == [("invalidate", "k", 5), ("evict", None, 6)]
    assert not exp.crash
    assert parse_expectation("original", "A.IA=FAIL ✗crash").crash
    # the rendering parses back to the same items
    again = parse_expectation("original", " ".join(str(i) for i in items))
    assert again.items == items


@pytest.mark.parametrize("bad", ["A.IA=MAYBE", "✗stale A.IA=REUSE", "A.IA=REUSE[evict k>=5]",
                                 "A.IA=REUSE[invalidate k>5]", "=REUSE"])
def test_bad_outcomes_are_case_file_errors(bad):
    with pytest.raises(CaseFileError):
        parse_expectation("fixed", bad)


def test_minimal_case_defaults():
    (case,) = parse(MINIMAL)
    assert case.id == "X01" and case.setup.key_format == "K1.5" and case.setup.source == "kafka"
    assert case.keys["k"].restored_seq == 4 and case.keys["k"].text == "k"
    assert case.rules == ("fixed",)
    assert case.log[0].outputs == () and case.log[0].stale is None


@pytest.mark.parametrize(("patch", "message"), [
    ("typo = 1\n", "unknown field typo"),
    ('log = [{ key = "k", seq = 5, action = "IA", event = "In(A)", status = "X" }]\n', "status 'X'"),
    ('log = [{ key = "k", seq = 5, action = "NOPE", event = "In(A)", status = "C" }]\n', "does not declare"),
    ('log = [{ key = "k", action = "IA", event = "In(A)", status = "C" }]\n', "missing 'seq'"),
    ('log = [{ key = "k", seq = 5, action = "IA", event = "Zz(A)", status = "C" }]\n', "unknown event shorthand"),
    ('replay = ["In(A)"]\n', "key:Event"),
])
def test_malformed_fields_name_the_problem(patch, message):
    text = MINIMAL.replace('replay = ["k:In(A)"]\n', "").replace(
        'log = [{ att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" }]\n', "")
    if not patch.startswith(("log", "replay")):
        text = 'replay = ["k:In(A)"]\n' + text
    with pytest.raises(CaseFileError, match=re.escape(message)) as info:
        parse(patch + text)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("top", "message"), [
    ('setup = "x"\n', "setup is text ('x'), not a table"),
    ("log = 3\n", "log is a number (3), not an array"),
    ('log = ["REUSE"]\n', "log[1] is text ('REUSE'), not a table"),
    ("keys = { k = 1 }\n", "keys.k is a number (1), not a table"),
    ("expect = { fixed = 1 }\n", "expect.fixed is a number (1), not text"),
    ("variants = [true]\n", "variants[1] is a boolean (True), not a table"),
    ('variants = [{ name = "v", setup = [1] }]\n', "variants[1].setup is an array, not a table"),
    ("agent = [1]\n", "agent is an array, not a table"),
    ('agent = { actions = "IA" }\n', "agent.actions is text ('IA'), not an array"),
    ("agent = { on = { IA = { A = 1 } } }\n", "agent.on.IA.A is a number (1), not an array"),
    ("call_case = { body = {} }\n", "call_case.body is a table, not an array"),
    ('log = [{ key = "k", seq = "five", action = "IA", event = "In(A)", status = "C" }]\n', "a value of the wrong kind"),
])
def test_a_value_of_the_wrong_kind_is_one_line_naming_its_place(top, message):
    """A number where a table belongs (``setup = 1``) or text where an array does was an AttributeError or TypeError
    traceback from ``cases run`` (a mutation fuzz of the bundled cases found 70 such files in 600)."""
    body = MINIMAL.replace("[agent]\n", "").replace('actions = [{ name = "IA", triggers = ["_input_event"] }]\n', "") \
        .replace("[expect]\n", "").replace('fixed = "A.IA=REUSE"\n', "").replace('replay = ["k:In(A)"]\n', "")
    name = top.split(" =", 1)[0]
    if name == "log":
        body = body.replace('log = [{ att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" }]\n', "")
    with pytest.raises(CaseFileError, match=re.escape(message)) as info:
        parse(body.replace('id = "X01"\n', 'id = "X01"\n' + top))
    assert "\n" not in str(info.value) and str(info.value).startswith("<test> (X01): ")


def test_setup_values_are_checked():
    with pytest.raises(CaseFileError, match="key_format"):
        parse(MINIMAL + '[setup]\nkey_format = "K9"\n')
    with pytest.raises(CaseFileError, match="source"):
        parse(MINIMAL + '[setup]\nsource = "redis"\n')


def test_variants_inherit_and_override():
    text = MINIMAL + """
[[variants]]
name = "k2"
setup = { key_format = "K2" }
expect = { original = "A.IA=REUSE" }
"""
    base, variant = parse(text)
    assert variant.id == "X01/k2" and variant.variant == "k2"
    assert variant.setup.key_format == "K2" and base.setup.key_format == "K1.5"
    assert set(variant.rules) == {"fixed", "original"} and base.rules == ("fixed",)
    with pytest.raises(CaseFileError, match="name"):
        parse(MINIMAL + "[[variants]]\nsetup = {}\n")


def test_stale_marks_and_calls():
    text = MINIMAL.replace('status = "C" }]', 'status = "P", calls = ["fn/ab SUCCEEDED", { fn = "chat", '
                                              'status = "FAILED", exception = { java_error = "E" } }], '
                           'stale = { keys = ["L"], events = ["#2"] } }]')
    (case,) = parse(text)
    line = case.log[0]
    assert [(c.function_id, c.args_digest, c.status) for c in line.calls] == [("fn", "ab", "SUCCEEDED"),
                                                                               ("chat", "", "FAILED")]
    assert line.stale.applies("L", None) and line.stale.applies("k", "2") and not line.stale.applies("k", "1")


def test_call_case_needs_one_expectation_per_call():
    text = """
id = "DX"
[call_case]
record = ["f/d SUCCEEDED"]
body = [{ call = "f", args = "d" }, { call = "g" }]
expect = [{ outcome = "hit", index = 0 }]
"""
    with pytest.raises(CaseFileError, match="one expect entry per body call"):
        parse(text)


@pytest.mark.parametrize("case_id", ["N04", "N05", "N07", "N09", "G01", "G05", "G09", "P02", "S01", "S03", "S05", "S06"])
def test_agent_inferred_from_the_log(case_id):
    from pathlib import Path

    from agent_inspect.cases import run_case

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "cases" / f"{case_id}.toml").read_text())
    declared = data.pop("agent")["actions"]
    for case in parse_case(data, path=case_id):
        assert {a.name for a in case.actions} == {a["name"] for a in declared}
        for rule in case.rules:
            result = run_case(case, rule)
            assert result.passed, (case.id, rule, result.mismatches)


TOMB_CASE = MINIMAL.replace(
    'log = [{ att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" }]',
    'log = [{ att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" },\n'
    '       { att = 1, key = "k", seq = 5, action = "IA", event = "In(A)", status = "TOMB" }]')


@pytest.mark.parametrize(("setup", "message"), [
    ("", "tombstones are off; set [setup] tombstones = true"),
    ('[setup]\ntombstones = false\n', "tombstones are off"),
    ('[setup]\ntombstones = true\nsource = "fluss"\n', "Fluss writes no tombstones"),
    ('[setup]\nsource = "fluss"\n', "log line 2 is a TOMB"),
])
def test_tombstone_lines_need_kafka_with_tombstones_on(setup, message):
    with pytest.raises(CaseFileError, match=re.escape(message)) as info:
        parse(TOMB_CASE + setup)
    assert "\n" not in str(info.value)


def test_tombstone_lines_are_checked_per_variant():
    _, kafka = parse(TOMB_CASE + '[setup]\ntombstones = true\n[[variants]]\nname = "k2"\n'
                                    'setup = { key_format = "K2" }\n')
    assert kafka.setup.tombstones and kafka.log[1].status == "TOMB"
    with pytest.raises(CaseFileError, match=r"variant fluss.*Fluss writes no tombstones"):
        parse(TOMB_CASE + '[setup]\ntombstones = true\n[[variants]]\nname = "fluss"\nsetup = { source = "fluss" }\n')


def test_replay_agent_is_the_new_code_and_the_log_keeps_the_old_uuids():
    from agent_inspect import codec
    from agent_inspect.cases import build_case, run_case

    text = MINIMAL.replace('[expect]\nfixed = "A.IA=REUSE"', """
[replay_agent]
actions = [{ name = "IA", triggers = ["_input_event"], module = "v2" }]
[setup]
key_format = "K1"
[expect]
fixed = "A.IA=RERUN"
[[variants]]
name = "k2"
setup = { key_format = "K2" }
expect = { fixed = "A.IA=REUSE" }
[[variants]]
name = "same-code"
replay_agent = { actions = [{ name = "IA", triggers = ["_input_event"] }] }
expect = { fixed = "A.IA=REUSE" }
""")
    cases = parse(text)
    assert [c.replay_agent.actions[0].module for c in cases] == ["v2", "v2", "case_agent"]
    built = build_case(cases[0])
    key = codec.parse_state_key(built.log.records.loc[0, "state_key"])
    assert key.action_uuid == codec.python_action_uuid("IA", "case_agent", "CaseAgent.IA", ["_input_event"])
    assert built.agent.action("IA").module == "v2"
    for case in cases:
        assert run_case(case, "fixed").passed, case.id
    with pytest.raises(CaseFileError, match="replay_agent"):
        parse(MINIMAL + "[replay_agent]\nactions = []\n")
    with pytest.raises(CaseFileError, match="unknown field"):
        parse(MINIMAL + '[replay_agent]\nactions = [{ name = "IA", triggers = ["_input_event"], modul = "x" }]\n')


JAVA_PENDING = """
id = "DJ"
[call_case]
producer = "java"
record = [{ fn = "post", status = "PENDING" }]
body = [{ call = "post" }]
"""


def test_java_hit_on_a_null_result_throws():
    from agent_inspect.cases import run_case

    (ok,) = parse(JAVA_PENDING + 'expect = [{ outcome = "hit", index = 0, throws = "NullPointerException" }]\n')
    result = run_case(ok)
    assert result.passed and result.predicted == ("post@0=hit→java.lang.NullPointerException",)
    # a plain hit expectation misses the failure, and Python returns None instead
    (silent,) = parse(JAVA_PENDING + 'expect = [{ outcome = "hit", index = 0 }]\n')
    assert not run_case(silent).passed
    assert "throws java.lang.NullPointerException" in run_case(silent).mismatches[0]
    (python,) = parse(JAVA_PENDING.replace('"java"', '"python"') + 'expect = [{ outcome = "hit", index = 0 }]\n')
    assert run_case(python).passed
    with pytest.raises(CaseFileError, match="'throws' is for a Java hit"):
        parse(JAVA_PENDING.replace('"java"', '"python"')
              + 'expect = [{ outcome = "hit", index = 0, throws = "NullPointerException" }]\n')
    with pytest.raises(CaseFileError, match="unknown field"):
        parse(JAVA_PENDING + 'expect = [{ outcome = "hit", index = 0, trows = "x" }]\n')
