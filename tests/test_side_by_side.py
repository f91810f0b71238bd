"""The same framework in two languages, side by side: the mode pairing is data (data/counterparts.yaml), checked on
load; the cells are the tables' cells over the same rows, and what differs is the capability table's verdicts."""

from __future__ import annotations

import json
import re

import pytest

from harness.cli import main
from harness.frameworks import discover
from harness.results.capability import capability_rows
from harness.results.cells import frame
from harness.results.counterparts import (
    CounterpartError,
    Pairing,
    differs,
    load_pairings,
    side_by_side,
)
from harness.results.report import write_report
from harness.results.rows import SCHEMA_VERSION

PY, JS = "langgraph", "langgraph-js"
PAIRING = Pairing(JS, PY, {"abort_signal": "cancel", "stream_cancel": "cancel", "sigterm": ""},
                  {"abort_signal": "abort the signal", "stream_cancel": "cancel the stream",
                   "sigterm": "SIGTERM, drain"},
                  {"cancel": "cancel the task", "break_sync": "break the sync loop"})


def row(n: int, adapter: str, mode: str, offset: str = "on:effect_received:email", status: str = "ok",
        tool_style: str = "async", **measured) -> dict:
    return {"schema_version": SCHEMA_VERSION, "trial_id": f"{adapter}-{mode}-{offset}-{tool_style}-{n}",
            "run_id": "r1", "adapter": adapter, "framework": adapter, "mode": mode, "mitigation": "none",
            "scenario": "q3_report", "scenario_hash": "h1", "offset": offset, "offset_kind": "event",
            "tool_style": tool_style, "rep": n, "status": status, "reason": None if status == "ok" else "'stop' hung",
            "failed_step": None if status == "ok" else "stop", "trigger_precise": True, "versions": {adapter: "1.0"},
            "python": "3.11", "platform": "linux", "git_sha": "abc1234", "tokens_after_stop": 0,
            "llm_requests_after_stop": 0, "effects_new": 0, "effects_in_flight": 0, "effects_after_stop": 0,
            "effects_leaked": 0, "effects_compensated": 0, "lie_ms": 0.0, "threads_left": 0, "orphans": 0,
            "resume_ok": True, "resume_error": None, "resume_llm_replays": 0, "resume_duplicate_effects": 0,
            **measured}


def rows() -> list[dict]:
    """Python's cancel leaks the email in flight and repeats it on resume; the JS abort leaks it too but resumes
    without a repeat, and once hangs; mid final answer Python bills 41 tokens, JS 0 and 2. The Python rows of a
    tool style JS does not run (sync) and of another mitigation are not read."""
    leak = {"effects_after_stop": 1, "effects_leaked": 1, "effects_in_flight": 1}
    return [
        *(row(n, PY, "cancel", lie_ms=140.0 + 10 * n, resume_duplicate_effects=1, **leak) for n in (1, 2)),
        row(3, PY, "cancel", tool_style="sync", lie_ms=999.0, resume_duplicate_effects=5, **leak),
        {**row(4, PY, "cancel", lie_ms=999.0, **leak), "mitigation": "saga"},
        *(row(n, PY, "cancel", "on:token:40", tokens_after_stop=41, lie_ms=100.0) for n in (1, 2)),
        row(1, PY, "break_sync", tool_style="sync", llm_requests_after_stop=1),
        *(row(n, JS, "abort_signal", lie_ms=146.0, **leak) for n in (1, 2)),
        row(3, JS, "abort_signal", status="hung", resume_ok=None, resume_llm_replays=None,
            resume_duplicate_effects=None, **leak),
        row(1, JS, "abort_signal", "on:token:40", tokens_after_stop=0),
        row(2, JS, "abort_signal", "on:token:40", tokens_after_stop=2, resume_ok=False),
        row(1, JS, "sigterm"),
    ]


def test_the_repositorys_pairing_covers_every_mode_of_both_js_adapters():
    pairs = {p.adapter: (p.counterpart, p.modes, p.unpaired) for p in load_pairings()}
    assert pairs == {
        "langgraph-js": ("langgraph", {"abort_signal": "cancel", "stream_cancel": "cancel", "drain": "drain",
                                       "breakpoint": "breakpoint", "sigterm": "drain"}, ["break_sync"]),
        "openai-agents-js": ("openai-agents", {
            "abort": "task_cancel", "abort_stream": "cancel_immediate", "reader_cancel": "cancel_immediate",
            "break": "break", "approval": "approval", "abort_stream+state": "cancel_immediate+state",
            "approval+state": "approval+state"}, ["cancel_after_turn"]),
    }


