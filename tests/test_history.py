"""The version history (issue #22): releases declared in framework.toml, a mode missing from a release is
unsupported there (not failed), and the report's history pages say what changed in which release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.frameworks import FrameworkError, history_matrix, history_runs, load
from harness.results.report import write_report
from tests.test_compare import cells_of
from tests.test_trials import run


def framework(tmp_path: Path, text: str):
    folder = tmp_path / "fw_x"
    folder.mkdir(exist_ok=True)
    (folder / "framework.toml").write_text(text)
    (folder / "constraints.txt").write_text("fw-x==1.3.2\n")
    return load(folder)


def test_a_release_is_installed_in_place_of_the_package_requirement_without_the_pins(tmp_path):
    fw = framework(tmp_path, 'dependencies = ["Fw_X[mcp]>=1.3,<1.4", "other>=2"]\n'
                             '[history]\npackage = "fw-x"\nreleases = ["1.1", "1.2", "1.3"]\n')
    assert fw.install_args("1.2") == ["Fw_X[mcp]==1.2.*", "other>=2"]
    assert fw.install_args()[-2:] == ["-c", str(fw.folder / "constraints.txt")]
    with pytest.raises(FrameworkError, match=r"no history release '0.9' \(releases: 1.1, 1.2, 1.3, or a newer"):
        fw.install_args("0.9")
    assert fw.install_args("1.10") == ["Fw_X[mcp]==1.10.*", "other>=2"]  # one that appeared since: taken


def test_a_release_takes_its_lockstep_packages_and_the_requirements_of_then(tmp_path):
    fw = framework(tmp_path, 'dependencies = ["fw-x==1.3.0", "fw-x-ext[mcp]==1.3.0", "saver>=3.1,<3.2", "mcp<2"]\n'
                             '[history]\npackage = "fw-x"\nreleases = ["1.1", "1.3"]\ntogether = ["fw-x-ext"]\n'
                             '[history.requires]\n"1.1" = ["saver>=2,<2.1", "legacy-dep"]\n')
    assert fw.install_args("1.1") == ["fw-x==1.1.*", "fw-x-ext[mcp]==1.1.*", "mcp<2", "saver>=2,<2.1", "legacy-dep"]
    assert fw.install_args("1.3") == ["fw-x==1.3.*", "fw-x-ext[mcp]==1.3.*", "saver>=3.1,<3.2", "mcp<2"]


def test_new_releases_are_the_stable_minors_newer_than_every_declared_one(tmp_path):
    fw = framework(tmp_path, 'dependencies = ["fw-x>=1.3"]\n[history]\npackage = "fw-x"\nreleases = ["1.2", "1.3"]\n')
    available = ["2.0.0rc1", "1.10.1", "1.10.0", "1.9.0", "1.4.2", "1.4.0", "1.3.5", "1.2.0", "0.9.1"]
    assert fw.history.newer(available) == ["1.4", "1.9", "1.10"]


def test_the_history_matrix_is_framework_x_release_x_shard_and_takes_new_releases(tmp_path):
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "fw_x").mkdir()
    (tmp_path / "adapters" / "fw_x" / "adapter.py").write_text("")
    framework(tmp_path / "adapters", 'dependencies = ["fw-x>=1.3"]\n[history]\npackage = "fw-x"\n'
                                     'releases = ["1.2", "1.3"]\n')
    assert history_runs(tmp_path, "fw-x=1.4") == [("fw-x", "1.2"), ("fw-x", "1.3"), ("fw-x", "1.4")]
    for bad in ("fw-x=1.1", "nope=1.4", "fw-x"):
        with pytest.raises(FrameworkError, match=f"new history release '{bad}'"):
            history_runs(tmp_path, bad)
    jobs = history_matrix(tmp_path, shards=2)["include"]
    assert [(j["adapter"], j["release"], j["shard"], j["of"]) for j in jobs] == [
        ("fw-x", "1.2", 1, 2), ("fw-x", "1.2", 2, 2), ("fw-x", "1.3", 1, 2), ("fw-x", "1.3", 2, 2)]


@pytest.mark.parametrize(("history", "error"), [
    ('package = "nope"\nreleases = ["1.1"]', "history.package: 'nope' is not one of the dependencies"),
    ('package = "fw-x"\nreleases = ["1.1.2"]', "history.releases: expected minor versions"),
    ('package = "fw-x"\nreleases = []', "history.releases: expected minor versions"),
    ('package = "fw-x"\nreleases = ["1.1"]\nwhen = "now"', "history: expected a table with package and releases"),
    ('package = "fw-x"\nreleases = ["1.1"]\ntogether = ["nope"]', "history.together: nope not among the dependencies"),
    ('package = "fw-x"\nreleases = ["1.1"]\n[history.requires]\n"1.0" = ["a"]',
     "history.requires: 1.0 not among the releases"),
])
def test_a_malformed_history_names_the_file_and_the_field(tmp_path, history, error):
    with pytest.raises(FrameworkError, match=error) as e:
        framework(tmp_path, f'dependencies = ["fw-x>=1.3"]\n[history]\n{history}\n')
    assert "framework.toml" in str(e.value)


def test_a_mode_newer_than_the_installed_release_is_skipped_as_unsupported(tmp_path):
    rows = run("tests.known_answer.adapters:NeedsAFutureRelease", tmp_path, offsets=["at:50ms"])
    (row,) = rows
    assert row["status"] == "skipped"
    assert row["reason"].startswith("cancel with async tools: unsupported in pytest ")
    assert row["reason"].endswith(": its primitive came in 999.0")


PROVENANCE = {"python": "3.11.7", "platform": "Linux-x86_64", "git_sha": "0123456789ab"}


def _release(tmp_path: Path, release: str, leaked: int) -> None:
    raw = tmp_path / "results" / "history" / "fw" / release / "raw"
    raw.mkdir(parents=True)
    versions = {"fw": f"{release}.0", "openai": "2.54.0", "mcp": "2.3.0" if release == "1.11" else "1.30.0"}
    rows = [{**r, **PROVENANCE, "trial_id": f"{r['trial_id']}-{release}", "versions": versions}
            for r in cells_of(leaked)]
    (raw / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_history_page_says_what_changed_in_which_release(tmp_path):
    results = tmp_path / "results"
    (results / "raw").mkdir(parents=True)
    headline = [{**r, **PROVENANCE} for r in cells_of(0)]
    (results / "raw" / "fw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in headline))
    for release, leaked in (("1.9", 1), ("1.10", 1), ("1.11", 0)):  # ordered as versions, not as text
        _release(tmp_path, release, leaked)
    write_report(results, results)
    page = (results / "site" / "history" / "fw.html").read_text()
    assert "1.9, 1.10, 1.11" in page
    # the rows behind a change: the trial cells (offset/tool style) whose own value moved, at most four named
    assert ("cancel: leaked changed in 1.11: 1 -&gt; 0 (mean per ok trial 1 -&gt; 0) (p 0.00025; 36 trials of 1.10, "
            "36 of 1.11; 12 cell(s): "
            "on:effect_received:email:1/async 1 -&gt; 0; on:effect_received:email:10/async 1 -&gt; 0; "
            "on:effect_received:email:11/async 1 -&gt; 0; on:effect_received:email:12/async 1 -&gt; 0 (+8 more))"
            ) in page
    assert "108 history rows of fw (3 releases; apart from the headline trials). Generated by `stopbench " \
           "report` from" in page and "(history rows measured at 0123456)" in page
    assert 'Rows: <a href="../../history/fw/1.10/raw/">1.10 rows</a>' in page  # the rows behind it (their folder)
    assert "compensated changed in 1.11: no -&gt; yes" in page
    # a shared dependency that moved with the release is named next to the change it could explain
    assert "(a possible cause):</b> mcp 1.30.0 -&gt; 2.3.0." in page
    assert "changed in 1.10" not in page
    # the versions column names what differs between releases; what every release shared is said once
    assert "every release ran with\nopenai 2.54.0." in page and "<td>fw 1.10.0, mcp 1.30.0</td>" in page
    assert (results / "site" / "history" / "fw-leaked.png").exists()
    index = (results / "site" / "history" / "index.html").read_text()
    assert 'href="fw.html"' in index and "1.9, 1.10, 1.11" in index
    assert 'href="history/index.html"' in (results / "site" / "index.html").read_text()
