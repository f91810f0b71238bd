"""The published dataset: rows and evidence as Parquet read back exactly as their JSON Lines, rows of the oldest
published format migrated once, a dataset of an unknown version refused by name, the report the same from both."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import main as cli
from harness.results import dataset
from harness.results.evidence import append_evidence, evidence_files, find_trial, read_evidence, read_runs
from harness.results.migrations import ADDED_IN_3, MIGRATIONS, OLDEST, migrate
from harness.results.publish import MANIFEST, PublishError, check, publish
from harness.results.rows import append_row, raw_files, read_rows
from harness.results.schema import SCHEMA_VERSION
from tests.test_trials import KA, run

OLDEST_ROWS = Path(__file__).parent / "data" / "oldest_rows.jsonl"  # six published rows of the 68-field kind


def _folder(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    folder = tmp_path / name
    for row in rows:
        append_row(folder / "raw" / f"{row['adapter']}.jsonl", row)
    return folder


def _oldest() -> list[dict]:
    return [json.loads(line) for line in OLDEST_ROWS.read_text().splitlines()]


def _facts(rows: list[dict]) -> dict[str, tuple]:
    return {r["mode"]: (r["schema_version"], r["tool_style"], r["mcp_launch"], r["failed_step"],
                        *(r[name] for name in ADDED_IN_3)) for r in rows}


#: what the oldest rows say once migrated (by mode): 1 -> 2 the launch out of `mcp+<launch>`, the step out of the
#: reason; 2 -> 3 the fields added since, as rows written before them read (no tokens unread where tokens were
#: counted, the provider's bill stopped at the disconnect, no server, no census, no usage of the framework's own,
#: the model counting results and asking nothing again, nothing else known)
BEFORE_3 = (None, None, "stops_at_disconnect")
NOT_SERVED = ("openai", "in-process", None, None, None, None, None, None, None, None, None, None, None,
              "count_results", 0)
OLDEST_FACTS = {"break": (3, "sync", "direct", None, *BEFORE_3, 0, None, *NOT_SERVED),
                "abort_signal": (3, "sync", "direct", None, *BEFORE_3, None, None, *NOT_SERVED),
                "terminate": (3, "mcp", "direct", "stop", *BEFORE_3, 0, None, *NOT_SERVED),
                "task_cancel": (3, "mcp", "launcher", None, *BEFORE_3, 0, None, *NOT_SERVED),
                "break_sync": (3, "mcp", "launcher", None, *BEFORE_3, None, None, *NOT_SERVED),
                "token": (3, "mcp", "launcher", "stop", *BEFORE_3, 0, None, *NOT_SERVED)}


def test_rows_of_the_oldest_published_kind_go_through_every_migration_and_read(tmp_path):
    oldest = _oldest()
    assert {len(r) for r in oldest} == {68} and {r["schema_version"] for r in oldest} == {OLDEST}
    assert sorted(MIGRATIONS) == list(range(OLDEST, SCHEMA_VERSION))  # one migration per version step
    assert _facts([migrate(dict(r)) for r in oldest]) == OLDEST_FACTS
    folder = _folder(tmp_path, "old", oldest)
    rows, bad = read_rows(raw_files(folder))
    assert bad == [] and _facts(rows) == OLDEST_FACTS
    publish(folder)
    stored = dataset.read_rows(folder / "raw" / "google-adk.parquet")  # migrated when published, not when read
    assert _facts(stored) == {mode: OLDEST_FACTS[mode] for mode in ("break", "abort_signal")}
    assert pq.read_schema(folder / "raw" / "google-adk.parquet").metadata[b"stopbench"].count(b'"schema_version": 3')


def test_a_version_1_row_written_with_the_fields_of_version_3_keeps_their_values():
    """Rows a stopbench wrote after those fields existed but before the version was bumped: measured, not guessed."""
    measured = {"metrics_digest": "abc", "stop_delivery_ms": 4.5, "billing_profile": "runs_to_completion",
                "tokens_unread_after_stop": 7, "effects_in_flight_client_gone": 1, "provider": "gemini",
                "serve_path": "starlette-sse", "client_stop": "disconnect", "served_stop_seen_ms": 12.5,
                "served_run_ended": True, "served_run_ended_ms": 40.0, "exit_status": 130, "survivors_5s": 2,
                "survivors_30s": 1, "survivors_30s_rss_bytes": 4096, "survivors_30s_cpu_s": 0.5,
                "usage_reported_tokens": 30, "usage_unreported_tokens": 12, "model_rule": "retry_interrupted_tools",
                "model_retries": 1}
    assert sorted(measured) == sorted(ADDED_IN_3)
    row = migrate({**_oldest()[0], **measured})
    assert row["schema_version"] == 3 and {name: row[name] for name in ADDED_IN_3} == measured


def _rows_of_every_kind() -> list[dict]:
    """Rows whose fields are constant, varying, mixed int and float, objects, null and absent."""
    rows = []
    for i, row in enumerate(_oldest() * 2):
        row = {**row, "trial_id": f"{row['trial_id']}#{i}", "orphan_cpu_s": [0, 0.25, None][i % 3],
               "versions": {"pkg": f"1.{i % 2}"}, "cpus": 2}
        if i % 4 == 0:
            row.pop("seed")
        rows.append(row)
    return rows


def test_jsonl_to_dataset_to_rows_gives_the_same_rows_and_evidence(tmp_path):
    folder = _folder(tmp_path, "run", _rows_of_every_kind())
    events = [{"t": 100, "event": "mark", "name": "run_started", "data": {"b": 1, "a": [1, 2]}},
              *({"t": 200 + 7 * k + k % 2, "event": "token", "req": 1, "i": k} for k in range(5)),
              {"t": 300, "event": "effect_received", "kind": "email", "req": "x", "sent_t": 290, "args": {}}]
    append_evidence(folder / "evidence" / "google-adk.jsonl.gz", "t1", "r1", events)
    append_evidence(folder / "evidence" / "google-adk.jsonl.gz", "t2", "r2", [], {"subject.log": "a\nb"})
    before, _ = read_rows(raw_files(folder))
    records = list(read_evidence(folder / "evidence" / "google-adk.jsonl.gz"))
    published = tmp_path / "published"
    publish(folder, published)
    assert [p.name for p in raw_files(published)] == ["agent-framework.parquet", "autogen.parquet",
                                                       "google-adk.parquet", "langgraph.parquet"]
    after, bad = read_rows(raw_files(published))
    assert bad == [] and after == before and len(after) == 12
    assert [list(r) for r in after] == [sorted(r) for r in after]  # keys in the order the lines write them
    assert sum("seed" not in r for r in after) == 3  # absent stays absent
    kinds = [type(r["orphan_cpu_s"]).__name__ for r in after]  # an int stays an int in a column of floats
    assert kinds == [type(r["orphan_cpu_s"]).__name__ for r in before] and sorted(set(kinds)) == [
        "NoneType", "float", "int"]
    meta = json.loads(pq.read_schema(published / "raw" / "agent-framework.parquet").metadata[b"stopbench"])
    assert meta["constant"]["cpus"] == 2 and "cpus" not in pq.read_schema(published / "raw" /
                                                                           "agent-framework.parquet").names
    assert list(read_evidence(published / "evidence" / "google-adk.parquet")) == records
    assert records[1]["output"] == {"subject.log": "a\nb"} and "output" not in records[0]  # what it printed, kept
    assert read_runs(published / "evidence" / "google-adk.parquet", {"r1"}) == {"r1": records[0]}
    assert find_trial(published, "t2") == records[1]


B4DA, ADK = "b4da36406c98932a607f76f6571a4c6652810f57", "994ec9e8d1571b7a84ba555c64520f111a3e2ceb"


def test_the_manifest_lists_files_counts_hashes_and_commits_and_catches_a_changed_file(tmp_path):
    folder = _folder(tmp_path, "run", _oldest())
    publish(folder)
    listed = json.loads((folder / MANIFEST).read_text())
    assert (listed["format_version"], listed["schema_version"]) == (dataset.FORMAT_VERSION, SCHEMA_VERSION)
    assert [(f["path"], f["rows"], f["commits"]) for f in listed["files"]] == [
        ("raw/agent-framework.parquet", 2, [B4DA]), ("raw/autogen.parquet", 1, [B4DA]),
        ("raw/google-adk.parquet", 2, [ADK]), ("raw/langgraph.parquet", 1, [B4DA])]
    assert check(folder) == []
    with (folder / "raw" / "autogen.parquet").open("ab") as f:
        f.write(b"x")
    assert check(folder) == [f"{folder}/raw/autogen.parquet: sha256 differs from {folder}/{MANIFEST}'s"]


def _newer(path: Path, **change) -> None:
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"stopbench"])
    pq.write_table(table.replace_schema_metadata({b"stopbench": json.dumps({**meta, **change}).encode()}), path)


@pytest.mark.parametrize("change, says", [({"format_version": dataset.FORMAT_VERSION + 1},
                                           f"dataset format_version {dataset.FORMAT_VERSION + 1}; this stopbench reads "
                                           f"format {dataset.FORMAT_VERSION} and older"),
                                          ({"schema_version": SCHEMA_VERSION + 1},
                                           f"schema_version {SCHEMA_VERSION + 1}; this stopbench reads rows up to "
                                           f"version {SCHEMA_VERSION}")])
def test_a_dataset_of_an_unknown_version_is_refused_by_name_with_exit_code_2(tmp_path, capsys, change, says):
    folder = _folder(tmp_path, "run", _oldest())
    publish(folder)
    for path in folder.glob("raw/*.jsonl"):
        path.unlink()
    newer = folder / "raw" / "autogen.parquet"
    _newer(newer, **change)
    with pytest.raises(dataset.DatasetError, match=re.escape(f"{newer}: {says}")):
        read_rows(raw_files(folder))
    assert cli(["compare", str(folder), str(folder)]) == 2
    assert f"stopbench compare: error: {newer}: {says}" in capsys.readouterr().err


def test_a_manifest_of_a_newer_format_is_refused(tmp_path):
    folder = _folder(tmp_path, "run", _oldest())
    publish(folder)
    (folder / MANIFEST).write_text(json.dumps({"format_version": dataset.FORMAT_VERSION + 1, "files": []}))
    assert check(folder) == [f"{folder}/{MANIFEST}: dataset format_version {dataset.FORMAT_VERSION + 1}; this "
                             f"stopbench reads format {dataset.FORMAT_VERSION} and older (upgrade stopbench to read "
                             "it)"]


def test_publish_refuses_a_run_with_an_unreadable_line_and_removes_nothing(tmp_path, capsys):
    folder = _folder(tmp_path, "run", _oldest())
    with (folder / "raw" / "autogen.jsonl").open("a") as f:
        f.write("{cut\n")
    with pytest.raises(PublishError, match=re.escape(f"{folder}/raw/autogen.jsonl:2: not valid JSON")):
        publish(folder)
    assert cli(["publish", str(folder), "--remove-working"]) == 2
    assert f"{folder}/raw/autogen.jsonl:2" in capsys.readouterr().err
    assert sorted(p.name for p in (folder / "raw").iterdir()) == [
        "agent-framework.jsonl", "agent-framework.parquet", "autogen.jsonl", "google-adk.jsonl",
        "langgraph.jsonl"]  # every line stays; the file published before the bad one is rewritten on the next try


def test_rows_a_run_adds_after_publishing_are_read_with_the_dataset_and_win_their_trial(tmp_path):
    oldest = _oldest()
    folder = _folder(tmp_path, "run", oldest[:3])
    assert cli(["publish", str(folder), "--remove-working"]) == 0
    append_row(folder / "raw" / "google-adk.jsonl", {**oldest[0], "finished_at": "2099-01-01T00:00:00+00:00",
                                                     "status": "hung"})
    rows, _ = read_rows(raw_files(folder))
    assert [(r["mode"], r["status"]) for r in rows] == [("terminate", "hung"), ("abort_signal", "skipped"),
                                                       ("break", "hung")]  # was ok in the dataset


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A small run of real trials (rows and evidence), as JSON Lines and as a published dataset."""
    base = tmp_path_factory.mktemp("measured")
    run(KA + "LeaksOneEmail", base / "jsonl" / "results", offsets=["at:50ms"], reps=2)
    run(KA + "ResumeRepeatsEffect", base / "jsonl" / "results", offsets=["on:effect_committed:email"], reps=1)
    shutil.copytree(base / "jsonl", base / "dataset")
    assert cli(["publish", str(base / "dataset" / "results"), "--remove-working"]) == 0
    return base


