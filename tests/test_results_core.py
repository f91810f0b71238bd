"""One results core: the trial cell and the row filters defined once (harness/results/selection.py), each
field's format and better direction declared by the schema, a report's capability rows computed once, and the
step a trial went wrong in read from its row."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from harness.results import capability, schema
from harness.results.capability import capability_row
from harness.results.report import write_report
from tests.test_compare import row
from tests.test_history import PROVENANCE
from tests.test_known_verdicts import row as verdict_row

RESULTS = Path(__file__).resolve().parents[1] / "harness" / "results"


def test_a_field_declares_how_its_values_read_and_which_way_is_better():
    lie, tokens, trigger = (schema.field(n) for n in ("lie_ms", "tokens_after_stop", "trigger_delay_ms"))
    # one trial's value: to the field's digits below 100, every digit above; `-` when not measured
    assert [lie.text(v) for v in (5.04, 150.125, 3.0, None, float("nan"))] == ["5.0", "150.125", "3", "-", "-"]
    assert (tokens.text(12), tokens.text(12.5), schema.field("resume_ok").text(False)) == ("12", "12.5", "no")
    # a summary: every digit of the median of the rounded values, the bounds when the rows disagree
    assert (lie.median_text(1.25, 1.2, 1.3), lie.median_text(2.0, 2.0, 2.0)) == ("1.25 (1.2..1.3)", "2")
    assert (trigger.number(1.234), trigger.number(None)) == ("1.23", "-")  # its spec: 0.01 ms
    # better first, an unmeasured value last, whichever the direction
    assert sorted([3, None, 1], key=tokens.rank) == [1, 3, None]
    assert sorted([False, None, True], key=schema.field("resume_ok").rank) == [True, False, None]
    with pytest.raises(ValueError, match="no better direction"):
        schema.field("tokens_total").rank(1)
    # every field a table shows by its label is a score with a direction
    assert [f.name for f in schema.FIELDS.values() if f.label and f.better == "none"] == []


def test_the_trial_cell_and_the_row_filters_are_defined_only_in_selection():
    """No other results module reads `offset_kind`, tells ok or skipped rows apart by their status, or spells
    out a trial cell's fields."""
    own = {"selection.py", "schema.py", "metrics.py"}  # the definitions, and the writer of `status`
    found = []
    for path in sorted(RESULTS.glob("*.py")):
        text = path.read_text()
        if path.name in own:
            continue
        found += [f"{path.name}: offset_kind" for _ in [0] if "offset_kind" in text]
        found += [f"{path.name}: {m}" for m in re.findall(r'\["status"\]\s*[!=]=\s*"(?:ok|skipped)"', text)]
        found += [f"{path.name}: {m}" for m in re.findall(r'[\[(]"(?:adapter", "mode|scenario", "offset)"', text)]
        found += [f"{path.name}: {m}" for m in re.findall(r"^CELL = [\[(]\"", text, re.M)]
    assert found == []


def test_a_report_computes_each_buttons_capability_row_once(tmp_path, monkeypatch):
    raw = tmp_path / "results" / "raw"
    raw.mkdir(parents=True)
    tokens = [1, 2, 4, 8, 16, 32]
    rows = [{**row(i, 0, offset=f"on:effect_received:email:{i // 3 + 1}"), **PROVENANCE, "tokens_after_stop": t}
            for i, t in enumerate(tokens)]
    (raw / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = []
    real = capability.capability_verdicts
    monkeypatch.setattr(capability, "capability_verdicts", lambda g: calls.append(len(g)) or real(g))
    write_report(tmp_path / "results", tmp_path / "results")
    assert calls == [6]  # the capability table and the scorecard read the same row
    # the card counts the trials billed more than a token (its share) and their p90; the tables the median
    card = json.loads((tmp_path / "results" / "summary.json").read_text())["scorecard"][0]["best"]
    assert (card["shares"]["tokens"]["k"], card["shares"]["tokens"]["n"], card["tokens_p90"]) == (5, 6, 32.0)
    index = (tmp_path / "results" / "site" / "index.html").read_text()
    assert 'data-k="5" data-n="6"' in index and ">5/6</a><small class=\"p90\">p90 32</small>" in index
    assert "| 6 (1..32) |" in (tmp_path / "results" / "README.md").read_text()


def test_the_step_a_trial_went_wrong_in_is_read_from_its_row_not_from_its_reason():
    """A reason that names no step (free text) with `failed_step` close: the stop itself worked."""
    df = pd.DataFrame([{**verdict_row(), "failed_step": None},
                       {**verdict_row(status="hung", reason="the subject did not answer"), "failed_step": "close"}])
    assert capability_row(df)["can abort"] == "hangs (1/2)"  # read by what it measured: it aborted
    df.loc[1, "failed_step"] = "stop"
    assert capability_row(df)["can abort"] == "no (1/2: 1 hung in stop); hangs (1/2)"


def test_a_leaked_effect_is_priced_by_its_kind_when_the_row_tells_it():
    from harness.results.prices import cancel_tax, prices

    table = prices()
    leaked = table["leaked_effect"]
    rows = pd.DataFrame([
        {"effects_leaked": 2, "effects_after_stop": 2, "effects_after_stop_by_kind": {"email": 1, "pr": 1}},
        {"effects_leaked": 1, "effects_after_stop": 2, "effects_after_stop_by_kind": {"email": 1, "chat": 1},
         "effects_compensated": 1},  # which one leaked the row does not say: the default price
        {"effects_leaked": 0, "effects_after_stop": 0, "tokens_after_stop": 1000},
        {"effects_leaked": None, "effects_after_stop": None}])
    tax = cancel_tax(rows, table).round(6).tolist()
    assert tax == [round(leaked["email"] + leaked["pr"], 6), round(leaked["default"] + table["compensation"], 6),
                   table["output_tokens_per_1k"], 0.0]
    assert all(isinstance(v, (int, float)) and v > 0 for v in leaked.values())


def test_a_report_reads_a_framework_at_home_and_other_providers_apart(tmp_path):
    """Six trials at home (openai: no folder declares `fw`) billed 1 token each after the stop, and six on anthropic
    billed 50: the headline's scorecard and tables read the six at home; the per-provider table both."""
    raw = tmp_path / "results" / "raw"
    raw.mkdir(parents=True)
    rows = [{**row(i, 0, offset=f"on:effect_received:email:{i % 3 + 1}"), **PROVENANCE, "provider": p,
             "tokens_after_stop": t, "trial_id": f"{p}-{i}"}
            for p, t in (("openai", 1), ("anthropic", 50)) for i in range(6)]
    (raw / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_report(tmp_path / "results", tmp_path / "results")
    card = json.loads((tmp_path / "results" / "summary.json").read_text())["scorecard"][0]["best"]
    assert (card["shares"]["tokens"]["k"], card["shares"]["tokens"]["n"], card["tokens_p90"]) == (0, 6, 1.0)
    readme = (tmp_path / "results" / "README.md").read_text()
    providers = readme.split("## Each button on each provider")[1].split("\n## ")[0]
    lines = [ln for ln in providers.splitlines() if ln.startswith("| anthropic") or ln.startswith("| openai")]
    assert [ln.split("|")[1].strip() for ln in lines] == ["anthropic", "openai"]
    assert [ln.split("|")[4].strip() for ln in lines] == ["6", "6"]
    assert [ln.split("|")[-4].strip() for ln in lines] == ["50", "1"]  # tokens+