@pytest.mark.parametrize(("text", "error"), [
    ("- langgraph-js\n", r"counterparts.yaml: expected a mapping of adapter"),
    ("langgraph: {cancel: cancel}\n", r"counterparts.yaml: langgraph: no framework folder of that name names a "
                                      r"counterpart"),
    ("langgraph-js: [cancel]\n", r"counterparts.yaml: langgraph-js: expected a mapping of its mode"),
    ("langgraph-js: {abort_signal: cancel, stream_cancel: cancel, drain: drain, breakpoint: breakpoint, "
     "sigterm: drain, pause: drain}\n", r"counterparts.yaml: langgraph-js: 'pause' is not a stop mode of langgraph-js"),
    ("langgraph-js: {abort_signal: abort, stream_cancel: cancel, drain: drain, breakpoint: breakpoint, "
     "sigterm: drain}\n", r"counterparts.yaml: langgraph-js: abort_signal: 'abort' is not a stop mode of langgraph "),
    ("langgraph-js: {abort_signal: cancel, stream_cancel: cancel, drain: drain}\n",
     r"counterparts.yaml: langgraph-js: breakpoint, sigterm not listed"),
    ("langgraph-js: {abort_signal: cancel, stream_cancel: cancel, drain: drain, breakpoint: ~, sigterm: ~}\n",
     r"counterparts.yaml: openai-agents-js names a counterpart in its framework.toml but has no pairing"),
    ("langgraph-js: {abort_signal: [\n", r"counterparts.yaml: not valid YAML"),
])
def test_a_bad_pairing_is_refused_naming_the_file_the_adapter_and_the_mode(tmp_path, text, error):
    path = tmp_path / "counterparts.yaml"
    path.write_text(text)
    with pytest.raises(CounterpartError, match=error):
        load_pairings(path, discover())


def test_a_bad_pairing_stops_the_report_with_exit_2_before_it_touches_the_results(tmp_path, monkeypatch, capsys):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()))
    (tmp_path / "README.md").write_text("the last report\n")
    bad = tmp_path / "counterparts.yaml"
    bad.write_text("langgraph-js: {abort_signal: abort}\n")
    monkeypatch.setattr("harness.results.counterparts.PAIRINGS", bad)
    assert main(["report", str(tmp_path)]) == 2
    assert "counterparts.yaml: langgraph-js: abort_signal: 'abort' is not a stop mode of langgraph" in \
        capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == "the last report\n" and not (tmp_path / "site").exists()


def test_verdicts_differ_by_their_words_not_their_counts():
    df = frame(rows())
    caps = capability_rows(df)
    assert caps[(PY, "cancel")]["can abort"].word == "yes" and caps[(JS, "abort_signal")]["can abort"].word == "no"
    assert differs(caps, (PY, "cancel"), (PY, "cancel")) == []


