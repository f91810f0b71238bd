"""The matrix: planned once from typed values; shards split it deterministically and completely."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.contract.registry import load_adapter
from harness.scenario import load_scenarios
from harness.tools.mitigation import Mitigation
from harness.trial.runner import RunOptions, plan
from harness.trial.spec import Shard, ShardError


def _ids(opts: RunOptions) -> list[str]:
    scenarios = load_scenarios()
    return [s.trial_id(scenarios[s.scenario].digest) for s in plan(load_adapter("reference"), opts, scenarios)]


def test_shards_are_the_whole_matrix_once_each():
    whole = _ids(RunOptions(adapter="reference", reps=3, mitigations=["none", "saga"]))
    assert len(whole) == 3 * 2 * 3 * 21  # styles x mitigations x reps x the 21 offsets of the 6 scenarios
    shards = [_ids(RunOptions(adapter="reference", reps=3, mitigations=["none", "saga"], shard=f"{k}/4"))
              for k in range(1, 5)]
    merged = [i for s in shards for i in s]
    assert sorted(merged) == sorted(whole) and len(set(merged)) == len(whole)
    assert max(map(len, shards)) - min(map(len, shards)) <= 3  # balanced: one cell (its 3 repetitions) apart
    assert shards[1] == _ids(RunOptions(adapter="reference", reps=3, mitigations=["none", "saga"], shard="2/4"))


def test_offsets_and_mitigations_are_parsed_once_at_the_edge():
    opts = RunOptions(adapter="reference", offsets=["on:token:40"], mitigations=["saga+idempotent"])
    assert opts.offsets[0].is_event and opts.offsets[0].n == 40
    assert opts.mitigations == [Mitigation("saga+idempotent")] and opts.mitigations[0].idempotent


@pytest.mark.parametrize("bad", ["0/2", "3/2", "2", "a/b", "1/0"])
def test_a_bad_shard_is_a_clear_error(bad, capsys, tmp_path):
    with pytest.raises(ShardError, match="expected K/N"):
        Shard.parse(bad)
    assert main(["run", "--adapter", "reference", "--shard", bad, "--out", str(tmp_path)]) == 2
    assert f"--shard {bad!r}" in capsys.readouterr().err
    assert not (tmp_path / "raw").exists()


def test_jobs_auto_adds_trials_while_there_is_room_and_halves_when_stops_are_late_by_habit(monkeypatch):
    from harness.trial import concurrency

    cpu = {"percent": 10.0}
    monkeypatch.setattr(concurrency.psutil, "cpu_percent", lambda interval=None: cpu["percent"])
    monkeypatch.setattr(concurrency.os, "cpu_count", lambda: 2)
    auto = concurrency.Concurrency(None)
    assert (auto.limit, auto.ceiling) == (2, 12)
    for _ in range(12):
        auto.observe({"trigger_delay_ms": 0.3, "offset_kind": "event"})
    assert auto.limit == 12  # the ceiling: 6 per core
    late = {"trigger_delay_ms": 25.0, "offset_kind": "event"}
    auto.observe(late)
    auto.observe(late)
    assert auto.limit == 12 and auto.late == 2  # 2 of the last 12: not yet a habit
    auto.observe(late)
    assert auto.limit == 6 and auto.late == 3  # 3 of the last 15: more than 10% of 20
    auto.observe(late)
    assert auto.limit == 6  # the window starts again after a halving
    cpu["percent"] = 97.0
    auto.observe({"trigger_delay_ms": 0.2, "offset_kind": "event"})
    assert auto.limit == 6  # no room on the CPU: no more
    fixed = concurrency.Concurrency(3)
    fixed.observe({"trigger_delay_ms": 50.0})
    assert fixed.limit == 3 and fixed.late == 1  # counted, never changed


@pytest.mark.parametrize("bad", ["0", "-1", "65", "many", "1.5"])
def test_a_bad_jobs_value_is_a_clear_error(bad, capsys, tmp_path):
    assert main(["run", "--adapter", "reference", "--jobs", bad, "--out", str(tmp_path)]) == 2
    assert f"--jobs {bad!r}" in capsys.readouterr().err


def test_one_time_offset_trial_at_a_time_is_before_its_stop_and_others_fill_the_machine_meanwhile():
    from harness.trial.concurrency import Concurrency, Slot

    c = Concurrency(jobs=4)
    at_work, observing = Slot(False, False), Slot(True, False)
    timed_waiting = Slot(False, True)
    assert c.pick([True, False], []) == 0  # nothing running: the time-offset trial goes first
    assert c.pick([False, True], []) == 1  # time-offset trials go one after another: one as soon as it may
    assert c.pick([True, False], [at_work]) == 0  # trials at work run at the lowest priority: it goes anyway
    assert c.pick([True, True], [timed_waiting]) is None  # one time-offset trial before its stop at a time
    assert c.pick([True, False], [timed_waiting]) == 1  # an event-anchored one fills the machine meanwhile
    assert c.pick([False], [at_work] * 4) is None  # the limit holds
    assert c.pick([True], [at_work, at_work, timed_waiting, observing]) is None


def test_subjects_but_a_time_offset_run_before_its_stop_yield_the_cpu():
    """harness/trial/priority.py: the whole tree, every thread (in a process of its own: not this test's)."""
    import subprocess
    import sys

    script = """
import os, subprocess, threading
from harness.trial.priority import to_background
child = subprocess.Popen(["sleep", "30"])
done = threading.Event()
worker = threading.Thread(target=done.wait)
worker.start()
to_background()
tids = [int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")]
print(len(tids), sorted({os.getpriority(os.PRIO_PROCESS, t) for t in tids}), os.getpriority(os.PRIO_PROCESS, child.pid))
done.set(); worker.join(); child.kill(); child.wait()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(maxsplit=1) == ["2", "[19] 19\n"]


def test_auto_concurrency_halves_on_late_event_stops_only():
    from harness.trial.concurrency import Concurrency

    c = Concurrency(jobs=None)
    c.limit = 4
    for _ in range(5):
        c.observe({"trigger_delay_ms": 400.0, "offset_kind": "time"})  # a slow start(), not the harness
    assert c.limit >= 4 and c.late == 5
    for _ in range(3):
        c.observe({"trigger_delay_ms": 40.0, "offset_kind": "event"})
    assert c.limit == 2 and c.late == 8


def test_anchors_takes_the_event_or_the_time_offsets_of_the_matrix():
    """A second run of the event-anchored trials alone is what `compare --anchors event` compares."""
    whole = set(_ids(RunOptions(adapter="reference")))
    event = set(_ids(RunOptions(adapter="reference", anchors="event")))
    time_ = set(_ids(RunOptions(adapter="reference", anchors="time")))
    assert (len(event), len(time_)) == (3 * 16, 3 * 5)  # styles x the 16 event and 5 time offsets
    assert event | time_ == whole and not event & time_


def test_also_adds_matrices_to_the_run_each_trial_once(tmp_path, capsys):
    from harness.cli import _also
    from harness.trial.runner import plan_all

    scenarios = load_scenarios()
    base = RunOptions(adapter="reference", scenarios=["q3_report"], tool_styles=["async"], reps=1)
    base.also = [_also(base, "--scenario q3_report --tools async --offset on:token:40 --mitigation saga"),
                 _also(base, "--scenario q3_report --tools async --offset on:token:40 --reps 2")]
    ids = [s.trial_id(scenarios[s.scenario].digest) for s in plan_all(load_adapter("reference"), base, scenarios)]
    assert len(ids) == len(set(ids)) == 4 + 1 + 1  # q3_report's 4 offsets; saga at one; its second repetition
    assert ids[4].endswith("|on:token:40|async|saga|0") and ids[5].endswith("|on:token:40|async|none|1")
    assert main(["run", "--adapter", "reference", "--also", "--tools bogus", "--out", str(tmp_path)]) == 2
    assert "--also '--tools bogus'" in capsys.readouterr().err
    assert not (tmp_path / "raw").exists()


def test_a_trial_two_matrices_share_is_in_one_shard_only():
    from harness.cli import _also
    from harness.trial.runner import plan_all

    scenarios = load_scenarios()

    def ids(shard: str | None) -> list[str]:
        base = RunOptions(adapter="reference", scenarios=["q3_report"], reps=2, shard=shard)
        # the orphan matrix's shape: its direct launch with a closing host is a cell of the main matrix
        base.also = [_also(base, "--scenario q3_report --offset on:effect_received:email --tools mcp "
                                 "--mcp-launch direct --mcp-launch launcher --host close --host crash --reps 2")]
        return [s.trial_id(scenarios[s.scenario].digest) for s in plan_all(load_adapter("reference"), base, scenarios)]

    whole = ids(None)
    shards = [ids(f"{k}/3") for k in (1, 2, 3)]
    merged = [i for s in shards for i in s]
    assert len(whole) == len(set(whole)) == 3 * 4 * 2 + 3 * 2  # styles x offsets x reps; + launcher/crash cells
    assert sorted(merged) == sorted(whole)  # each trial in exactly one shard


def test_a_scenario_of_an_agents_built_in_tools_is_planned_only_for_an_adapter_that_has_them():
    """coding_session scripts calls to a coding CLI's shell (`exec_command`): not in the reference's matrix, refused
    when asked for by name; in the matrix of an adapter that declares that tool."""
    from harness.contract.registry import AdapterError

    scenarios = load_scenarios()
    reference = load_adapter("reference")
    assert "coding_session" not in {s.scenario for s in plan(reference, RunOptions(adapter="reference"), scenarios)}
    with pytest.raises(AdapterError, match=r"scenario 'coding_session' scripts calls to an agent's built-in tools "
                                           r"\(exec_command\); adapter 'reference' has none of those"):
        plan(reference, RunOptions(adapter="reference", scenarios=["coding_session"]), scenarios)
    shell = type("WithShell", (reference,), {"agent_tools": ("exec_command",)})
    assert "coding_session" in {s.scenario for s in plan(shell, RunOptions(adapter="reference"), scenarios)}
