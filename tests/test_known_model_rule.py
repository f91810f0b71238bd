"""The model reads results: a resume that records the interrupted call as "Tool was interrupted." repeats the email
when the model asks for the call again (`retry_interrupted_tools`, the default), and not when it only counts
results (`count_results`). The planted adapter (tests/known_answer/interrupted.py) runs for real against the world.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from harness.scenario import DEFAULT_SCENARIOS_DIR, ScenarioError, load_scenarios, scenario_from_dict
from tests.test_trials import run

KI = "tests.known_answer.interrupted:RepairsInterruptedCall"


def scenarios_under(rule: str, tmp_path: Path) -> Path:
    """q3_report as shipped, its model told `rule`."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    data = yaml.safe_load((DEFAULT_SCENARIOS_DIR / "q3_report.yaml").read_text())
    (folder / "q3_report.yaml").write_text(yaml.safe_dump({**data, "model_rule": rule}))
    return folder


def test_under_the_default_rule_the_model_asks_for_the_interrupted_email_again_and_resume_sends_it_twice(tmp_path):
    assert load_scenarios()["q3_report"].model_rule.name == "retry_interrupted_tools"
    (row,) = run(KI, tmp_path, offsets=["on:effect_received:email"])
    assert row["status"] == "ok", row["reason"]
    assert row["model_rule"] == "retry_interrupted_tools"
    assert row["model_retries"] == 1
    assert row["effects_committed_total"] == 2
    assert row["resume_duplicate_effects"] == 1
    assert row["retry_duplicate_effects"] == 0
    assert row["resume_ok"] is True
    assert row["resume_llm_requests"] == 2  # the call asked again, then the final answer


def test_a_model_that_counts_results_goes_on_and_the_email_is_sent_once(tmp_path):
    shutil.rmtree(tmp_path / "scenarios", ignore_errors=True)
    (row,) = run(KI, tmp_path / "out", offsets=["on:effect_received:email"],
                 scenarios_dir=scenarios_under("count_results", tmp_path))
    assert row["status"] == "ok", row["reason"]
    assert row["model_rule"] == "count_results"
    assert row["model_retries"] == 0
    assert row["effects_committed_total"] == 1
    assert row["resume_duplicate_effects"] == 0
    assert row["resume_ok"] is True
    assert row["resume_llm_requests"] == 1


def test_a_bad_model_rule_names_the_file_and_the_field(tmp_path):
    folder = scenarios_under("always_retry", tmp_path)
    with pytest.raises(ScenarioError, match=r"q3_report\.yaml\.model_rule: 'always_retry' is not a model rule "
                                            r"\(known: retry_interrupted_tools, count_results\)"):
        load_scenarios(folder)
    with pytest.raises(ScenarioError, match=r"<inline>\.model_rule: 3 is not a model rule"):
        scenario_from_dict({**yaml.safe_load((folder / "q3_report.yaml").read_text()), "model_rule": 3})