def test_each_button_beside_its_counterpart_with_the_tables_cells_at_each_moment():
    df = frame(rows())
    caps = capability_rows(df)
    assert differs(caps, (PY, "cancel"), (JS, "abort_signal")) == ["can abort", "state kept", "can resume",
                                                                    "repeats effect"]
    [pair] = side_by_side(df, caps, [PAIRING])
    assert pair["tool_styles"] == ["async"]  # JS runs no sync tools: Python's sync row is left out
    assert pair["buttons"] == [
        {"mode": "abort_signal", "primitive": "abort the signal", "counterpart_mode": "cancel",
         "counterpart_primitive": "cancel the task",
         "differs": ["can abort", "state kept", "can resume", "repeats effect"], "measured": True,
         "counterpart_measured": True, "verdicts": {"can abort": ("yes", "no (1/5: 1 hung in stop); hangs (1/5)"),
                      "state kept": ("yes", "partly (3/4)"), "can resume": ("yes", "partly (3/4)"),
                      "repeats effect": ("yes (3/5)", "no")}},
        {"mode": "stream_cancel", "primitive": "cancel the stream", "counterpart_mode": "cancel",
         "counterpart_primitive": "cancel the task", "differs": [], "measured": False, "counterpart_measured": True,
         "verdicts": {}},
        {"mode": "sigterm", "primitive": "SIGTERM, drain", "counterpart_mode": "", "counterpart_primitive": "",
         "differs": [], "measured": True, "counterpart_measured": False, "verdicts": {}}]
    assert pair["unpaired"] == [{"mode": "break_sync", "primitive": "break the sync loop", "measured": True}]
    email, answer = pair["moments"]
    assert (email["name"], email["offset"], answer["name"], answer["offset"]) == (
        "email in flight", "on:effect_received:email", "mid final answer", "on:token:40")
    cells = {(line["adapter"], line["mode"]): line["cells"] for line in email["lines"]}
    assert list(cells) == [(PY, "cancel"), (JS, "abort_signal"), (JS, "stream_cancel"), (JS, "sigterm"),
                           (PY, "break_sync")]
    assert cells[(PY, "cancel")] == {"trials": "2 (2 ok)", "tokens_after_stop": "0", "llm_requests_after_stop": "0",
                                     "effects_leaked": "1", "lie_ms": "155 (150..160)", "orphans": "0",
                                     "resume_duplicate_effects": "1", "resume_ok": "2/2"}
    # the trial that hung in stop: counted in trials, never as a zero in a median; it never got to a resume
    assert cells[(JS, "abort_signal")] == {"trials": "3 (2 ok)", "tokens_after_stop": "0",
                                           "llm_requests_after_stop": "0", "effects_leaked": "1", "lie_ms": "146",
                                           "orphans": "0", "resume_duplicate_effects": "0", "resume_ok": "2/2"}
    assert cells[(JS, "sigterm")]["trials"] == "1 (1 ok)"
    assert cells[(PY, "break_sync")] == {"trials": "-", **dict.fromkeys(  # its only trial ran sync tools
        ("tokens_after_stop", "llm_requests_after_stop", "effects_leaked", "lie_ms", "orphans",
         "resume_duplicate_effects", "resume_ok"), "-")}
    cells = {(line["adapter"], line["mode"]): line["cells"] for line in answer["lines"]}
    assert cells[(PY, "cancel")]["tokens_after_stop"] == "41"
    assert cells[(JS, "abort_signal")]["tokens_after_stop"] == "1 (0..2)"
    assert cells[(JS, "abort_signal")]["resume_ok"] == "1/2"
    assert pair["differs_line"] == (
        "cancel vs abort_signal: can abort: yes vs no (1/5: 1 hung in stop); hangs (1/5); state kept: yes vs partly "
        "(3/4); can resume: yes vs partly (3/4); repeats effect: yes (3/5) vs no. cancel vs stream_cancel: not "
        "measured on both sides. sigterm has no langgraph counterpart. break_sync has no langgraph-js counterpart.")


def test_a_pair_with_rows_on_one_side_only_is_left_out():
    df = frame([r for r in rows() if r["adapter"] == PY])
    assert side_by_side(df, capability_rows(df), [PAIRING]) == []


def test_the_report_has_a_side_by_side_page_linked_from_the_index_and_a_readme_section(tmp_path, monkeypatch):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()))
    monkeypatch.setattr("harness.results.findings.load_upstream", lambda: [])
    monkeypatch.setattr("harness.results.counterparts.load_pairings", lambda: [PAIRING])
    write_report(tmp_path, tmp_path)
    page = (tmp_path / "site" / "side-by-side.html").read_text()
    assert 'href="buttons/langgraph-js--abort_signal.html"' in page and "abort the signal" in page
    assert "<code>stream_cancel</code> <small>(not measured)</small>" in page  # no link to a page that is not there
    assert "buttons/langgraph-js--stream_cancel.html" not in page
    assert re.search(r"<td>langgraph-js</td><td><code>abort_signal</code></td><td>3 \(2 ok\)</td><td>0</td><td>0</td>"
                     r"<td>1</td><td>146</td><td>0</td><td>2/2</td><td>0</td>", page)
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="side-by-side.html#langgraph-js"' in index and "sigterm has no langgraph counterpart" in index
    readme = (tmp_path / "README.md").read_text()
    section = readme[readme.index("## Side by side"):]
    section = section[:section.index("\n## ", 1)]
    assert "### langgraph and langgraph-js" in section
    assert re.search(r"\| langgraph-js \| abort_signal +\| 2 \(2 ok\) +\| 1 \(0\.\.2\)", section)