def test_a_bench_on_a_fresh_clone_runs_only_the_trials_the_dataset_has_no_row_for(measured, tmp_path):
    clone = tmp_path / "results"
    shutil.copytree(measured / "dataset" / "results", clone)
    assert run(KA + "LeaksOneEmail", clone, offsets=["at:50ms"], reps=2) == []  # both published
    assert [r["rep"] for r in run(KA + "LeaksOneEmail", clone, offsets=["at:50ms"], reps=3)] == [2]


def test_the_dataset_holds_the_run_and_nothing_else(measured):
    folder = measured / "dataset" / "results"
    assert sorted(p.name for p in raw_files(folder) + evidence_files(folder)) == [
        "known-leaks-one-email.parquet", "known-leaks-one-email.parquet", "known-resume-repeats.parquet",
        "known-resume-repeats.parquet"]


def test_the_report_from_the_dataset_is_the_report_from_the_json_lines(measured, monkeypatch):
    def report(side: str) -> dict[str, bytes]:
        monkeypatch.chdir(measured / side)
        assert cli(["report", "results", "--to", "out"]) == 0
        return {p.relative_to("out").as_posix(): p.read_bytes() for p in sorted(Path("out").rglob("*"))
                if p.is_file()}

    from_lines, from_dataset = report("jsonl"), report("dataset")
    assert sorted(from_lines) == sorted(from_dataset) and len(from_lines) > 20
    assert [name for name in from_lines if from_lines[name] != from_dataset[name]] == []
    page = from_dataset["site/buttons/known-leaks-one-email--cancel.html"]
    assert b'(rows: <a href="../../../results/raw/">raw/known-leaks-one-email</a>)' in page  # the folder, either kind


