"""Findings: every stop button whose cells or claims say it leaks, hangs, fails, repeats on resume or leaves
processes, each with the trials behind it, a representative trial and the upstream issue it matches; and
`stopbench findings DIR --reproducers FOLDER`, a reproducer for each."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.results.cells import frame
from harness.results.findings import NO_ISSUE, UpstreamError, findings, load_upstream
from tests.test_compare import row
from tests.test_trials import run

UPSTREAM = [{"framework": "fw", "mode": "cancel", "kind": "repeats on resume", "issue": "acme/fw#12",
             "title": "resume sends the email again", "state": "open"}]


def rows() -> list[dict]:
    """fw cancel: in four cells of three repetitions, the in-flight email lands after stop returned in one cell's
    every repetition and one other trial (a race); the resume repeats an email in two trials; one trial hangs."""
    out = []
    for c in range(4):
        for r in range(3):
            x = row(c * 3 + r, 0, offset=f"on:effect_received:email:{c + 1}")
            x.update({"framework": "fw", "rep": r, "host": "close", "mcp_launch": "direct", "trial_id": f"t{c}-{r}",
                      "effects_compensated": 0, "effects_after_stop": 0})
            out.append(x)
    for x in out[3:6] + out[10:11]:  # cell 1 in full, and one race in cell 3
        x.update({"effects_leaked": 1, "effects_after_stop": 1, "lie_ms": 150.0})
    for x in out[0:2]:
        x["resume_duplicate_effects"] = 1
    out[7].update({"status": "hung", "failed_step": "stop", "reason": "'stop' overran 5.0s"})
    return out


def test_findings_are_read_off_the_cells_with_a_representative_trial_and_their_upstream_issue():
    found = {f.kind: f for f in findings(frame(rows()), UPSTREAM, claims=[])}
    assert set(found) == {"leak", "hang", "repeats on resume"}
    leak = found["leak"]
    assert (leak.framework, leak.adapter, leak.mode, leak.trials, leak.of) == ("fw", "fw", "cancel", 4, 12)
    assert leak.trial_ids == ("t1-0", "t1-1", "t1-2", "t3-1")
    assert leak.trial_id == "t1-0"  # a cell whose every repetition shows it, not the race in cell 3
    assert leak.cell == "can abort: no (1/12: 1 hung in stop); hangs (1/12); compensated: no"
    assert leak.issue == NO_ISSUE
    dup = found["repeats on resume"]
    assert (dup.trials, dup.trial_id, dup.issue, dup.issue_url) == (
        2, "t0-0", "acme/fw#12", "https://github.com/acme/fw/issues/12")
    assert (found["hang"].trials, found["hang"].trial_id) == (1, "t2-1")


def test_a_button_that_stops_cleanly_has_no_finding():
    clean = [r for r in rows() if r["status"] == "ok" and not r["effects_leaked"] and not
             r.get("resume_duplicate_effects")]
    assert findings(frame(clean), UPSTREAM, claims=[]) == []


@pytest.mark.parametrize(("text", "error"), [
    ("- framework: fw\n  issue: acme-fw-12\n  title: t\n", "entry 1: issue: expected owner/repo#number"),
    ("- framework: fw\n  kind: slow\n  issue: a/b#1\n  title: t\n", "entry 1: kind: 'slow' is none of"),
    ("- framework: fw\n  issue: a/b#1\n", "entry 1: title: expected text"),
    ("framework: fw\n", "expected a list of entries"),
])
def test_a_malformed_upstream_file_names_the_entry_and_the_field(tmp_path, text, error):
    path = tmp_path / "upstream_issues.yaml"
    path.write_text(text)
    with pytest.raises(UpstreamError, match=error) as e:
        load_upstream(path)
    assert str(path) in str(e.value)


def test_the_shipped_upstream_issues_load():
    assert all(e["issue"].count("#") == 1 for e in load_upstream())


def test_the_findings_command_writes_a_reproducer_for_each(tmp_path, capsys):
    results = tmp_path / "results"
    run("tests.known_answer.adapters:LeaksOneEmail", results, offsets=["at:50ms"], observe_ms=100)
    assert main(["findings", str(results), "--reproducers", str(tmp_path / "repro")]) == 0
    out = capsys.readouterr().out
    assert "| known-leaks-one-email | known-leaks-one-email | cancel | leak | 1/1 |" in out
    (written,) = sorted(Path(tmp_path / "repro").iterdir())
    assert written.name == "known-leaks-one-email--cancel--leak.py"
    assert "result.assert_stopped()" in written.read_text()
    assert "0 of 1 findings match an upstream issue" in out


def test_a_finding_names_the_claims_that_say_so():
    claims = [{"id": "fw_keeps_running", "framework": "fw", "claim": "fw keeps running", "rule": "keeps_running"},
              {"id": "fw_resumes", "framework": "fw", "claim": "fw resumes cleanly", "rule": "resumes_cleanly"},
              {"id": "other", "framework": "other", "claim": "other keeps running", "rule": "keeps_running"}]
    found = {f.kind: f.claims for f in findings(frame(rows()), UPSTREAM, claims)}
    assert found == {"leak": ("fw_keeps_running: partly",), "hang": ("fw_keeps_running: partly",),
                     "repeats on resume": ("fw_resumes: partly",)}


def test_a_claim_that_carries_its_verdict_is_not_judged_again():
    """The report judges every claim once and hands the findings its verdicts."""
    claims = [{"id": "fw_keeps_running", "framework": "fw", "claim": "fw keeps running", "rule": "keeps_running",
               "verdict": "confirmed"}]  # judged on these rows it would say partly
    found = {f.kind: f.claims for f in findings(frame(rows()), UPSTREAM, claims)}
    assert found["leak"] == ("fw_keeps_running: confirmed",)


def test_a_job_that_failed_before_the_press_is_no_finding_of_the_button():
    """A rate limit the client gave up on before the stop was pressed: the job failed, the button had nothing to
    stop; no "fail" finding is made of it."""
    import pandas as pd

    from harness.results.findings import findings

    base = {"adapter": "fw", "framework": "fw", "mode": "abort", "mitigation": "none", "scenario": "flaky_provider",
            "scenario_hash": "h", "offset": "on:llm_error:2", "offset_kind": "event", "tool_style": "async",
            "mcp_launch": "direct", "host": "close", "rep": 1, "llm_requests_after_stop": None, "effects_new": None,
            "effects_leaked": None, "lie_ms": None, "orphans": 0, "resume_ok": None,
            "resume_duplicate_effects": None}
    rows = pd.DataFrame([{**base, "trial_id": "t1", "status": "failed", "failed_step": "job",
                          "reason": "job: the job failed before the stop: RateLimitError"},
                         {**base, "trial_id": "t2", "status": "failed", "failed_step": "stop",
                          "reason": "stop: RuntimeError"}])
    found = findings(rows, upstream=[], claims=[])
    assert [(f.kind, f.trials, f.of, f.trial_ids) for f in found] == [("fail", 1, 1, ("t2",))]
