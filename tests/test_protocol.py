"""The adapter protocol's harness side, checked against adapter processes of known behaviour
(tests/known_answer/protocol.py): what each plants is counted exactly, from the world and the audits; a process
that breaks the protocol is named, with the message and the field."""

from __future__ import annotations

import shutil

import pytest

from harness.cli import main
from harness.results.evidence import find_trial
from harness.vocabulary import Event, Mark
from tests.test_trials import run

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
KA = "tests.known_answer.protocol:"


def test_a_timer_left_by_the_stop_sends_one_email_and_the_row_counts_it(tmp_path):
    (row,) = run(KA + "EmailsAfterStop", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_new"], row["effects_in_flight"]) == (1, 1, 0)
    assert (row["effects_leaked"], row["effects_compensated"]) == (1, 0)
    assert row["effects_after_stop_by_kind"] == {"email": 1}
    assert (row["tokens_after_stop"], row["llm_requests_after_stop"]) == (0, 0)
    assert 440 <= row["lie_ms"] < 1500  # the timer's 300 ms, then the email service's 150 ms
    assert row["tasks_left"] == 0  # the timer had fired by the audit
    assert (row["children_left"], row["sockets_left"], row["orphans"]) == (0, 0, 0)  # the process is the app
    assert row["resume_ok"] is None and row["resume_error"] == "no resume"
    assert row["close_ok"] is True


def test_a_timer_longer_than_the_floor_is_waited_for_and_its_email_counted(tmp_path):
    """The world is quiet for 3.5 s after the stop: only the process's pending timer, from its audit, keeps the
    trial watching; without it the trial would close the process before the email."""
    (row,) = run(KA + "TimerThenEmail", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_new"], row["effects_leaked"]) == (1, 1, 1)
    assert 3500 <= row["lie_ms"] < 6000
    assert row["tasks_left"] == 0


def test_an_interval_left_by_the_stop_is_a_runaway_named_by_its_timer(tmp_path):
    (row,) = run(KA + "PostsForever", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "runaway"
    assert row["failed_step"] == Mark.SETTLE
    assert row["reason"].startswith("'settle': the run still had work scheduled 5s after the observation floor: ")
    assert "timer 'setInterval(poster, 500 ms)' of the adapter process timer" in row["reason"]
    events = find_trial(tmp_path, row["run_id"])["events"]
    audit = next(e["data"] for e in events if e["event"] == Event.MARK and e["name"] == Mark.AUDIT
                 and e["data"]["phase"] == "after_stop")
    held = audit["adapter_process"]["held"]
    # the interval, still pending at the audit after the stop, and whatever its post in flight held then (the
    # socket's 30 s timeout timer, its connect): each counted in tasks_left by its kind
    assert [i["what"] for i in held if "poster" in i["what"]] == ["setInterval(poster, 500 ms)"]
    assert row["tasks_left"] == len([i for i in held if i["kind"] in ("timer", "immediate", "request")])
    settle = next(e for e in events if e["event"] == Event.MARK and e["name"] == Mark.SETTLE)
    called = next(e["t"] for e in events if e["event"] == Event.MARK and e["name"] == Mark.STOP_CALLED)
    posts = [e for e in events if e["event"] == Event.EFFECT_COMMITTED and e["kind"] == "chat"
             and called < e["t"] <= settle["data"]["deadline_at"]]
    assert len(posts) >= 10  # one every ~0.65 s for the 2 s floor and the 5 s deadline
    assert row["effects_after_stop_by_kind"] == {"chat": len(posts)}


def test_a_signal_stop_that_ends_the_process_returns_when_it_exits_and_leaves_nothing_to_resume(tmp_path):
    (row,) = run(KA + "ExitsOnSigterm", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert row["stop_return_ms"] is not None
    assert (row["effects_after_stop"], row["tasks_left"], row["children_left"], row["orphans"]) == (0, 0, 0, 0)
    assert row["resume_ok"] is None and row["resume_error"] == "no resume"  # the process is gone
    assert row["close_ok"] is True  # exiting on its stop's signal is no violation
    events = find_trial(tmp_path, row["run_id"])["events"]
    (absent,) = [e for e in events if e["event"] == Event.MARK and e["name"] == Mark.RESUME_ABSENT]
    assert absent["data"]["reason"] == ("known-protocol-exits-on-sigterm: the adapter process ended at the stop "
                                        "(SIGTERM): nothing of it is left to resume")


def test_a_signal_stop_returns_at_the_stopped_notification_after_what_its_handler_did(tmp_path):
    (row,) = run(KA + "EmailsOnSigterm", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_new"], row["effects_leaked"]) == (1, 1, 1)
    assert row["stop_return_ms"] >= 150  # the handler's email (150 ms service) before `stopped`
    assert row["lie_ms"] == 0  # nothing landed after stop returned
    assert row["resume_ok"] is None and row["resume_error"] == "no resume"  # answered -32001


def test_a_child_of_the_process_is_left_after_the_stop_an_orphan_after_close_and_outlives_a_host_crash(tmp_path):
    rows = run(KA + "LeavesChild", tmp_path, offsets=["at:50ms"], tool_styles=["async"], hosts=["close", "crash"])
    closed, crashed = sorted(rows, key=lambda r: r["host"])
    assert (closed["status"], crashed["status"]) == ("ok", "ok"), (closed["reason"], crashed["reason"])
    assert (closed["children_left"], closed["orphans"]) == (1, 1)  # the sleep; the process itself is the app
    assert (crashed["children_left"], crashed["crash_orphans"]) == (1, 1)  # the process died with its host
    events = find_trial(tmp_path, crashed["run_id"])["events"]
    (crash,) = [e for e in events if e["event"] == Event.MARK and e["name"] == Mark.HOST_CRASHED]
    assert [p["cmdline"] for p in crash["data"]["survivors"]] == ["sleep 60"]


def test_a_stop_never_answered_is_hung_in_stop_and_the_process_is_ended(tmp_path):
    (row,) = run(KA + "NeverAnswersStop", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "hung"
    assert (row["failed_step"], row["reason"]) == ("stop", "'stop' overran 1.5s")
    assert row["stop_return_ms"] is None


def test_what_the_process_tries_to_reach_beyond_loopback_is_counted_as_egress_after_close(tmp_path):
    (row,) = run(KA + "PhonesHome", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert row["egress_attempts"] == 1  # the name it resolved; its connection never came (no such name here)
    events = find_trial(tmp_path, row["run_id"])["events"]
    audit = next(e["data"] for e in events if e["event"] == Event.MARK and e["name"] == Mark.AUDIT
                 and e["data"]["phase"] == "after_close")
    assert audit["egress"] == ["resolve telemetry.example.com"]


def test_a_process_that_dies_at_start_fails_the_trial_with_its_exit_status_and_stderr(tmp_path):
    (row,) = run(KA + "CrashesAtStart", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "failed"
    assert row["reason"].startswith("start: ProtocolError: known-protocol-crashes-at-start: the adapter process "
                                    "exited with 3; its stderr ends: framework: cannot find its model")


def test_junk_on_stdout_fails_the_trial_naming_the_adapter_and_the_line(tmp_path):
    (row,) = run(KA + "JunkOnStdout", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "failed"
    assert row["reason"].startswith("start: ProtocolError: "
                                    "known-protocol-junk-on-stdout: stdout line 'framework says hi' is not a JSON "
                                    "message (stdout carries protocol messages only; logs go to stderr)")


def test_an_answer_with_a_wrong_field_fails_the_trial_naming_the_message_and_the_field(tmp_path):
    (row,) = run(KA + "BadWaitAnswer", tmp_path, offsets=["at:50ms"], tool_styles=["async"])
    assert row["status"] == "failed"
    assert ("ProtocolError: known-protocol-bad-wait-answer: answer to wait (id 3): field 'ended': expected one of "
            'completed, cancelled, failed, got "done"') in row["reason"]


def test_capabilities_that_disagree_with_the_declaration_are_refused_before_any_trial(tmp_path, capsys):
    code = main(["run", "--adapter", KA + "BadCapabilities", "--scenario", "q3_report", "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert ("stopbench run: error: known-protocol-bad-capabilities: capabilities: field 'stop_modes': the process "
            "says ['cancel', 'abort']; the adapter declares ['cancel']") in err
    assert not (tmp_path / "raw").exists()


def test_capabilities_that_reword_a_declared_mode_are_refused_naming_the_mode(tmp_path, capsys):
    code = main(["run", "--adapter", KA + "OwnText", "--scenario", "q3_report", "--out", str(tmp_path)])
    assert code == 2
    assert ("stopbench run: error: known-protocol-own-text: capabilities: field 'stop_modes.cancel.primitive': the "
            'process says "its own words for the mode"; the adapter declares "end the job"') in capsys.readouterr().err
    assert not (tmp_path / "raw").exists()


def test_a_stop_delivered_late_but_handled_at_once_lets_nothing_through(tmp_path):
    """The world holds the model request at the anchor until the process says it handled the stop, not until the
    harness pressed it: the busy loop's delay is the delivery (a field of its own), not tokens after the stop."""
    (row,) = run(KA + "SlowDelivery", tmp_path, scenarios=["long_answer"], offsets=["on:llm_request:1"],
                 tool_styles=["async"])
    assert row["status"] == "ok", row["reason"]
    assert (row["tokens_after_stop"], row["llm_requests_after_stop"]) == (0, 0)
    assert row["stop_delivery_ms"] > 0
    assert (row["usage_reported_tokens"], row["usage_unreported_tokens"]) == (0, 0)  # its usage, told over the wire
    record = find_trial(tmp_path, row["trial_id"])
    handled = [e for e in record["events"] if e.get("name") == Mark.STOP_HANDLED]
    called = [e for e in record["events"] if e.get("name") == Mark.STOP_CALLED]
    assert len(handled) == 1 and called[0]["data"]["hold_until_handled"] is True
    assert round((handled[0]["t"] - called[0]["t"]) / 1e6, 3) == row["stop_delivery_ms"]