def test_timeline_and_repro_of_a_published_trial_are_those_of_its_lines(measured, capsys):
    trial = "known-resume-repeats"
    outputs = {}
    for side in ("jsonl", "dataset"):
        folder = measured / side / "results"
        (row,) = [r for r in read_rows(raw_files(folder))[0] if r["adapter"] == trial]
        assert cli(["timeline", str(folder), row["trial_id"]]) == 0
        timeline = capsys.readouterr().out
        written = measured / side / "repro.py"  # it names the folder relative to itself: `results` on both sides
        assert cli(["repro", str(folder), row["run_id"], "-o", str(written)]) == 0
        capsys.readouterr()
        repro = written.read_text()
        outputs[side] = (timeline, repro)
    assert outputs["jsonl"] == outputs["dataset"]
    assert "=== STOP PRESSED ===" in outputs["dataset"][0] and "ResumeRepeated" in outputs["dataset"][1]


def test_merge_takes_a_published_folder_and_adds_its_rows_to_the_lines(tmp_path, capsys):
    oldest = _oldest()
    published = _folder(tmp_path, "published", oldest)
    assert cli(["publish", str(published), "--remove-working"]) == 0
    out = _folder(tmp_path, "out", oldest[:1])
    assert cli(["merge", str(out), str(published)]) == 0
    assert sorted(p.name for p in (out / "raw").iterdir()) == [
        "agent-framework.jsonl", "autogen.jsonl", "google-adk.jsonl", "langgraph.jsonl"]
    assert f"{out}/raw/google-adk.jsonl: 1 added, 1 already there, 0 unreadable" in capsys.readouterr().out
    merged = {r["trial_id"]: r for r in read_rows(raw_files(out))[0]}
    assert len(merged) == 6 and merged == {r["trial_id"]: r for r in read_rows(raw_files(published))[0]}


