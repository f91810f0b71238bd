"""The row schema is the one declaration every reader uses: README, read_rows, cells, CSV columns, claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.results import schema
from harness.results.rows import read_rows

REPO = Path(__file__).resolve().parent.parent


def good_row(**over) -> dict:
    row = {"schema_version": schema.SCHEMA_VERSION, "trial_id": "t1", "status": "ok", "adapter": "fw",
           "adapter_ref": "fw", "mode": "cancel", "scenario": "q3_report", "offset": "at:150ms", "lie_ms": 12.5,
           "tokens_after_stop": 3, "resume_ok": None, "versions": {"fw": "1.0"}}
    return {**row, **over}


def write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "raw" / "fw.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_readme_field_table_is_generated_from_the_schema():
    readme = (REPO / "README.md").read_text()
    assert schema.markdown_table() in readme, \
        "README.md's field table is stale: run `python -m harness.results.schema --update README.md`"
    for name in schema.FIELDS:
        assert f"| `{name}` |" in readme


def test_every_field_is_declared_with_a_meaning_unit_and_a_summary_that_fits_its_type():
    for f in schema.FIELDS.values():
        assert f.meaning and "\n" not in f.meaning, f.name
        assert f.type in schema.TYPE_NAMES, f.name
        if f.aggregation == "ratio":
            assert f.type is bool, f.name
        if f.aggregation == "median":
            assert f.type in (int, float), f.name
        if f.label:
            assert f.aggregation != "none", f"{f.name}: a column in a table needs a cell rule"
        if f.unit == "ms":
            assert f.name.endswith("_ms"), f.name
    labels = [f.label for f in schema.FIELDS.values() if f.label]
    assert len(labels) == len(set(labels)), "two fields under one column label"


def test_read_rows_names_the_file_line_and_field_of_a_wrong_typed_value(tmp_path):
    path = write(tmp_path, [good_row(), good_row(trial_id="t2", lie_ms="12 ms"), good_row(trial_id="t3", rep=True)])
    rows, bad = read_rows([path])
    assert [r["trial_id"] for r in rows] == ["t1"]
    assert [str(b) for b in bad] == [f"{path}:2: field 'lie_ms' is str '12 ms', expected float or null",
                                     f"{path}:3: field 'rep' is bool True, expected int"]


def test_read_rows_accepts_ints_for_floats_and_null_where_declared(tmp_path):
    path = write(tmp_path, [good_row(lie_ms=100, stop_return_ms=None)])
    rows, bad = read_rows([path])
    assert bad == [] and rows[0]["lie_ms"] == 100
    path = write(tmp_path, [good_row(reaped=None)])
    assert "field 'reaped' is null" in str(read_rows([path])[1][0])


def test_read_rows_requires_the_required_fields(tmp_path):
    row = good_row()
    del row["status"]
    _, bad = read_rows([write(tmp_path, [row])])
    assert str(bad[0]).endswith(":1: missing field(s) status")


def test_framework_of_rows_written_before_it_existed(tmp_path):
    rows = [good_row(adapter="autogen-load-state", adapter_ref="adapters.autogen.adapter:AutogenLoadStateAdapter"),
            good_row(adapter="openai-agents", adapter_ref="adapters.openai_agents.adapter:ADAPTER"),
            good_row(adapter="known-x", adapter_ref="tests.known_answer.adapters:X"),
            good_row(adapter="crewai", adapter_ref="crewai"),
            good_row(adapter="mine", adapter_ref="x", framework="langgraph")]  # written with it: kept
    rows = [{**r, "trial_id": f"t{i}"} for i, r in enumerate(rows)]  # five trials (a reader keeps one row of each)
    got, bad = read_rows([write(tmp_path, rows)])
    assert bad == []
    assert [r["framework"] for r in got] == ["autogen", "openai-agents", "known-x", "crewai", "langgraph"]


def test_columns_follow_the_schema_then_the_undeclared_sorted():
    assert schema.columns(["zeta", "lie_ms", "adapter", "alpha", "schema_version"]) == [
        "schema_version", "adapter", "lie_ms", "alpha", "zeta"]


def test_readme_update_rewrites_only_the_table(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n{schema.TABLE_BEGIN}\n| stale |\n{schema.TABLE_END}\n\nafter\n")
    assert schema.update_readme(readme) is True
    text = readme.read_text()
    assert text.startswith("# x\n\nbefore\n\n") and text.endswith("\n\nafter\n") and "| stale |" not in text
    assert schema.update_readme(readme) is False


def test_cells_follow_the_declared_aggregation():
    import pandas as pd

    from harness.results.cells import cell, cells

    df = pd.DataFrame({"lie_ms": [1.04, 2.26, 3.0, None], "resume_ok": [True, False, None, True],
                       "effects_leaked": [1, 1, 1, 1], "tokens_after_stop": [None] * 4})
    assert cell(df, "lie_ms") == "2.3 (1..3)"  # rounded to 0.1 first, then the median of the three
    assert cell(df, "resume_ok") == "2/3"
    assert cells(df, ["effects_leaked", "tokens_after_stop"]) == {"leaked": "1", "tokens+": "-"}
    with pytest.raises(ValueError, match="aggregation none"):
        cell(df.assign(adapter="a"), "adapter")


def test_compare_uses_no_private_name_of_the_report():
    source = (REPO / "harness" / "results" / "compare.py").read_text()
    assert "from harness.results.report import" not in source


def test_claims_are_keyed_by_framework_and_come_in_the_article_order():
    import pandas as pd

    from harness.results.claims import judge, load_claims

    assert [c["id"] for c in load_claims()] == [
        # the article's thesis and its table first (data/article.yaml)
        "article_thesis_only_langgraph_stops", "article_table_langgraph_can_abort",
        "article_table_openai_agents_can_abort", "article_table_crewai_can_abort", "article_table_autogen_can_abort",
        "article_table_langgraph_state_kept", "article_table_langgraph_can_resume",
        "article_table_autogen_state_kept", "article_table_orphan_cleanup",
        "langgraph_suspend_resume", "openai_agents_break_only_stops_reading", "crewai_thread_keeps_running",
        "autogen_no_abort_state_dropped",
        # the new frameworks' claims, from their issues: no `order`, so by folder after the article's
        "agent_framework_work_goes_on_after_cancel", "agno_cancel_run_stops", "agno_sync_cancel_run_stops",
        "agno_team_cancel_goes_on",
        "google_adk_break_leaves_the_invocation_running",
        "google_adk_sync_close_does_not_cancel", "langgraph_js_stream_cancel_stops", "langgraph_js_drain_resumes",
        "llamaindex_cancel_run_stops", "llamaindex_resume_after_cancel", "mastra_mcp_abort_stops_tool_effects",
        "openai_agents_js_streamed_tool_calls_cancelled", "openai_agents_js_tool_calls_cancelled",
        "openai_agents_js_break_only_stops_reading",
        "pydantic_ai_tools_run_on_after_task_cancel", "pydantic_ai_agent_run_cancel_stops",
        "smolagents_interrupt_stops", "smolagents_interrupt_only_between_steps", "smolagents_resume_with_memory",
        "strands_cancel_stops", "strands_interrupt_resumes", "strands_mcp_client_left_on_exit",
        "vercel_ai_abort_signal_stops_tool_effects", "vercel_ai_generate_abort_signal_stops_tool_effects",
        "vercel_ai_abort_ends_the_run",
        "saga_closes_the_leak", "orphans_need_a_reaper", "orchestrators_need_a_reaper"]
    for path in sorted((REPO / "adapters").glob("*/claims.yaml")):  # a folder's claims are about its framework
        assert {c["framework"] for c in yaml.safe_load(path.read_text())} == {path.parent.name.replace("_", "-")}
    rows = [{"adapter": "whatever-name", "framework": "crewai", "mode": "abandon", "mitigation": "none",
             "status": "ok", "llm_requests_after_stop": 0, "effects_new": 0, "tokens_after_stop": 5,
             "threads_left": 1},
            {"adapter": "crewai-lookalike", "framework": "other", "mode": "abandon", "mitigation": "none",
             "status": "ok", "llm_requests_after_stop": 0, "effects_new": 0, "tokens_after_stop": 0,
             "threads_left": 0}]
    claim = {"framework": "crewai", "rule": "keeps_running", "mode": "abandon", "claim": "c"}
    assert judge(claim, pd.DataFrame(rows)) == (
        "confirmed", "1/1 trials kept generating tokens, asking the model, sending new effects or running threads "
                     "after the stop")
    stops = {"framework": "crewai", "rule": "stops_cleanly", "mode": "abandon", "claim": "c"}
    assert judge(stops, pd.DataFrame(rows))[0] == "refuted"  # the same trials, the opposite claim
    rows[0].update(tokens_after_stop=0, threads_left=0)
    assert judge(stops, pd.DataFrame(rows))[0] == "confirmed"
    assert judge(claim, pd.DataFrame(rows))[0] == "refuted"
    rows[0].update(threads_left=1)  # a thread the app keeps (its database connection), the run's work done
    working = {"framework": "crewai", "rule": "keeps_working", "mode": "abandon", "claim": "c"}
    assert (judge(claim, pd.DataFrame(rows))[0], judge(working, pd.DataFrame(rows))[0]) == ("confirmed", "refuted")
