"""Evidence (issue #15): every row keeps the ledger behind it, and `stopbench timeline` shows it."""

from __future__ import annotations

import json

from harness.results.evidence import (
    append_evidence,
    evidence_file,
    find_trial,
    merge_evidence,
    pack,
    read_evidence,
    read_runs,
    unpack,
)
from harness.results.site import view
from harness.vocabulary import Event, Mark
from tests.test_cli import stopbench
from tests.test_trials import KA, run


def test_every_row_keeps_its_ledger_and_the_timeline_shows_it(tmp_path):
    rows = run(KA + "LeaksOneEmail", tmp_path, offsets=["at:50ms"], reps=2)
    records = list(read_evidence(evidence_file(tmp_path, rows[0]["adapter"])))
    assert [(r["trial_id"], r["run_id"]) for r in records] == [(r["trial_id"], r["run_id"]) for r in rows]
    events = records[0]["events"]
    names = [e.get("name") for e in events if e["event"] == Event.MARK]
    assert names.count(Mark.STOP_CALLED) == 1 and names[-1] == Mark.REAPED
    committed = [e for e in events if e["event"] == Event.EFFECT_COMMITTED]
    assert len(committed) == 1  # the row's one leaked email, as the ledger had it

    shown = stopbench("timeline", str(tmp_path), rows[0]["run_id"])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    stop = next(i for i, line in enumerate(lines) if "STOP PRESSED" in line)
    assert any("effect_committed (kind=email" in line for line in lines[stop:])


def test_a_cut_last_record_loses_only_itself_and_merge_takes_each_trial_once(tmp_path):
    path = tmp_path / "a" / "evidence" / "x.jsonl.gz"
    append_evidence(path, "t1", "r1", [{"t": 1, "event": "mark", "name": "run_started"}])
    append_evidence(path, "t2", "r2", [])
    path.write_bytes(path.read_bytes()[:-7])  # a killed writer
    assert [r["trial_id"] for r in read_evidence(path)] == ["t1"]
    other = tmp_path / "b" / "evidence" / "x.jsonl.gz"
    append_evidence(other, "t1", "r1", [])
    append_evidence(other, "t3", "r3", [])
    assert merge_evidence([tmp_path / "a", tmp_path / "b"], tmp_path / "m") == {"x.jsonl.gz": 2}
    merged = list(read_evidence(tmp_path / "m" / "evidence" / "x.jsonl.gz"))
    assert [r["trial_id"] for r in merged] == ["t1", "t3"] and merged[0]["events"][0]["name"] == "run_started"
    assert find_trial(tmp_path / "m", "t3")["run_id"] == "r3"


def test_timeline_of_an_unknown_trial_is_a_clear_error(tmp_path):
    append_evidence(tmp_path / "evidence" / "x.jsonl.gz", "t1", "r1", [])
    done = stopbench("timeline", str(tmp_path), "nope")
    assert done.returncode == 2 and "'nope'" in done.stderr
    bare = stopbench("timeline", str(tmp_path / "nowhere"), "t1")
    assert bare.returncode == 2 and "no evidence/ folder" in bare.stderr
    assert json.loads(json.dumps(find_trial(tmp_path, "t1")))["trial_id"] == "t1"


def test_token_runs_are_stored_packed_and_read_back_exactly(tmp_path):
    """Tokens are most of a ledger: a run of one request's tokens is one entry on disk, every event on reading."""
    us = 1000  # a token's time is kept to the microsecond (test_dataset.py): these are, so all read back as written
    events = [{"t": 10, "event": "llm_request", "req": 1}]
    events += [{"t": (100 + 7 * i + i % 3) * us, "event": "token", "req": 1, "i": i} for i in range(50)]
    events += [{"t": 500 * us + 1, "event": "mark", "name": Mark.STOP_CALLED, "data": {}}]
    events += [{"t": (600 + i) * us, "event": "token", "req": 1, "i": 50 + i} for i in range(5)]  # the run goes on
    events += [{"t": 700 * us, "event": "token", "req": 2, "i": 0}, {"t": 701 * us, "event": "token", "req": 1, "i": 9}]
    packed = pack(events)
    assert [e["event"] for e in packed] == ["llm_request", "tokens", "mark", "tokens", "tokens", "tokens"]
    assert unpack(json.loads(json.dumps(packed))) == events
    append_evidence(tmp_path / "e.jsonl.gz", "t1", "r1", events)
    (record,) = read_evidence(tmp_path / "e.jsonl.gz")
    assert record["events"] == events
    shown = [(e["event"], e.get("n"), e.get("after")) for e in view(events)]
    assert shown == [("llm_request", None, None), ("tokens", 50, False), ("mark", None, None),
                     ("tokens", 5, True), ("tokens", 1, True), ("tokens", 1, True)]


def test_read_runs_gives_the_asked_runs_as_read_evidence_does_and_no_other(tmp_path):
    """A reproducer per finding reads a few records of a large file: only those are parsed and unpacked."""
    path = tmp_path / "e.jsonl.gz"
    tokens = [{"t": 10 + i, "event": "token", "req": 1, "i": i} for i in range(5)]
    for n in range(1, 5):
        append_evidence(path, f"t{n}", f"r{n}", [{"t": n, "event": "llm_request", "req": 1}, *tokens])
    everything = {r["run_id"]: r for r in read_evidence(path)}
    assert read_runs(path, {"r2", "r4"}) == {"r2": everything["r2"], "r4": everything["r4"]}
    assert read_runs(path, {"r1x"}) == {} and read_runs(tmp_path / "none.jsonl.gz", {"r1"}) == {}