def test_publishing_unchanged_rows_again_writes_the_same_bytes(tmp_path):
    folder = _folder(tmp_path, "run", _rows_of_every_kind())
    publish(folder)
    first = (folder / MANIFEST).read_bytes()
    for path in folder.glob("raw/*.jsonl"):
        path.unlink()
    publish(folder)  # from the dataset alone: a republish that measured nothing new changes no file
    assert (folder / MANIFEST).read_bytes() == first


def test_rederive_derives_a_published_dataset_again_and_keeps_its_manifest_true(measured, tmp_path):
    from harness.results.metrics import metrics_digest
    from harness.results.publish import write_manifest
    from harness.results.rederive import rederive

    folder = tmp_path / "results"
    shutil.copytree(measured / "dataset" / "results", folder)
    path = folder / "raw" / "known-leaks-one-email.parquet"
    rows = dataset.read_rows(path)
    dataset.write_rows(path, [{**r, "metrics_digest": "older", "tokens_total": -1} for r in rows])  # older code
    write_manifest(folder)
    done = rederive(folder)
    assert (done.rows, done.rederived, done.changed, dict(done.fields)) == (3, 3, 2, {"tokens_total": 2})
    assert dataset.read_rows(path) == [{**r, "metrics_digest": metrics_digest()} for r in rows]
    assert [p.name for p in raw_files(folder)] == [
        "known-leaks-one-email.parquet", "known-resume-repeats.parquet"]  # rewritten in place, no lines added
    assert check(folder) == []  # the manifest's hash is the new file's


