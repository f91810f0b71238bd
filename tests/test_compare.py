"""`stopbench compare`: the same table between two result folders, and its refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli import main
from harness.results.rows import SCHEMA_VERSION


def row(i: int, leaked: int, *, offset: str = "on:effect_received:email", scenario_hash: str = "h1",
        version: str = "1.0", schema: int = SCHEMA_VERSION, mitigation: str = "none") -> dict:
    return {
        "schema_version": schema, "trial_id": f"t{i}-{offset}-{leaked}-{version}", "status": "ok",
        "adapter": "fw", "mode": "cancel", "mitigation": mitigation, "scenario": "q3_report",
        "scenario_hash": scenario_hash, "offset": offset, "offset_kind": "event", "tool_style": "async",
        "versions": {"fw": version}, "tokens_after_stop": 0, "llm_requests_after_stop": 0, "effects_new": 0,
        "effects_after_stop": 1, "effects_leaked": leaked, "effects_compensated": 1 - leaked,
        "lie_ms": 100.0 + i, "resume_ok": True, "resume_llm_replays": 0, "resume_duplicate_effects": 0,
        "orphans": 0,
    }


def folder(tmp_path: Path, name: str, rows: list[dict], extra: str = "") -> Path:
    (tmp_path / name / "raw").mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows) + extra
    (tmp_path / name / "raw" / "fw.jsonl").write_text(text)
    return tmp_path / name


def cells_of(leaked: int, cells: int = 12, reps: int = 3, **kw) -> list[dict]:
    """`reps` rows in each of `cells` trial cells (one offset each)."""
    return [row(c * reps + r, leaked, offset=f"on:effect_received:email:{c + 1}", **kw)
            for c in range(cells) for r in range(reps)]


def test_compare_shows_what_changed_over_common_cells(tmp_path, capsys):
    old = folder(tmp_path, "old", cells_of(1) + [row(99, 1, offset="on:token:40")])
    new = folder(tmp_path, "new", cells_of(0, version="1.1"))
    assert main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "fw 1.0 -> 1.1" in out
    assert "left out: 1 old row(s), 0 new row(s)" in out  # on:token:40 only exists on the old side
    (line,) = [x for x in out.splitlines() if x.startswith("| fw | cancel | none")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3] == "36 -> 36"
    assert cells[8] == "**no -> yes** (p 0.00025)"  # compensated: every cell changed (p at its resolution)
    assert cells[11] == "**1 -> 0** (p 0.00025)"  # leaked
    assert cells[4] == "= yes"  # can abort: unchanged
    assert "1 of 1 compared row(s) changed in a count or a verdict (p < 0.001); 0 more differ" in out


def test_compare_tells_a_race_from_a_change(tmp_path, capsys):
    """One repetition of one cell of twelve differs (a framework's race with the stop): within the spread,
    not a change; the same difference in one cell's every repetition is not one either (3 vs 3 cannot
    show it), in five cells it is."""
    old = cells_of(0)
    raced = cells_of(0)
    raced[4] = {**raced[4], "effects_leaked": 1, "effects_compensated": 0}
    assert main(["compare", str(folder(tmp_path, "old", old)), str(folder(tmp_path, "raced", raced))]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("| fw | cancel | none")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[8] == "~ yes -> partly (35/36) (p 1)"
    assert "0 of 1 compared row(s) changed in a count or a verdict (p < 0.001); 1 more differ" in out
    worse = [{**r, "effects_leaked": 1, "effects_compensated": 0} if i < 15 else r for i, r in enumerate(old)]
    assert main(["compare", str(tmp_path / "old"), str(folder(tmp_path, "worse", worse))]) == 0
    out = capsys.readouterr().out
    assert "**yes -> partly (21/36)** (p 0.00025)" in out and "1 of 1 compared row(s) changed" in out


def test_compare_agrees_with_itself(tmp_path, capsys):
    rows = [row(i, leaked=i % 2) for i in range(4)]
    old, new = folder(tmp_path, "old", rows), folder(tmp_path, "new", rows)
    assert main(["compare", str(old), str(new), "--to", str(tmp_path / "cmp.md")]) == 0
    text = (tmp_path / "cmp.md").read_text()
    assert "0 of 1 compared row(s) changed" in text and "**" not in text.split("\n| fw")[1]


def test_compare_refuses_other_schema(tmp_path, capsys):
    old = folder(tmp_path, "old", [row(0, 1)])
    new = folder(tmp_path, "new", [row(0, 1), row(1, 1, schema=SCHEMA_VERSION + 1)])
    assert main(["compare", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert f"{new}/raw/fw.jsonl:2" in err and "schema_version" in err


def test_compare_refuses_other_scenario_version(tmp_path, capsys):
    old = folder(tmp_path, "old", [row(0, 1)])
    new = folder(tmp_path, "new", [row(0, 1, scenario_hash="h2")])
    assert main(["compare", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert "q3_report" in err and "h1" in err and "h2" in err


def test_compare_names_a_missing_folder_and_lists_corrupt_lines(tmp_path, capsys):
    old = folder(tmp_path, "old", [row(0, 1)], extra="{not json\n")
    assert main(["compare", str(old), str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no raw/ folder" in capsys.readouterr().err
    new = folder(tmp_path, "new", [row(0, 0)])
    assert main(["compare", str(old), str(new)]) == 0
    assert f"{old}/raw/fw.jsonl:2" in capsys.readouterr().out


def test_can_abort_names_the_anchor_where_work_went_on():
    import pandas as pd

    from harness.results.capability import capability_row

    rows = [row(i, 0) for i in range(3)]
    rows[1]["effects_new"] = 1
    rows[1]["offset"] = "on:effect_received:calendar"
    assert capability_row(pd.DataFrame(rows))["can abort"] == "no (1/3: q3_report on:effect_received:calendar)"
    assert capability_row(pd.DataFrame([row(i, 0) for i in range(3)]))["can abort"] == "yes"


def test_compare_over_event_anchors_only_leaves_time_offsets_out(tmp_path, capsys):
    def timed(leaked: int) -> list[dict]:
        return [{**row(100 + c * 3 + r, leaked=leaked, offset=f"at:{c + 1}0ms"), "offset_kind": "time",
                 "effects_compensated": 1 - leaked} for c in range(12) for r in range(3)]

    old = folder(tmp_path, "old", cells_of(0) + timed(1))
    new = folder(tmp_path, "new", cells_of(0) + timed(0))
    assert main(["compare", str(old), str(new)]) == 0
    assert "1 of 1 compared row(s) changed" in capsys.readouterr().out  # the time-offset trials leaked less
    assert main(["compare", str(old), str(new), "--anchors", "event"]) == 0
    out = capsys.readouterr().out
    assert "36 old, 36 new (event-anchored trials only)" in out and "0 of 1 compared row(s) changed" in out


def test_agree_counts_cells_whose_repetitions_disagree(tmp_path, capsys):
    """12 cells x 3 repetitions; one cell's repetitions split on tokens after the stop, another's on the
    status (a hang is a disagreement too): 10 of 12 agree, each field names its cells."""
    rows = cells_of(0)
    rows[1] = {**rows[1], "tokens_after_stop": 4}
    rows[7] = {**rows[7], "status": "hung", "reason": "'stop' overran 5s"}
    rows.append({**row(500, 0, offset="on:token:9"), "offset_kind": "event"})  # one repetition: nothing to agree
    rows.append({**row(501, 1, offset="at:150ms"), "offset_kind": "time"})
    folder(tmp_path, "run", rows)
    assert main(["agree", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "10 of 12 trial cells (83.3%)" in out
    assert "| fw | 12 | 10 (83%) | status 1, tokens+ 1 |" in out
    assert main(["agree", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no raw/ folder" in capsys.readouterr().err


def crashed(rows: list[dict]) -> list[dict]:
    """The same trials with a host that crashed after the stop (the orphan matrix): no close, no resume."""
    return [{**r, "trial_id": r["trial_id"] + "|host:crash", "host": "crash", "resume_ok": None,
             "resume_duplicate_effects": None, "orphans": None, "crash_orphans": 1} for r in rows]


def test_agree_keeps_a_host_crash_cell_apart_from_the_closing_hosts(tmp_path, capsys):
    """A host crash trial shares its cell's scenario, offset and tool style but measures other fields: its
    repetitions are a cell of their own (3 crash repetitions of one cell: 13 cells, all agree)."""
    rows = cells_of(0)
    folder(tmp_path, "run", rows + crashed(rows[:3]))
    assert main(["agree", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "13 of 13 trial cells (100.0%)" in out and "| fw | 13 | 13 (100%) | - | - |" in out


def test_compare_reads_the_main_matrix_and_names_the_orphan_matrix_left_out(tmp_path, capsys):
    rows = cells_of(0)
    old = folder(tmp_path, "old", rows)
    deaf = [{**r, "trial_id": r["trial_id"] + "|deaf", "tool_style": "mcp", "mcp_launch": "deaf"} for r in rows[:3]]
    new = folder(tmp_path, "new", rows + crashed(rows[:3]) + deaf)
    assert main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("| fw | cancel | none")]
    assert [c.strip() for c in line.strip("|").split("|")][3] == "36 -> 36"
    assert "the orphan matrix (MCP launch variants, host crash) is not compared: 0 old, 6 new row(s)" in out
    assert "0 of 1 compared row(s) changed in a count or a verdict (p < 0.001); 0 more differ" in out


def test_compare_without_the_report_extra_says_what_to_install(tmp_path, capsys, monkeypatch):
    """Run where pandas is missing (a framework's bench environment): exit code 2 and the extra to install, no
    traceback."""
    rows = [row(0, 1)]
    old, new = folder(tmp_path, "old", rows), folder(tmp_path, "new", rows)
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ModuleNotFoundError
    assert main(["compare", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert "stopbench compare: error: needs pandas" in err and "pip install -e '.[report]'" in err
