"""A bench skips a trial only when its row was measured on the code about to run: the same adapter folder
(adapter_digest) and framework versions. Rows of other code, and rows written before the digest existed, are
rerun, and the run says how many; readers keep the newest row of a trial."""

from __future__ import annotations

import importlib
import io
import json
import shutil
import textwrap
from pathlib import Path

from harness.contract.registry import load_adapter
from harness.results.evidence import find_trial, merge_evidence
from harness.results.rows import merge, raw_file, read_rows
from harness.trial.runner import RunOptions, run_matrix
from harness.trial.staleness import adapter_digest, adapter_files

KNOWN = "tests.known_answer.adapters:LeaksOneEmail"


def _run(out: Path, offsets: list[str]) -> tuple[list[dict], str]:
    log = io.StringIO()
    rows = run_matrix(load_adapter(KNOWN), RunOptions(adapter=KNOWN, scenarios=["q3_report"], offsets=offsets,
                                                      out=out, observe_ms=100), log=log)
    return rows, log.getvalue()


def test_rows_of_other_code_are_rerun_and_counted(tmp_path):
    first, _ = _run(tmp_path, ["at:50ms", "at:60ms", "at:70ms"])
    assert {r["adapter_digest"] for r in first} == {adapter_digest(load_adapter(KNOWN))}
    raw = raw_file(tmp_path, "known-leaks-one-email")
    lines = [json.loads(line) for line in raw.read_text().splitlines()]
    by_offset = {r["offset"]: r for r in lines}
    by_offset["at:50ms"]["adapter_digest"] = "0" * 16  # measured on another adapter folder
    by_offset["at:60ms"]["versions"] = {"httpx": "0.1.0"}  # on another framework release
    del by_offset["at:70ms"]["adapter_digest"]  # written before the digest existed
    raw.write_text("".join(json.dumps(r) + "\n" for r in lines))
    before = tmp_path / "before"
    shutil.copytree(tmp_path / "raw", before / "raw")
    shutil.copytree(tmp_path / "evidence", before / "evidence")

    again, log = _run(tmp_path, ["at:50ms", "at:60ms", "at:70ms"])
    assert sorted(r["offset"] for r in again) == ["at:50ms", "at:60ms", "at:70ms"]
    assert (f"3 planned; 0 current in {raw}; 3 there measured on other code (versions, sources or adapter digest): "
            "run again)\n" in log), log
    assert len(raw.read_text().splitlines()) == 6  # append-only: the old rows stay in the file
    rows, bad = read_rows([raw])
    assert not bad and sorted(r["run_id"] for r in rows) == sorted(r["run_id"] for r in again)
    merged = tmp_path / "merged"
    merge([before, tmp_path], merged)
    assert merge_evidence([before, tmp_path], merged) == {"known-leaks-one-email.jsonl.gz": 3}
    for folder in (tmp_path, merged):  # the evidence of a trial is its newest row's
        assert {find_trial(folder, r["trial_id"])["run_id"] for r in rows} == {r["run_id"] for r in again}

    third, log = _run(tmp_path, ["at:50ms", "at:60ms", "at:70ms"])
    assert third == [] and "measured on other code" not in log and "3 current in" in log


def test_readers_and_merge_keep_the_newest_row_of_a_trial(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    _run(old, ["at:50ms"])
    (row,) = [json.loads(line) for line in raw_file(old, "known-leaks-one-email").read_text().splitlines()]
    newer = {**row, "finished_at": "2999-01-01T00:00:00+00:00", "run_id": "newer"}
    raw_file(new, "known-leaks-one-email").parent.mkdir(parents=True)
    raw_file(new, "known-leaks-one-email").write_text(json.dumps(newer) + "\n")
    merged = tmp_path / "merged"
    assert merge([new, old], merged) == {"known-leaks-one-email.jsonl": {"added": 1, "already there": 1,
                                                                         "unreadable": 0}}
    assert merge([old, new], tmp_path / "other") == {"known-leaks-one-email.jsonl": {"added": 2, "already there": 0,
                                                                                      "unreadable": 0}}
    for folder in (merged, tmp_path / "other"):
        rows, _ = read_rows([raw_file(folder, "known-leaks-one-email")])
        assert [r["run_id"] for r in rows] == ["newer"]


def test_the_digest_covers_the_adapters_code_and_pins_not_its_prose(tmp_path, monkeypatch):
    folder = tmp_path / "acme_digest"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    modes = '[stop_modes]\ncancel = "cancel"\n'
    (folder / "framework.toml").write_text('dependencies = ["httpx"]\n' + modes)
    (folder / "constraints.txt").write_text("httpx==0.28.1\n")
    (folder / "README.md").write_text("# acme\n")
    (folder / "adapter.py").write_text(textwrap.dedent('''
        from harness.contract.adapter import Adapter


        class Acme(Adapter):
            pass
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    cls = importlib.import_module("acme_digest.adapter").Acme
    assert [p.name for p in adapter_files(cls)] == ["__init__.py", "adapter.py", "constraints.txt", "framework.toml"]
    before = adapter_digest(cls)
    (folder / "README.md").write_text("# acme, findings\n")
    (folder / "claims.yaml").write_text("[]\n")
    assert adapter_digest(cls) == before
    for name, text in (("constraints.txt", "httpx==0.28.2\n"),
                       ("framework.toml", 'dependencies = ["httpx>=0.28"]\n' + modes), ("helpers.py", "X = 1\n")):
        (folder / name).write_text(text)
        assert adapter_digest(cls) != before, name
        before = adapter_digest(cls)