def test_a_tokens_time_is_kept_to_the_microsecond_and_every_other_events_to_the_nanosecond(tmp_path):
    """Lines written before token times were rounded are published rounded; both kinds of file then agree."""
    import gzip

    events = [{"t": 1_000_000_123, "event": "mark", "name": "run_started"},
              {"t": 1_000_200_499, "event": "token", "req": 1, "i": 0},
              {"t": 1_000_200_500, "event": "token", "req": 1, "i": 1},
              {"t": 1_000_300_007, "event": "effect_received", "kind": "email"},
              {"t": 999_999_999, "event": "mark", "name": "late_stamp"},  # a mark stamped before the line before
              {"t": 1_003_999_999, "event": "token", "req": 2, "i": 0}]
    old = tmp_path / "run" / "evidence" / "fw.jsonl.gz"  # as an older stopbench wrote it: every time in ns
    old.parent.mkdir(parents=True)
    old.write_bytes(gzip.compress((json.dumps({"trial_id": "t1", "run_id": "r1", "events": events}) + "\n").encode()))
    (tmp_path / "run" / "raw").mkdir()
    kept = [1_000_000_123, 1_000_200_000, 1_000_201_000, 1_000_300_007, 999_999_999, 1_004_000_000]
    (as_written,) = read_evidence(old)  # read as its published file will be
    assert [e["t"] for e in as_written["events"]] == kept
    assert read_runs(old, {"r1"}) == {"r1": as_written}
    publish(tmp_path / "run")
    (record,) = read_evidence(tmp_path / "run" / "evidence" / "fw.parquet")
    assert [e["t"] for e in record["events"]] == kept and record == as_written
    append_evidence(tmp_path / "new" / "evidence" / "fw.jsonl.gz", "t1", "r1", events)
    assert list(read_evidence(tmp_path / "new" / "evidence" / "fw.jsonl.gz")) == [record]


def test_an_evidence_file_reads_its_token_times_in_the_unit_it_was_written_in(tmp_path, monkeypatch):
    """A file keeps its token unit (token_time_ns) in its metadata: one written at another unit reads as written."""
    events = [{"t": 1_000_000_123, "event": "mark", "name": "run_started"},
              {"t": 1_000_204_999, "event": "token", "req": 1, "i": 0},
              {"t": 1_000_215_000, "event": "token", "req": 1, "i": 1},
              {"t": 1_000_300_007, "event": "effect_received", "kind": "email"}]
    path = tmp_path / "fw.parquet"
    monkeypatch.setattr(dataset, "TOKEN_TIME_NS", 10_000)
    dataset.write_evidence(path, [{"trial_id": "t1", "run_id": "r1", "events": events}])
    monkeypatch.undo()
    (record,) = dataset.read_evidence(path)
    assert [e["t"] for e in record["events"]] == [1_000_000_123, 1_000_200_000, 1_000_220_000, 1_000_300_007]


T0 = 1_000_000_000_000  # a ledger's clock, in ns


