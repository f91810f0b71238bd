"""Scenario files: the shipped ones load; malformed ones fail naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario import (
    DEFAULT_SCENARIOS_DIR,
    Offset,
    ScenarioError,
    load_scenario_file,
    load_scenarios,
    parse_offset,
    resolve_scenario,
)
from harness.tools.catalogue import TOOL_PARAMETERS
from harness.world.model_api import tokens_per_turn

SHIPPED = sorted(p.stem for p in DEFAULT_SCENARIOS_DIR.glob("*.yaml"))

GOOD = """\
name: {name}
description: test
pacing: {{ttft_ms: 10, tokens_per_s: 100}}
latency_ms: {{email: 50}}
turns:
  - text_tokens: 3
    tool_calls:
      - name: send_email
        arguments: {{to: a@example.com, subject: S, body: B}}
  - text_tokens: 5
offsets:
  - at:100ms
  - on:effect_received:email
"""


def test_shipped_scenarios_load():
    scenarios = load_scenarios()
    assert sorted(scenarios) == SHIPPED and len(SHIPPED) >= 4
    for name, sc in scenarios.items():
        assert sc.name == name and sc.source.endswith(f"{name}.yaml")
        assert sc.turns[-1].tool_calls == () and sc.offsets
        assert all(n > 0 for n in tokens_per_turn(sc))
        for call in (c for t in sc.turns for c in t.tool_calls):
            assert set(call.arguments) == set(sc.agent_tools.get(call.name) or TOOL_PARAMETERS[call.name])
        assert resolve_scenario(name).digest == sc.digest


def test_an_agent_tool_call_keeps_its_arguments_as_written_and_only_declared_agent_tools_are_called(tmp_path):
    """A coding CLI's own shell tool takes what its schema says (`yield_time_ms` a number); the harness's tools take
    strings. A call of a built-in tool the scenario does not declare is refused, naming where to declare it."""
    shell = GOOD.format(name="shell").replace(
        "latency_ms:", "agent_tools: {exec_command: [cmd, yield_time_ms]}\nlatency_ms:").replace(
        "  - text_tokens: 5", "  - tool_calls:\n      - name: exec_command\n"
        "        arguments: {cmd: python3 -m http.server, yield_time_ms: 1000}\n  - text_tokens: 5")
    path = tmp_path / "shell.yaml"
    path.write_text(shell)
    sc = load_scenario_file(path)
    assert sc.agent_tools == {"exec_command": ("cmd", "yield_time_ms")}
    assert [c.arguments for t in sc.turns for c in t.tool_calls] == [
        {"to": "a@example.com", "subject": "S", "body": "B"}, {"cmd": "python3 -m http.server", "yield_time_ms": 1000}]
    assert [c.name for c in sc.effect_calls] == ["send_email"]  # the shell is no side effect of the world's
    path.write_text(shell.replace("agent_tools: {exec_command: [cmd, yield_time_ms]}\n", ""))
    with pytest.raises(ScenarioError, match=r"turns\[1\].tool_calls\[0\].name: unknown tool 'exec_command'.*"
                                            "`agent_tools`"):
        load_scenario_file(path)


def test_good_file_loads(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(GOOD.format(name="tiny"))
    sc = load_scenario_file(path)
    assert sc.ttft_ms == 10 and sc.tokens_per_s == 100 and sc.latency_ms["email"] == 50
    assert sc.latency_ms["pr"] == 0 and sc.commit_on_disconnect is True
    assert [o.text for o in sc.offsets] == ["at:100ms", "on:effect_received:email"]
    assert sc.turn_for(0) == 0 and sc.turn_for(1) == 1 and sc.turn_for(5) == 2
    assert [c.name for c in sc.effect_calls] == ["send_email"]


BAD = {
    "bad_yaml": ("name: x\nturns: [\n", "not valid YAML"),
    "missing_turns": (GOOD.split("turns:")[0] + "offsets: []\n", "missing field 'turns'"),
    "renamed_turns": (GOOD.replace("turns:", "turnz:"), "unknown field 'turnz'"),
    "missing_offsets": (GOOD.split("offsets:")[0], "'offsets'"),
    "not_mapping": ("- just\n- a list\n", "mapping"),
    "wrong_type_tokens": (GOOD.replace("text_tokens: 5", "text_tokens: five"), "turns[1].text_tokens"),
    "negative_tokens": (GOOD.replace("text_tokens: 5", "text_tokens: -5"), "turns[1].text_tokens"),
    "wrong_type_turns": (GOOD.split("turns:")[0] + "turns: 3\noffsets: []\n", ".turns"),
    "unknown_tool": (GOOD.replace("name: send_email", "name: launch_rocket"), "tool_calls[0].name"),
    "wrong_arguments": (GOOD.replace("body: B", "bcc: B"), "tool_calls[0].arguments"),
    "missing_arguments": (GOOD.replace("        arguments: {{to: a@example.com, subject: S, body: B}}\n", ""),
                          "tool_calls[0]"),
    "bad_offset": (GOOD.replace("at:100ms", "at:soon"), "offsets[0]"),
    "bad_offset_kind": (GOOD.replace("on:effect_received:email", "on:effect_received:fax"), "offsets[1]"),
    "bad_latency": (GOOD.replace("{{email: 50}}", "{{fax: 50}}"), "latency_ms.fax"),
    "negative_latency": (GOOD.replace("{{email: 50}}", "{{email: -1}}"), "latency_ms.email"),
    "bad_pacing": (GOOD.replace("tokens_per_s: 100", "tokens_per_s: -1"), ".pacing.tokens_per_s"),
    "wrong_type_pacing": (GOOD.replace("tokens_per_s: 100", "tokens_per_s: fast"), ".pacing.tokens_per_s"),
    "list_pacing": (GOOD.replace("ttft_ms: 10", "ttft_ms: [10]"), ".pacing.ttft_ms"),
    "unknown_pacing": (GOOD.replace("tokens_per_s: 100", "tokens_per_sec: 100"), "tokens_per_sec"),
    "missing_name": (GOOD.replace("name: {name}\n", ""), "missing field 'name'"),
    "last_turn_calls": (GOOD.replace("  - text_tokens: 5\n", ""), "turns[0]"),
    "empty_turn": (GOOD.replace("text_tokens: 5", "tool_calls: []"), "turns[1]"),
    "unknown_field": (GOOD + "speed: 3\n", "speed"),
    "unknown_turn_field": (GOOD.replace("  - text_tokens: 5", "  - text_tokens: 5\n    words: 2"), "words"),
    "bad_commit_flag": (GOOD + "commit_on_disconnect: maybe\n", "commit_on_disconnect"),
    "bad_name": (GOOD.replace("name: {name}", "name: Bad-Name"), ".name"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_file_names_file_and_field(tmp_path, case):
    text, field = BAD[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text.format(name=case) if "{{" in text else text)  # GOOD-based texts are templates
    with pytest.raises(ScenarioError) as err:
        load_scenario_file(path)
    assert str(path) in str(err.value)
    assert field in str(err.value)


def test_name_must_match_file(tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text(GOOD.format(name="other"))
    with pytest.raises(ScenarioError, match="must match the file name") as err:
        load_scenario_file(path)
    assert f"{path}.name" in str(err.value)


def test_missing_file_and_empty_directory(tmp_path):
    with pytest.raises(ScenarioError) as err:
        load_scenario_file(tmp_path / "nope.yaml")
    assert str(tmp_path / "nope.yaml") in str(err.value)
    with pytest.raises(ScenarioError, match="no scenario files"):
        load_scenarios(tmp_path)


def test_directory_with_one_bad_file_names_it(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD.format(name="good"))
    (tmp_path / "worse.yaml").write_text(GOOD.format(name="worse").replace("at:100ms", "at:x"))
    with pytest.raises(ScenarioError) as err:
        load_scenarios(tmp_path)
    assert str(tmp_path / "worse.yaml") in str(err.value) and "offsets[0]" in str(err.value)


def test_unknown_scenario_name(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD.format(name="good"))
    with pytest.raises(ScenarioError, match="unknown scenario 'missing'.*good"):
        resolve_scenario("missing", tmp_path)


@pytest.mark.parametrize("text,event,effect,n", [
    ("on:token:7", "token", None, 7), ("on:llm_request:2", "llm_request", None, 2),
    ("on:effect_received:email", "effect_received", "email", 1),
    ("on:effect_committed:calendar:3", "effect_committed", "calendar", 3),
])
def test_parse_offset_events(text, event, effect, n):
    o = parse_offset(text)
    assert (o.event, o.effect, o.n, o.is_event, o.kind, o.text) == (event, effect, n, True, "event", text)
    assert o.matches(event, effect, n) and not o.matches(event, effect, n + 1)
    assert Offset.from_data(o.to_data()) == o  # as it travels to the world and to a spawned subject


@pytest.mark.parametrize("text", ["at:12ms", "at:0.5ms"])
def test_parse_offset_time(text):
    o = parse_offset(text)
    assert not o.is_event and o.kind == "time" and o.at_ms == float(text[3:-2])
    assert Offset.from_data(o.to_data()) == o


@pytest.mark.parametrize("data,field", [
    ("on:token:3", "expected an offset's data"),  # text is for parse_offset, at the edge
    ({"event": "token", "n": 3}, "expected an offset's data"),  # no text: rows could not name it
    ({"text": "x", "event": "token", "n": 3, "extra": 1}, "expected an offset's data"),
    ({"text": "x", "event": "tokens", "n": 3}, "where.event"),
    ({"text": "x", "event": "token", "n": 0}, "where.n"),
    ({"text": "x", "event": "token", "n": True}, "where.n"),
    ({"text": "x", "event": "effect_received", "effect": "fax", "n": 1}, "where.effect"),
    ({"text": "x", "event": "token", "effect": "email", "n": 1}, "where.effect"),
    ({"text": "x", "event": "token", "at_ms": 5, "n": 1}, "where.event"),
    ({"text": "x", "at_ms": -1}, "a time offset"),
    ({"text": "x", "at_ms": "5"}, "a time offset"),
    ({"text": "x", "at_ms": 5, "effect": "email"}, "a time offset"),
])
def test_offset_data_is_checked_as_a_scenario_is(data, field):
    with pytest.raises(ScenarioError, match=field):
        Offset.from_data(data, "where")


@pytest.mark.parametrize("text", ["on:token:0", "at:5s", "on:tokens:1", "on:effect_received:fax", ""])
def test_parse_offset_rejects(text):
    with pytest.raises(ScenarioError, match="where"):
        parse_offset(text, "where")


def test_digest_changes_with_content(tmp_path: Path):
    a, b = tmp_path / "a" / "s.yaml", tmp_path / "b" / "s.yaml"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text(GOOD.format(name="s"))
    b.write_text(GOOD.format(name="s").replace("text_tokens: 5", "text_tokens: 6"))
    assert load_scenario_file(a).digest != load_scenario_file(b).digest


def test_a_variant_names_a_scenario_that_exists(tmp_path):
    import shutil

    from harness.scenario import DEFAULT_SCENARIOS_DIR, ScenarioError

    for f in DEFAULT_SCENARIOS_DIR.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    text = (tmp_path / "q3_report_honours_disconnect.yaml").read_text()
    (tmp_path / "q3_report_honours_disconnect.yaml").write_text(text.replace("variant_of: q3_report",
                                                                             "variant_of: q4_report"))
    with pytest.raises(ScenarioError, match=r"q3_report_honours_disconnect.yaml.variant_of: 'q4_report' is not a "
                                            r"scenario here"):
        load_scenarios(tmp_path)
