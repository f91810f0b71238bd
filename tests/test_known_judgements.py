"""Known answers for conclusions: planted rows whose best button, tie, nothing-to-stop outcome and claim verdicts
are known by construction. The scorecard, the capability verdicts and the claims must come out exactly so."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pandas as pd

from harness.results.capability import capability_rows, capability_verdicts, text
from harness.results.claims import judge
from harness.results.judgement import PREDICATE, Word, share, tied, wilson
from harness.results.scorecard import scorecard

ROOT = Path(__file__).resolve().parents[1]
#: ten conditions: two scenarios x five event anchors (one tool style)
CONDITIONS = [(s, f"on:llm_request:{i}") for s, i in itertools.product(("q3_report", "inbox_triage"), range(1, 6))]


def trial(mode: str, scenario: str, offset: str, rep: int, adapter: str = "fw", **measured) -> dict:
    kind = "time" if offset.startswith("at:") else "event"
    return {"trial_id": f"{adapter}-{mode}-{scenario}-{offset}-{rep}", "adapter": adapter, "framework": "fw",
            "mode": mode, "mitigation": "none", "scenario": scenario, "offset": offset, "offset_kind": kind,
            "tool_style": "async", "mcp_launch": "direct", "host": "close", "rep": rep, "status": "ok",
            "reason": None, "failed_step": None, "trigger_precise": True, "llm_requests_after_stop": 0,
            "effects_new": 0, "tokens_after_stop": 0, "threads_left": 0, "effects_after_stop": 0,
            "effects_in_flight": 0, "effects_leaked": 0, "orphans": 0, "job_ended_ms": 5.0, "resume_ok": True,
            "resume_error": None, "resume_llm_replays": 0, "resume_duplicate_effects": 0, "versions": {},
            **measured}


def test_a_flaky_button_with_a_third_repetition_does_not_outrank_a_clean_one():
    """`clean` has two repetitions per condition and never went on; `flaky`'s first two repetitions disagree in
    every condition, so `--reps-rule agree` gave it a third (which went on too): 30 trials against 20. Ranked by
    trial count, only `flaky` was "measured on the whole matrix". Both cover the same ten conditions."""
    rows = [trial("clean", s, o, r) for (s, o), r in itertools.product(CONDITIONS, (1, 2))]
    rows += [trial("flaky", s, o, r, llm_requests_after_stop=int(r > 1))
             for (s, o), r in itertools.product(CONDITIONS, (1, 2, 3))]
    df = pd.DataFrame(rows)
    card = scorecard(df, capability_rows(df))[0]
    assert (card["best"]["adapter"], card["best"]["mode"]) == ("fw", "clean")
    assert card["best_set"] == [("fw", "clean")]
    did = {b["mode"]: (b["shares"]["did_not_stop"]["k"], b["shares"]["did_not_stop"]["n"],
                       b["shares"]["did_not_stop"]["rate"]) for b in card["buttons"]}
    assert did == {"clean": (0, 20, 0.0), "flaky": (20, 30, 0.6667)}  # two thirds of each condition's repetitions


def test_buttons_within_the_interval_are_a_tie_and_both_are_named():
    """`a` never went on; `b` went on in one of its ten conditions: 1/10 against 0/10 is within the noise."""
    rows = [trial("a", s, o, 1) for s, o in CONDITIONS]
    rows += [trial("b", s, o, 1, effects_new=int(i == 0)) for i, (s, o) in enumerate(CONDITIONS)]
    df = pd.DataFrame(rows)
    card = scorecard(df, capability_rows(df))[0]
    assert card["best_set"] == [("fw", "a"), ("fw", "b")]
    a, b = (PREDICATE["did_not_stop"].share(df[df["mode"] == m]) for m in ("a", "b"))
    assert (a.k, a.n, b.k, b.n) == (0, 10, 1, 10) and tied(a, b)


def test_a_difference_beyond_the_interval_is_not_a_tie():
    """Six of ten conditions against none: the Newcombe interval of the difference leaves out 0."""
    rows = [trial("a", s, o, 1) for s, o in CONDITIONS]
    rows += [trial("b", s, o, 1, effects_new=int(i < 6)) for i, (s, o) in enumerate(CONDITIONS)]
    df = pd.DataFrame(rows)
    assert scorecard(df, capability_rows(df))[0]["best_set"] == [("fw", "a")]


def test_the_wilson_interval_is_the_textbook_one():
    lo, hi = wilson(0, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.0, 0.2775)
    lo, hi = wilson(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)


def test_a_job_that_failed_before_the_press_had_nothing_to_stop():
    """Two of six trials failed on a rate limit before the stop was pressed: they are their own outcome, never
    "did not stop", and the capability verdict reads the four others."""
    before = {"status": "failed", "failed_step": "job", "reason": "job: the job failed before the stop: 429",
              "tokens_after_stop": None, "llm_requests_after_stop": None, "effects_new": None, "job_ended_ms": None,
              "resume_ok": None, "resume_duplicate_effects": None}
    rows = [trial("stop", "q3_report", f"on:llm_request:{i}", 1) for i in range(1, 5)]
    rows += [trial("stop", "q3_report", f"on:llm_request:{i}", 2, **before) for i in (1, 2)]
    df = pd.DataFrame(rows)
    b = scorecard(df, capability_rows(df))[0]["best"]
    assert (b["shares"]["did_not_stop"]["k"], b["shares"]["did_not_stop"]["n"]) == (0, 4)
    assert (b["shares"]["nothing_to_stop"]["k"], b["shares"]["nothing_to_stop"]["n"]) == (2, 6)
    assert (b["shares"]["went_wrong"]["k"], b["shares"]["went_wrong"]["n"]) == (0, 4)
    assert text(capability_verdicts(df)["can abort"]) == "yes"


def test_a_time_anchored_stop_on_time_is_judged_and_a_late_one_is_not():
    rows = [trial("stop", "q3_report", "on:llm_request:1", 1),
            trial("stop", "q3_report", "at:250ms", 1, llm_requests_after_stop=1),
            trial("stop", "q3_report", "at:500ms", 1, llm_requests_after_stop=1, trigger_precise=False)]
    v = capability_verdicts(pd.DataFrame(rows))["can abort"]
    assert (v.word, v.k, v.n, text(v)) == (Word.NO, 1, 2, "no (1/2: q3_report at:250ms)")


def test_an_in_flight_claim_reads_whether_the_cancel_reached_the_tool():
    """Every service commits what it received: the effect lands in all three trials. In two the client had gone
    before the commit (the abort reached the tool), in one it had not."""
    claim = {"id": "x", "framework": "fw", "claim": "abort stops tool side effects in flight",
             "rule": "stops_effects_in_flight"}
    landed = {"effects_in_flight": 1, "effects_after_stop": 1, "effects_leaked": 1}
    rows = [trial("abort", "q3_report", "on:effect_received:email", r, effects_in_flight_client_gone=int(r < 3),
                  **landed) for r in (1, 2, 3)]
    verdict, evidence = judge(claim, pd.DataFrame(rows))
    assert verdict == Word.PARTLY
    assert evidence.startswith("2/3 trials stopped with an effect in flight had its client gone")
    rows[2]["effects_in_flight_client_gone"] = 1  # one trial flips the verdict
    assert judge(claim, pd.DataFrame(rows))[0] == Word.CONFIRMED


def test_state_dropped_is_judged_on_state_kept_and_adapters_are_not_pooled():
    """Every resume reached the end, but each asked the model a completed turn again: the state was dropped. Two
    adapters share the mode name `token`: the evidence names each."""
    claim = {"id": "x", "framework": "fw", "claim": "no abort primitive, state dropped",
             "rule": "no_abort_and_no_resume"}
    rows = [trial("token", "q3_report", "on:llm_request:1", r, adapter=a, llm_requests_after_stop=1,
                  resume_llm_replays=2) for a, r in itertools.product(("fw", "fw-load-state"), (1, 2))]
    verdict, evidence = judge(claim, pd.DataFrame(rows))
    assert verdict == Word.CONFIRMED
    assert "in 0/4 trials (fw/token 0/2, fw-load-state/token 0/2)" in evidence


def test_a_trial_with_nothing_to_stop_does_not_refute_a_keeps_running_claim():
    claim = {"id": "x", "framework": "fw", "claim": "break only stops reading", "rule": "keeps_running"}
    rows = [trial("break", "q3_report", f"on:llm_request:{i}", 1, llm_requests_after_stop=1) for i in (1, 2, 3)]
    rows.append(trial("break", "q3_report", "on:llm_request:4", 1, job_ended_ms=-0.1))  # ended as it was pressed
    assert judge(claim, pd.DataFrame(rows))[0] == Word.CONFIRMED


def test_a_share_weighs_each_condition_once():
    rows = pd.DataFrame([trial("m", "q3_report", "on:llm_request:1", r, effects_new=1) for r in (1, 2, 3)]
                        + [trial("m", "q3_report", "on:llm_request:2", 1)])
    s = share(rows, pd.Series(True, index=rows.index), rows["effects_new"] > 0)
    assert (s.k, s.n, s.conditions, s.rate) == (3, 4, 2, 0.5)


def test_no_verdict_word_is_read_back_from_text_in_harness_results():
    """Verdicts are data: the words are compared as values, never split out of a cell's text (the one migration
    of a text-era summary.json aside)."""
    found = subprocess.run(["git", "grep", "-n", "-e", "verdict_word", "-e", "CAPABILITY_RULES.splitlines",
                            "--", "harness/results"], cwd=ROOT, capture_output=True, text=True).stdout
    assert found == ""
    from harness.results import glossary

    assert not hasattr(glossary, "_verdicts")


def test_one_token_threshold_serves_the_scorecard_and_the_claims():
    found = subprocess.run([sys.executable, "-c", "import harness.results.claims as c, inspect; "
                            "print('> 1' in inspect.getsource(c))"], cwd=ROOT, capture_output=True, text=True)
    assert found.stdout.strip() == "False"


def test_a_variant_where_the_service_honours_a_disconnect_shows_what_a_cancel_saves():
    """`cancel` reaches the tool before the commit: where the service commits what it received the email lands,
    where it honours a disconnect it does not. `wait` lets the call run: it lands in both."""
    from harness.results.variants import variant_table
    from harness.scenario import load_scenarios

    anchor = "on:effect_received:email"
    rows = [trial(m, s, anchor, 1, effects_in_flight=int(s == "q3_report" or m == "wait"),
                  effects_in_flight_client_gone=int(m == "cancel" and s == "q3_report"),
                  effects_aborted=int(m == "cancel" and s != "q3_report"))
            for m in ("cancel", "wait") for s in ("q3_report", "q3_report_honours_disconnect")]
    table = variant_table(pd.DataFrame(rows), load_scenarios()).to_dict("records")
    assert table == [
        {"adapter": "fw", "mode": "cancel", "variant": "q3_report_honours_disconnect", "landed (q3_report)": "1/1",
         "landed (q3_report_honours_disconnect)": "0/1", "cancel reached the tool": "1/1"},
        {"adapter": "fw", "mode": "wait", "variant": "q3_report_honours_disconnect", "landed (q3_report)": "1/1",
         "landed (q3_report_honours_disconnect)": "1/1", "cancel reached the tool": "0/1"}]


def test_a_cell_of_the_articles_table_is_confirmed_partly_or_refuted_by_the_buttons_shares():
    """State kept, stated yes: one button keeps it everywhere (yes), or every button drops it everywhere (no), or
    each keeps it in some conditions (partly)."""
    claim = {"id": "x", "framework": "fw", "claim": "state kept: yes", "rule": "table_cell", "property": "state_kept",
             "stated": "yes"}

    def rows(keeps):  # mode -> in how many of the ten conditions the resume kept the state
        return pd.DataFrame([trial(m, s, o, 1, resume_llm_replays=int(i >= k))
                             for m, k in keeps.items() for i, (s, o) in enumerate(CONDITIONS)])

    assert judge(claim, rows({"a": 10, "b": 0}))[0] == Word.CONFIRMED
    assert judge(claim, rows({"a": 0, "b": 0}))[0] == Word.REFUTED
    verdict, evidence = judge(claim, rows({"a": 5, "b": 4}))
    assert verdict == Word.PARTLY
    assert evidence.startswith("measured partly (stated yes): resumed without keeping the state per ranked button: "
                               "fw/a 5/10")


def test_the_reps_rules_impact_check_reads_the_scorecard():
    """The same rows judged twice move nothing; when `clean` goes on everywhere instead, the check names the best
    set that moved (`flaky`, two thirds of each condition, and `clean`, all of it, are within the interval of ten
    conditions: tied) and the best button's share that moved beyond the interval."""
    from harness.results.reps_rule_effect import scorecard_changes

    def card(rows):
        df = pd.DataFrame(rows)
        return scorecard(df, capability_rows(df))

    clean = [trial("clean", s, o, r) for (s, o), r in itertools.product(CONDITIONS, (1, 2))]
    flaky = [trial("flaky", s, o, r, llm_requests_after_stop=int(r > 1))
             for (s, o), r in itertools.product(CONDITIONS, (1, 2, 3))]
    assert scorecard_changes(card(clean + flaky), card(clean + flaky)) == []
    went_on_everywhere = [trial("clean", s, o, r, llm_requests_after_stop=1)
                          for (s, o), r in itertools.product(CONDITIONS, (1, 2))]
    moved = scorecard_changes(card(clean + flaky), card(went_on_everywhere + flaky))
    assert moved == [{"what": "fw: best button", "all": "fw/clean", "agree": "fw/flaky, fw/clean"},
                     {"what": "fw clean: did_not_stop", "all": "0/20", "agree": "20/20"}]