def _ledger() -> list[dict]:
    ms = 1_000_000
    return [{"t": T0, "event": "mark", "name": "run_started", "data": None},
            {"t": T0 + 1 * ms, "event": "llm_request", "req": 1, "api": "chat", "stream": True},
            {"t": T0 + 10_400_000, "event": "token", "req": 1, "i": 0},  # nothing near: to the ms
            {"t": T0 + 19_700_000, "event": "token", "req": 1, "i": 1},  # the anchor's time (in data) at 19.8
            {"t": T0 + 20_200_000, "event": "token", "req": 1, "i": 2},  # rounds to 20.0: nothing between
            {"t": T0 + 20_300_000, "event": "mark", "name": "stop_called",
             "data": {"anchor_t": T0 + 19_800_000}},
            {"t": T0 + 20_400_000, "event": "token", "req": 1, "i": 3},  # would round across the stop
            {"t": T0 + 30_800_000, "event": "token", "req": 1, "i": 4},  # rounds onto the settle mark's time
            {"t": T0 + 31 * ms, "event": "mark", "name": "settle", "data": {"deadline_at": T0 + 30_600_000}}]


def test_a_published_token_is_kept_to_the_millisecond_unless_a_moment_of_its_ledger_lies_between():
    """Known answer (dataset.as_published): each token to the ms, but where an event's time or a time in an event's
    data (the anchor's, a deadline) lies between its time and that ms, inclusive; applied twice, the same."""
    published = dataset.as_published(_ledger())
    assert [e["t"] - T0 for e in published if e["event"] == "token"] == [
        10_000_000, 19_700_000, 20_000_000, 20_400_000, 30_800_000]
    assert [e for e in published if e["event"] != "token"] == [e for e in _ledger() if e["event"] != "token"]
    assert dataset.as_published(published) == published
    assert dataset.moments(_ledger()) == [T0 + x for x in (0, 1_000_000, 19_800_000, 20_300_000, 30_600_000,
                                                          31_000_000)]


