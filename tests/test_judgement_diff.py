"""`stopbench compare OLD NEW --judgements`: planted summaries whose moved judgements are known."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.migrate_summary import migrate


def summary(best: list[tuple[str, str]], abort_word: str, claim: str, extra_claim: bool = False) -> dict:
    buttons = [{"adapter": a, "mode": m, "ranked": True, "time_judged": 2,
                "shares": {"did_not_stop": {"k": 0, "n": 9, "lo": 0.0, "hi": 0.3},
                           "nothing_to_stop": {"k": 1, "n": 10}}} for a, m in (("fw", "a"), ("fw", "b"))]
    claims = [{"id": "c1", "rule": "stops_effects_in_flight", "verdict": claim}]
    if extra_claim:
        claims.append({"id": "c2", "rule": "only_these_stop", "verdict": "partly"})
    return {"format": 2, "scorecard": [{"framework": "fw", "best_set": [list(b) for b in best], "buttons": buttons}],
            "capability_verdicts": {"fw/a": {"can abort": {"word": abort_word, "text": abort_word}},
                                    "fw/b": {"can abort": {"word": "yes", "text": "yes"}}},
            "claims": claims}


def write(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(data))
    return folder


def test_every_moved_judgement_is_listed_with_its_cause(tmp_path, capsys):
    old = write(tmp_path / "old", summary([("fw", "b")], "yes", "refuted"))
    new = write(tmp_path / "new", summary([("fw", "a"), ("fw", "b")], "no", "confirmed", extra_claim=True))
    assert main(["compare", str(old), str(new), "--judgements"]) == 0
    out = capsys.readouterr().out
    assert "4 judgement(s) moved" in out
    rows = [line for line in out.splitlines() if line.startswith("| fw") or line.startswith("| claim")]
    assert [r.split(" | ")[:3] for r in rows] == [
        ["| fw: best button", "fw/b", "fw/a = fw/b"], ["| fw/a: can abort", "yes", "no"],
        ["| claim c1", "refuted", "confirmed"], ["| claim c2", "-", "partly"]]
    assert "1 trial(s) with nothing left to stop left out; 2 time-anchored trial(s)" in rows[1]
    assert "cancel reached the tool's request before the service committed" in rows[2]


def test_a_summary_of_verdicts_as_text_is_refused_until_migrated(tmp_path, capsys):
    text_era = {"scorecard": [{"framework": "fw", "best": {"adapter": "fw", "mode": "b"}, "buttons": []}],
                "capability": [{"adapter": "fw", "mode": "a", "N": 9, "can abort": "no (3/9: 3 hung in stop); "
                                "hangs (3/9)", "state kept": "partly (2/3)", "tokens+": "-"}],
                "claims": []}
    old = write(tmp_path / "old", text_era)
    new = write(tmp_path / "new", summary([("fw", "b")], "yes", "refuted"))
    assert main(["compare", str(old), str(new), "--judgements"]) == 2
    assert "format 1 (verdicts as text); migrate it once" in capsys.readouterr().err
    migrated = migrate(text_era)
    assert migrated["capability_verdicts"] == {"fw/a": {
        "can abort": {"word": "no", "text": "no (3/9: 3 hung in stop); hangs (3/9)"},
        "state kept": {"word": "partly", "text": "partly (2/3)"}}}
    assert migrated["scorecard"][0]["best_set"] == [["fw", "b"]] and migrated["format"] == 2


def test_a_button_new_in_the_report_and_rows_measured_again_are_named_as_causes(tmp_path, capsys):
    old_data = summary([("fw", "b")], "yes", "refuted")
    old_data["capability_verdicts"]["fw/a"]["can abort"]["text"] = "yes (0/9)"
    old_data["trials"] = {"rows": 20}
    new_data = summary([("fw", "b")], "no", "refuted")
    new_data["trials"] = {"rows": 30}
    new_data["scorecard"].append({"framework": "cli", "best_set": [["cli", "sigint"]], "buttons": []})
    new_data["capability_verdicts"]["cli/sigint"] = {"can abort": {"word": "no", "text": "no (1/5)"}}
    old, new = write(tmp_path / "old", old_data), write(tmp_path / "new", new_data)
    assert main(["compare", str(old), str(new), "--judgements"]) == 0
    out = capsys.readouterr().out
    assert "The two reports read different rows (20 of the main and orphan matrices, then 30)" in out
    rows = {r.split(" | ")[0][2:]: r.split(" | ")[1:] for r in out.splitlines() if r.startswith(("| fw", "| cli"))}
    assert rows["cli: best button"] == ["-", "cli/sigint", "new in this report: the old one has no rows of it |"]
    assert rows["cli/sigint: can abort"] == ["-", "no (1/5)", "new in this report: the old one has no rows of it |"]
    assert rows["fw/a: can abort"][:2] == ["yes (0/9)", "no"]
    assert rows["fw/a: can abort"][2].startswith("its rows were measured again; 1 trial(s) with nothing left")


def test_a_resume_verdict_that_moved_with_the_model_rule_names_it(tmp_path, capsys):
    old_data = summary([("fw", "b")], "yes", "refuted")  # written before rules: its model counted results
    new_data = summary([("fw", "b")], "no", "refuted")
    new_data["model_rules"] = {"retry_interrupted_tools": 30}
    for data, word in ((old_data, "no"), (new_data, "yes")):
        data["capability_verdicts"]["fw/a"]["repeats effect"] = {"word": word, "text": word}
    old, new = write(tmp_path / "old", old_data), write(tmp_path / "new", new_data)
    assert main(["compare", str(old), str(new), "--judgements"]) == 0
    rows = {r.split(" | ")[0][2:]: r.split(" | ")[3] for r in capsys.readouterr().out.splitlines()
            if r.startswith("| fw/a")}
    assert rows["fw/a: repeats effect"].startswith(
        "the world's model rule changed from count_results to retry_interrupted_tools (`retry_interrupted_tools`: a "
        "tool result that reads as interrupted")
    assert rows["fw/a: repeats effect"].endswith("; 1 trial(s) with nothing left to stop left out |")
    assert "model rule" not in rows["fw/a: can abort"]
