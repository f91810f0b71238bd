"""The measuring apparatus, checked against adapters whose behaviour is planted and known.

Counts are asserted exactly: a harness that is off by one here is off by one in every table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract.registry import load_adapter
from harness.results.rows import raw_file, read_rows
from harness.trial.reap import processes_of_runs
from harness.trial.runner import RunOptions, run_matrix
from harness.trial.spec import Deadlines

KA = "tests.known_answer.adapters:"
FAST = Deadlines(start=5, trigger=5, stop=1.5, wait=2, settle=5, resume=5, close=2, grace=1)


def run(adapter: str, tmp_path: Path, **kw) -> list[dict]:
    kw.setdefault("scenarios", ["q3_report"])
    kw.setdefault("deadlines", FAST)
    opts = RunOptions(adapter=adapter, out=tmp_path, **kw)
    rows = run_matrix(load_adapter(adapter), opts)
    assert_nothing_left([r["run_id"] for r in rows])
    return rows


def assert_nothing_left(run_ids: list[str]) -> None:
    left = processes_of_runs(run_ids)
    assert not left, f"processes of trials still running: {left}"


def test_leaks_exactly_one_email_after_stop(tmp_path):
    (row,) = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["adapter"], row["adapter_ref"]) == ("known-leaks-one-email", KA + "LeaksOneEmail")
    assert row["effects_after_stop"] == 1
    assert row["effects_new"] == 1
    assert row["effects_in_flight"] == 0
    assert row["effects_leaked"] == 1
    assert row["effects_compensated"] == 0
    assert row["effects_after_stop_by_kind"] == {"email": 1}
    assert row["tokens_after_stop"] == 0
    assert row["llm_requests_after_stop"] == 0
    # the email lands 50 ms after stop returned, plus the email service's 150 ms latency
    assert 190 <= row["lie_ms"] < 1000
    assert row["threads_left"] == 0  # the leaking thread had finished by the time of the audit
    assert row["orphans"] == 0
    assert row["resume_ok"] is None and row["resume_error"] == "no resume"


def test_ignored_stop_is_the_whole_job(tmp_path):
    (row,) = run(KA + "IgnoresStop", tmp_path, offsets=["on:llm_request:1"])
    assert row["status"] == "ok", row["reason"]
    # q3_report generates 11 + 10 + 60 tokens; the stop came when the first request arrived
    assert row["tokens_after_stop"] == 81
    assert row["llm_requests_after_stop"] == 2
    assert row["effects_after_stop"] == 1 and row["effects_new"] == 1 and row["effects_leaked"] == 1
    assert row["lie_ms"] > 200
    assert row["stop_return_ms"] < 50


def test_child_process_and_thread_left_behind(tmp_path):
    (row,) = run(KA + "LeavesChildAndThread", tmp_path, offsets=["at:50ms"])
    # the thread wakes every 10 ms, forever: work never over, so a runaway that names it
    assert row["status"] == "runaway"
    assert row["reason"].startswith("'settle': the run still had work scheduled 5s after the observation floor: "
                                    "thread 'known-leaked-thread' ")  # sleeping, or running: it wakes every 10 ms
    assert row["children_left"] == 1
    assert row["threads_left"] == 1
    assert row["orphans"] == 1
    assert row["reaped"] == 1
    assert row["orphan_rss_bytes"] > 1_000_000


def test_cleaned_up_child_is_not_an_orphan(tmp_path):
    (row,) = run(KA + "SpawnsChildAndCleansUp", tmp_path, offsets=["at:50ms"])
    assert row["status"] == "ok", row["reason"]
    assert (row["children_left"], row["orphans"], row["reaped"], row["threads_left"]) == (0, 0, 0, 0)


def test_hang_in_stop_becomes_a_hung_row_and_the_run_goes_on(tmp_path):
    rows = run(KA + "HangsInStop", tmp_path, offsets=["at:50ms", "at:80ms"])
    assert [r["status"] for r in rows] == ["hung", "hung"]
    for r in rows:
        assert "stop" in r["reason"]
        assert r["stop_return_ms"] is None and r["lie_ms"] is None  # not measured is None, never 0
        # start + offset + stop deadline + grace, with room for a loaded machine
        assert r["duration_s"] < 8


def test_resume_that_repeats_an_effect(tmp_path):
    (row,) = run(KA + "ResumeRepeatsEffect", tmp_path, offsets=["at:400ms"])
    assert row["status"] == "ok", row["reason"]
    assert row["effects_after_stop"] == 0
    assert row["resume_duplicate_effects"] == 1
    assert row["resume_ok"] is False  # it never got to the final answer
    assert row["effects_committed_total"] == 2


def test_event_anchored_repetitions_agree(tmp_path):
    rows = run(KA + "IgnoresStop", tmp_path, offsets=["on:effect_received:email"], reps=5)
    keys = ("tokens_after_stop", "llm_requests_after_stop", "effects_after_stop", "effects_in_flight",
            "effects_leaked")
    assert len({tuple(r[k] for k in keys) for r in rows}) == 1, [tuple(r[k] for k in keys) for r in rows]
    assert rows[0]["effects_in_flight"] == 1  # held by the world until the stop was pressed


def test_spawned_subject_measures_the_same(tmp_path):
    (row,) = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms"], start_method="spawn")
    assert (row["status"], row["effects_leaked"], row["effects_new"]) == ("ok", 1, 1)


def test_rerun_skips_finished_trials_and_rows_carry_provenance(tmp_path):
    first = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms", "at:60ms"])
    assert len(first) == 2
    again = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms", "at:60ms", "at:70ms"])
    assert [r["offset"] for r in again] == ["at:70ms"]
    rows, bad = read_rows([raw_file(tmp_path, "known-leaks-one-email")])
    assert len(rows) == 3 and not bad
    for key in ("schema_version", "trial_id", "scenario_hash", "versions", "python", "platform", "git_sha",
                "seed", "status"):
        assert key in rows[0]


@pytest.mark.slow
def test_reference_adapter_stops_right(tmp_path):
    """The row that shows what is possible: at every event anchor, nothing leaks and resume is clean."""
    # only the event anchors (what it asserts), one at a time: the world holds the anchored event until the stop is
    # marked, but not the parallel calls beside it, which a starved stop lets commit
    rows = run("reference", tmp_path, scenarios=[], offsets=[], anchors="event", jobs=1, deadlines=Deadlines())
    event_rows = [r for r in rows if r["offset_kind"] == "event"]
    assert len(rows) == len(event_rows)
    assert len(event_rows) == 48  # 16 event anchors of the 6 scenarios x 3 tool styles
    for r in event_rows:
        where = f"{r['scenario']} {r['offset']} {r['tool_style']}"
        assert r["status"] == "ok", f"{where}: {r['reason']}"
        assert r["tokens_after_stop"] <= 1, where
        assert r["llm_requests_after_stop"] == 0, where
        assert r["effects_leaked"] == 0, where
        assert r["effects_new"] == 0, where  # can abort: nothing sent after the stop (harness/stop_button.py)
        assert r["orphans"] == 0, where
        assert r["threads_left"] == 0, where
        assert r["resume_ok"] is True, where
        assert r["resume_duplicate_effects"] == 0, where
        assert r["egress_attempts"] == 0, where


@pytest.mark.parametrize("bad", ["no_such_adapter", "tests.known_answer.adapters:Nope"])
def test_unknown_adapter_is_a_clear_error(bad, capsys):
    from harness.cli import main

    assert main(["run", "--adapter", bad]) == 2
    assert bad.split(":")[-1] in capsys.readouterr().err


def test_unknown_mode_offset_and_scenario_are_clear_errors(capsys, tmp_path):
    from harness.cli import main

    assert main(["run", "--adapter", "reference", "--mode", "explode", "--out", str(tmp_path)]) == 2
    assert "explode" in capsys.readouterr().err
    assert main(["run", "--adapter", "reference", "--offset", "soon", "--out", str(tmp_path)]) == 2
    assert "soon" in capsys.readouterr().err
    assert main(["run", "--adapter", "reference", "--scenario", "nope", "--out", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err


def test_saga_compensates_the_late_email(tmp_path):
    (row,) = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms"], mitigations=["saga"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_compensated"], row["effects_leaked"]) == (1, 1, 0)
    assert row["mitigation"] == "saga"


def test_idempotency_keys_stop_the_repeat(tmp_path):
    rows = run(KA + "ResumeRepeatsEffect", tmp_path, offsets=["at:400ms"], mitigations=["none", "idempotent"])
    by = {r["mitigation"]: r for r in rows}
    assert by["none"]["resume_duplicate_effects"] == 1
    assert by["idempotent"]["resume_duplicate_effects"] == 0
    assert by["idempotent"]["effect_duplicate_attempts"] == 1  # the repeat reached the world and was refused
    assert by["idempotent"]["effects_committed_total"] == 1


def test_cancelled_call_that_still_commits_is_a_leak(tmp_path):
    (row,) = run(KA + "CancelsEmailInFlight", tmp_path, offsets=["on:effect_received:email"])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_compensated"], row["effects_leaked"]) == (1, 0, 1)


@pytest.mark.parametrize("mitigation", ["saga", "saga+idempotent"])
def test_saga_compensates_a_call_whose_answer_never_came(tmp_path, mitigation):
    """The saga registers the call (with its key) before it leaves and looks the effect up by key."""
    (row,) = run(KA + "CancelsEmailInFlight", tmp_path, offsets=["on:effect_received:email"],
                 mitigations=[mitigation])
    assert row["status"] == "ok", row["reason"]
    assert (row["effects_after_stop"], row["effects_compensated"], row["effects_leaked"]) == (1, 1, 0)


@pytest.mark.slow
def test_shards_merged_are_the_unsharded_run(tmp_path, capsys):
    from harness.cli import main

    kw = {"offsets": ["on:effect_received:email", "on:llm_request:2"], "reps": 2}
    whole = run(KA + "IgnoresStop", tmp_path / "whole", **kw)
    for k in (1, 2):
        run(KA + "IgnoresStop", tmp_path / f"shard{k}", shard=f"{k}/2", **kw)
    assert main(["merge", str(tmp_path / "merged"), str(tmp_path / "shard1"), str(tmp_path / "shard2"),
                 str(tmp_path / "shard1")]) == 0
    assert "4 added, 2 already there" in capsys.readouterr().out  # shard1 given twice: nothing counted twice
    merged, bad = read_rows([raw_file(tmp_path / "merged", "known-ignores-stop")])
    assert not bad and sorted(r["trial_id"] for r in merged) == sorted(r["trial_id"] for r in whole)
    assert main(["compare", str(tmp_path / "whole"), str(tmp_path / "merged")]) == 0
    assert "0 of 1 compared row(s) changed" in capsys.readouterr().out
    assert main(["merge", str(tmp_path / "merged"), str(tmp_path / "nothing")]) == 2
    assert "nothing: no raw/ folder" in capsys.readouterr().err


def test_progress_lines_name_the_mitigation(tmp_path):
    """Two trials that differ only in their mitigation: each progress line says which it ran."""
    import io
    import re

    log = io.StringIO()
    rows = run_matrix(load_adapter(KA + "LeaksOneEmail"), RunOptions(
        adapter=KA + "LeaksOneEmail", out=tmp_path, scenarios=["q3_report"], offsets=["at:50ms"],
        tool_styles=["async"], mitigations=["none", "saga"], deadlines=FAST), log=log)
    assert len(rows) == 2
    cells = sorted(re.sub(r"^\[.*?\] \S+ +", "", line).rsplit(": ", 1)[0] for line in log.getvalue().splitlines()
                   if line.startswith("["))
    assert cells == ["cancel q3_report at:50ms async mitigation saga r0", "cancel q3_report at:50ms async r0"]


def test_files_a_trial_leaves_in_the_temporary_folder_go_with_its_folder(tmp_path):
    """A framework's lock files in the temporary folder (its own, and a child's via $TMPDIR) are the trial's:
    written in its folder, removed with it."""
    import glob
    import tempfile

    (row,) = run(KA + "LeavesTempFiles", tmp_path, offsets=["at:50ms"])
    assert row["status"] == "ok", row["reason"]
    assert glob.glob(f"{tempfile.gettempdir()}/known-*-{row['run_id']}*") == []