def _streamed_ledger() -> list[dict]:
    ms = 1_000_000
    tok = [{"t": T0 + t * ms // 10, "event": "token", "req": req, "i": i, **more}
           for t, req, i, more in [(100, 1, 0, {}), (120, 1, 1, {}), (130, 1, 2, {}), (150, 1, 3, {}), (170, 1, 4, {}),
                                   (190, 1, 5, {}), (200, 1, 6, {}), (210, 2, 0, {}), (220, 1, 7, {}),
                                   (230, 1, 8, {}), (240, 1, 9, {"unread": True}), (260, 1, 10, {"unread": True})]]
    return [{"t": T0, "event": "mark", "name": "run_started", "data": None},
            {"t": T0 + 1 * ms, "event": "llm_request", "req": 1, "api": "chat", "stream": True},
            *tok[:5],
            {"t": T0 + 18 * ms, "event": "mark", "name": "stop_called", "data": {"anchor_t": T0 + 17_500_000}},
            *tok[5:]]


def test_a_run_of_tokens_is_one_line_of_evidence_read_back_spread_between_its_first_and_last(tmp_path):
    """Known answer (dataset.token_runs, as_published, the format 2 file): tokens next to each other, of one
    request, numbered in turn, with the same keys and no moment between them are a run; published, the tokens
    inside a run lie evenly between its first and last; the file holds a line per run and gives the published
    events back; what the site's timeline shows of them is what it showed of the tokens as measured."""
    from harness.results.site import view

    events = _streamed_ledger()
    assert dataset.token_runs(events) == [(2, 7), (8, 10), (11, 13), (13, 15)]
    published = dataset.as_published(events)
    assert [(e["t"] - T0) // 1000 for e in published if e["event"] == "token"] == [
        10_000, 11_750, 13_500, 15_250, 17_000, 19_000, 20_000, 21_000, 22_000, 23_000, 24_000, 26_000]
    assert dataset.as_published(published) == published
    path = tmp_path / "fw.parquet"
    record = {"trial_id": "t1", "run_id": "r1", "events": published}
    dataset.write_evidence(path, [record])
    assert pq.read_metadata(path).num_rows == 8  # 3 other events, 4 runs, req 2's token
    assert list(dataset.read_evidence(path)) == [record]
    assert view(published) == view(events)


def test_a_run_of_tokens_not_where_spread_puts_them_is_kept_token_by_token(tmp_path):
    """A record kept as measured (publish could not check it) is written losslessly: its tokens one line each."""
    events = _streamed_ledger()
    path = tmp_path / "fw.parquet"
    dataset.write_evidence(path, [{"trial_id": "t1", "run_id": "r1", "events": events}])
    assert pq.read_metadata(path).num_rows == 12  # tokens 3 and 4 of req 1's first run break it: kept one by one
    assert list(dataset.read_evidence(path)) == [{"trial_id": "t1", "run_id": "r1", "events": events}]


def test_an_evidence_file_of_format_1_reads_as_it_was_written(tmp_path):
    """Format 1 kept every token on its own line (no `n`, `span`): its known lines read back as their events."""
    import pyarrow as pa

    lines = {"record": [0, 0, 0, 0], "trial_id": ["t1"] * 4, "run_id": ["r1"] * 4,
             "dt": [5_000_000_123, 200, 1, 299_884], "event": ["mark", "token", "token", "effect_received"],
             "req": [None, 1, 1, None], "i": [None, 0, 1, None],
             "rest": ['{"name":"run_started"}', None, None, '{"kind":"email"}'], "extra": [None] * 4}
    types = {"record": pa.int64(), "dt": pa.int64(), "req": pa.int64(), "i": pa.int64()}
    table = pa.table({k: pa.array(v, type=types.get(k, pa.string())) for k, v in lines.items()})
    meta = {"format_version": 1, "kind": "evidence", "records": 1, "token_time_ns": 1000, "token_round_ns": 10**6}
    pq.write_table(table.replace_schema_metadata({b"stopbench": json.dumps(meta).encode()}), tmp_path / "fw.parquet")
    (record,) = dataset.read_evidence(tmp_path / "fw.parquet")
    assert record["events"] == [{"t": 5_000_000_123, "event": "mark", "name": "run_started"},
                                {"t": 5_000_200_000, "event": "token", "req": 1, "i": 0},
                                {"t": 5_000_201_000, "event": "token", "req": 1, "i": 1},
                                {"t": 5_000_300_007, "event": "effect_received", "kind": "email"}]


def test_publish_rounds_a_trial_s_tokens_only_where_its_every_measure_derives_the_same(monkeypatch):
    """published_events checks the rounding against the metrics: with the moments left out (a moment the rule did
    not know of), the token after the stop would round before it and tokens_after_stop would move: the record is
    kept as measured."""
    from harness.results.metrics import compute
    from harness.results.publish import Rounding, published_events
    from harness.scenario import load_scenarios, parse_offset

    scenarios = load_scenarios()
    row = {"scenario": "q3_report", "scenario_hash": scenarios["q3_report"].digest, "offset": "at:20ms"}
    measured = compute(_ledger(), scenarios["q3_report"], parse_offset("at:20ms"))
    assert measured["tokens_after_stop"] == 2
    done = Rounding()
    assert published_events(_ledger(), row, scenarios, done) == dataset.as_published(_ledger())
    assert published_events(_ledger(), None, scenarios, done) == _ledger()  # no row: nothing to check it against
    monkeypatch.setattr(dataset, "moments", lambda events: [])
    assert published_events(_ledger(), row, scenarios, done) == _ledger()
    assert (done.rounded, done.kept) == (1, 2)


def test_a_published_streamed_run_has_its_token_times_rounded_and_derives_the_same(tmp_path, capsys):
    """The reference streams q3_report's answers: published, its tokens are a few runs (a line of evidence each, far
    fewer than the tokens), and every row derives the same from them (rederive changes nothing)."""
    from harness.results.rederive import rederive

    folder = tmp_path / "results"
    run("reference", folder, offsets=["on:token:40", "on:effect_received:email"], tool_styles=["async"])
    assert cli(["publish", str(folder), "--remove-working"]) == 0
    said = capsys.readouterr().err
    assert "runs of tokens as their count, first and last time in 2 trial(s), as measured in 0" in said
    (path,) = evidence_files(folder)
    events = [e for r in read_evidence(path) for e in r["events"]]
    tokens = sum(e["event"] == "token" for e in events)
    assert tokens > 60 and pq.read_metadata(path).num_rows < len(events) - tokens + tokens / 5
    done = rederive(folder)
    assert (done.rows, done.rederived, done.changed) == (2, 2, 0)