def test_the_published_readme_reads_on_github():
    """No line of results/README.md is longer than 600 characters: long lists live on the site."""
    text = (ROOT / "results" / "README.md").read_text()
    assert max(map(len, text.splitlines())) <= 600


def test_the_thesis_names_the_frameworks_whose_buttons_really_stop():
    """`a`'s button never goes on, `b`'s always does, `c`'s went on in one of ten conditions (within the noise of
    0: it really stops). "Only a stops" over a and b is confirmed; over a, b and c it is partly (c stops too);
    "only b stops" over a and b is refuted."""
    rows = [{**trial("m", s, o, 1, adapter=fw, llm_requests_after_stop=int(fw == "b" or (fw == "c" and i == 0))),
             "framework": fw} for fw in ("a", "b", "c") for i, (s, o) in enumerate(CONDITIONS)]
    df = pd.DataFrame(rows)

    def thesis(frameworks, stop):
        return judge({"id": "t", "framework": "*", "claim": "only these stop", "rule": "only_these_stop",
                      "frameworks": frameworks, "stop": stop}, df)

    verdict, evidence = thesis(["a", "b"], ["a"])
    assert verdict == Word.CONFIRMED
    assert evidence == ("2/2 of a, b as the claim says; the buttons that really stop, per framework: a: a/m; b: no "
                        "button; c: c/m")
    assert thesis(["a", "b", "c"], ["a"])[0] == Word.PARTLY
    assert thesis(["a", "b"], ["b"])[0] == Word.REFUTED
