"""A reproducer per trial: `stopbench repro RESULTS TRIAL_ID -o FILE` writes one Python file that a framework's
maintainer runs with only the framework and stopbench installed, to see what a published trial saw.

The file holds the adapter's source, inlined verbatim (its module and the modules of its own folder it imports,
each whole, only their `from __future__` and folder-local imports taken out), the adapter's framework.toml
declarations as class attributes (and its environment, set before the framework is imported); for an adapter
process in another language, its folder's files and the packages it takes from files (stopbench/repro_node.py);
the scenario's YAML, and one trial: the stop button pressed at the published trial's anchor. It ends with the
assert the finding calls for (stopbench.result: StopLied, StopHung, StopFailed, ResumeRepeated, ProcessesLeft),
whose message names what the world saw; the file's docstring quotes the message the published trial gave, its
numbers as measured.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import pprint
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import ADAPTERS
from harness.frameworks import MANIFEST, folder_name, load
from harness.results.evidence import adapter_evidence, find_trial, read_runs
from harness.results.findings import Finding
from harness.results.metrics import TrialView
from harness.results.rows import raw_files, read_rows
from harness.scenario import DEFAULT_SCENARIOS_DIR, load_scenario_file, parse_offset
from stopbench.repro_node import node_adapter, node_adapter_lines, protocol_folder
from stopbench.result import TrialResult

#: finding kind -> (the TrialResult assert that checks it, the exception it raises)
CHECKS = {
    "hang": ("assert_no_hang", "StopHung"),
    "fail": ("assert_no_hang", "StopFailed"),
    "leak": ("assert_stopped", "StopLied"),
    "leaves processes": ("assert_no_processes_left", "ProcessesLeft"),
    "repeats on resume": ("assert_resume_clean", "ResumeRepeated"),
}
KINDS = tuple(CHECKS)
#: the reproducer's first install step: stopbench is installed from its checkout (it is not on the package index)
INSTALL_STOPBENCH = "    pip install -e path/to/stopbench   # its checkout"
TRIPLE = "'" * 3


class ReproError(Exception):
    """No reproducer can be written for that trial; the message says why (exit 2)."""


@dataclass(frozen=True)
class Published:
    """A published trial: its row and what the world saw (TrialResult over its kept evidence)."""

    row: dict[str, Any]
    result: TrialResult
    results: Path


def find(results: Path, trial: str, records: Mapping[str, dict[str, Any]] | None = None) -> Published:
    """The row whose trial_id (or a unique prefix of one) or run_id is `trial`, with its evidence (from `records`,
    run_id -> evidence record, when it holds the run's)."""
    rows = _published_rows(results)
    hits = [r for r in rows if trial in (r["trial_id"], r.get("run_id"))] or \
        [r for r in rows if r["trial_id"].startswith(trial)]
    if len(hits) != 1:
        raise ReproError(f"{trial!r}: {'no' if not hits else len(hits)} trials in {results}/raw with that trial_id "
                         "(or unique prefix) or run_id")
    (row,) = hits
    if records is not None and row["run_id"] in records:
        return _published(results, row, records[row["run_id"]])
    record = None
    for own in adapter_evidence(results, row["adapter"]):  # the adapter's own files first: the others are not read
        record = read_runs(own, {row["run_id"]}).get(row["run_id"]) or record
    record = record or find_trial(results, row["run_id"])
    if record is None:
        raise ReproError(f"{results}/evidence: no evidence kept for trial {row['trial_id']!r} (run {row['run_id']})")
    return _published(results, row, record)


def _published(results: Path, row: dict[str, Any], record: dict[str, Any]) -> Published:
    path = DEFAULT_SCENARIOS_DIR / f"{row['scenario']}.yaml"
    scenario = load_scenario_file(path)
    offset = parse_offset(row["offset"], "offset")
    return Published(row, TrialResult(row, record["events"], TrialView(record["events"], scenario, offset)), results)


def _published_rows(results: Path) -> list[dict[str, Any]]:
    if not (results / "raw").is_dir():
        raise ReproError(f"{results}: no raw/ folder of result rows")
    return _rows(results.resolve(), tuple(p.stat().st_mtime_ns for p in raw_files(results)))


@functools.lru_cache(maxsize=4)
def _rows(results: Path, stamp: tuple[int, ...]) -> list[dict[str, Any]]:
    """The folder's rows, read once while its files stay as they are (`stamp`: their modification times)."""
    rows, _ = read_rows(raw_files(results))
    return rows


def kinds_of(published: Published) -> list[str]:
    """What the trial shows, in KINDS order: each kind whose assert fails on the published trial."""
    return [k for k in KINDS if message(published, k) is not None]


def message(published: Published, kind: str) -> str | None:
    """`Exception: message` the kind's assert raises on the published trial, None when it passes."""
    method, exception = CHECKS[kind]
    try:
        getattr(published.result, method)()
    except AssertionError as e:
        return f"{type(e).__name__}: {e}" if type(e).__name__ == exception else None
    return None


def promise_pattern(promised: str) -> re.Pattern[str]:
    """The promised message as a pattern: its numbers (ms, pids, counts of a timing) and hex ids may differ
    from run to run, every word must not."""
    parts = re.split(r"(\d+(?:\.\d+)?|[0-9a-f]{12,})", promised)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else r"(?:\d+(?:\.\d+)?|[0-9a-f]{12,})"
                              for i, p in enumerate(parts)))


def write_reproducers(results: Path, found: Iterable[Finding], folder: Path) -> dict[str, str]:
    """Each finding's reproducer (its representative trial, its kind) into `folder` as its `reproducer_file`, each
    adapter's evidence read once for all. Returns the file name -> "" when written, else why none could be."""
    found = list(found)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f.trial_id for f in found}
    runs: dict[Path, set[str]] = {}
    for row in _published_rows(results):
        if row["trial_id"] in wanted:
            for path in adapter_evidence(results, row["adapter"]):
                runs.setdefault(path, set()).add(row["run_id"])
    records: dict[str, dict[str, Any]] = {}
    for path, run_ids in sorted(runs.items()):
        records.update(read_runs(path, run_ids))
    out: dict[str, str] = {}
    for f in found:
        try:
            text = reproducer(results, f.trial_id, f.kind, records, folder / f.reproducer_file)
        except ReproError as e:
            out[f.reproducer_file] = str(e)
            continue
        (folder / f.reproducer_file).write_text(text)
        out[f.reproducer_file] = ""
    return out


# --- the adapter's source ----------------------------------------------------------------------------------------

def locate(row: dict[str, Any]) -> tuple[str, str]:
    """(module, class) of the row's adapter, found without importing it (the framework may not be installed here):
    a built-in name is its folder's `adapter` module and its `ADAPTER`, an entry point or `module:Class` as named."""
    ref = str(row.get("adapter_ref") or row["adapter"])
    if ":" not in ref:
        for ep in importlib.metadata.entry_points(group="stopbench.adapters"):
            if ep.name == ref:
                ref = ep.value
                break
    if ":" in ref:
        module, _, cls = ref.partition(":")
        return module, cls
    module = f"{ADAPTERS}.{folder_name(ref)}.adapter"
    tree = ast.parse(_source_path(module).read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ADAPTER" for t in node.targets)
                and isinstance(node.value, ast.Name)):
            return module, node.value.id
    raise ReproError(f"{module}: no `ADAPTER = <class>`")


def _source_path(module: str) -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        raise ReproError(f"adapter module {module}: cannot be found: {e}") from e
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ReproError(f"adapter module {module}: no Python source found")
    return Path(spec.origin)


def inline(module: str) -> list[tuple[str, Path, str]]:
    """(module, file, code) of the adapter's module and of the modules of its own package it imports, those first,
    each verbatim but for its `from __future__` line and its imports of those modules (their names are defined
    above it in the file)."""
    package = module.rpartition(".")[0]
    done: list[tuple[str, Path, str]] = []

    def visit(name: str) -> None:
        if any(m == name for m, _, _ in done):
            return
        path = _source_path(name)
        text = path.read_text()
        lines = text.splitlines(keepends=True)
        drop: set[int] = set()
        for node in ast.parse(text).body:
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.module == "__future__":
                drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
                continue
            target = _absolute(name, node)
            if target and target.rpartition(".")[0] == package and target != name:
                visit(target)
                drop.update(range(node.lineno - 1, node.end_lineno or node.lineno))
        done.append((name, path, "".join(line for i, line in enumerate(lines) if i not in drop)))

    visit(module)
    return done


def _absolute(module: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    base = module.split(".")[: -node.level]
    return ".".join(base + ([node.module] if node.module else [])) or None


def declarations(module: str, cls: str, path: Path) -> dict[str, Any]:
    """What framework.toml declares for the class (as the harness gives it to a class of a framework folder), and
    the framework's name; empty for a class outside a framework folder (it declares itself)."""
    folder = path.parent
    if not (folder / MANIFEST).exists():
        return {}
    framework = load(folder)
    declaration = framework.declaration(module, cls)
    if declaration is None:
        return {}
    return {"framework": framework.name, **declaration.attributes()}


# --- the file ----------------------------------------------------------------------------------------------------

def reproducer(results: Path, trial: str, kind: str | None = None,
               records: Mapping[str, dict[str, Any]] | None = None, written_to: Path | None = None) -> str:
    """The reproducer of trial `trial` in `results`: the assert of `kind` (KINDS), else of the first kind the
    trial shows. `records`: evidence already read (run_id -> record; `find`). `written_to`: the file it goes to,
    which names `results` relative to itself (the same text wherever the two are, together)."""
    published = find(results, trial, records)
    row = published.row
    if row.get("mitigation", "none") != "none":
        raise ReproError(f"{row['trial_id']}: mitigation {row['mitigation']!r}; a reproducer presses the framework's "
                         "own button, without a harness-side mitigation")
    shown = kinds_of(published)
    if kind is not None and kind not in KINDS:
        raise ReproError(f"kind {kind!r}: give one of {', '.join(KINDS)}")
    if kind is None:
        if not shown:
            raise ReproError(f"{row['trial_id']}: the trial shows no leak, hang, failure, processes left or repeated "
                             "effect: nothing to reproduce")
        kind = shown[0]
    promised = message(published, kind)
    if promised is None:
        raise ReproError(f"{row['trial_id']}: the published trial shows no {kind} (it shows: "
                         f"{', '.join(shown) or 'nothing'})")
    versions = row.get("versions") or {}
    folder = protocol_folder(row)
    if folder is not None:
        node = node_adapter(folder)
        adapter = Definition(node_adapter_lines(node, _py), "adapter_class()", [
            INSTALL_STOPBENCH, "    python this_file.py",
            "", f"(and node and npm: the adapter's folder, {node.folder}/, is written next to this file and its",
            "packages installed there once, with `npm ci` on the Node the adapter runs on)"])
    else:
        module, cls = locate(row)
        modules = inline(module)
        install = " ".join(f"{p}=={v}" for p, v in sorted(versions.items()) if v != "not installed")
        adapter = Definition(_python_definition(modules, cls, declarations(module, cls, modules[-1][1])), cls,
                             [INSTALL_STOPBENCH, *([f"    pip install {install}"] if install else []),
                              "    python this_file.py"])
    scenario_path = DEFAULT_SCENARIOS_DIR / f"{row['scenario']}.yaml"
    scenario = load_scenario_file(scenario_path)
    changed = scenario.digest != row.get("scenario_hash", scenario.digest)
    method, exception = CHECKS[kind]
    results = (Path(os.path.relpath(published.results.resolve(), written_to.resolve().parent)) if written_to
               else published.results)
    return _render(row, kind, promised, adapter, scenario_path.read_text(), changed, method, exception,
                   results.as_posix())


@dataclass(frozen=True)
class Definition:
    """How a reproducer holds its adapter: the code that defines it, the expression of its class, and the
    docstring's lines on what to install."""

    code: list[str]
    cls: str
    install: list[str]


def _python_definition(modules: list[tuple[str, Path, str]], cls: str, declared: dict[str, Any]) -> list[str]:
    """The adapter's modules verbatim, its framework's environment set first, its declarations as attributes."""
    root = modules[-1][1].parent
    head: list[str] = []
    env = declared.get("environment") or {}
    if env:
        head += ["# the adapter's [environment] (framework.toml): set before the framework is imported",
                 f"os.environ.update({_py(env)})", ""]
    body: list[str] = []
    for module, path, code in modules:
        shown = path.relative_to(root.parent) if path.is_relative_to(root.parent) else path.name
        body += [f"# {'=' * 100}", f"# {module} ({shown}), verbatim", f"# {'=' * 100}", code.rstrip(), "", ""]
    decl = [f"# {'=' * 100}",
            f"# the declarations of {cls}: {root.name}/{MANIFEST}, as class attributes" if declared else
            f"# {cls} declares itself (no {MANIFEST})", f"# {'=' * 100}"]
    for name, value in declared.items():
        decl.append(f"{cls}.{name} = {_py(value)}")
    return head + body + decl


def _render(row: dict[str, Any], kind: str, promised: str, adapter: Definition, scenario_yaml: str,
            scenario_changed: bool, method: str, exception: str, results: str) -> str:
    where = ", ".join(f"{k} {row[k]}" for k in ("mode", "scenario", "offset", "tool_style"))
    launch = row.get("mcp_launch", "direct")
    host = row.get("host", "close")
    versions = row.get("versions") or {}
    ran = ", ".join(f"{p} {v}" for p, v in sorted(versions.items())) or "no framework packages recorded"
    head = [
        f'"""stopbench reproducer: {row["framework"]} ({row["adapter"]}), {kind}.',
        "",
        f"{where}.",
        *textwrap.wrap(f"The published trial {row['trial_id']} (run {row['run_id']}, {results}/raw) saw, at "
                       f"stopbench {row.get('git_sha', '?')}, with {ran}:", 112, break_on_hyphens=False,
                       break_long_words=False),
        "",
        *textwrap.wrap(promised, 112, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False),
        "",
        "This file runs the same trial: the adapter below (its source, verbatim) runs the scenario against",
        "stopbench's world on 127.0.0.1 (the model and the services it calls, which record everything), the",
        f"stop button `{row['mode']}` is pressed at `{row['offset']}`, and the world's record is checked by",
        f"TrialResult.{method}(), which raises {exception} naming what the world saw (its numbers, like",
        "the milliseconds above, are measured anew).",
        "",
        *adapter.install,
        *(["", "NOTE: the scenario has changed since the trial was measured (its hash differs): this file holds",
           "today's."] if scenario_changed else []),
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "",
    ]
    trial = [
        "",
        f"# {'=' * 100}",
        "# the scenario (scenarios/" + f"{row['scenario']}.yaml) and the trial",
        f"# {'=' * 100}",
        f"SCENARIO = {_py(scenario_yaml)}",
        f"PUBLISHED = {_py(promised)}",
        f"PUBLISHED_VERSIONS = {_py(versions)}",
        "",
        "",
        "def main() -> None:",
        "    import sys",
        "    import tempfile",
        "    from pathlib import Path",
        "",
        "    from stopbench import run_adapter_trial",
        "",
        f"    adapter = {adapter.cls}",
        "    installed = adapter.versions()",
        "    if installed != PUBLISHED_VERSIONS:",
        "        print(f'note: installed {installed}, the published trial ran with {PUBLISHED_VERSIONS}', "
        "file=sys.stderr)",
        "    with tempfile.TemporaryDirectory() as scenarios:",
        f"        (Path(scenarios) / {row['scenario'] + '.yaml'!r}).write_text(SCENARIO)",
        f"        result = run_adapter_trial(adapter, mode={row['mode']!r}, scenario={row['scenario']!r}, "
        f"offset={row['offset']!r},",
        f"                                   tool_style={row['tool_style']!r}, mcp_launch={launch!r}, host={host!r},",
        f"                                   observe_ms={row.get('observe_ms')!r}, scenarios_dir=Path(scenarios))",
        "    print(f\"trial {result['status']}: tokens after the stop {result['tokens_after_stop']}, effects leaked "
        "{result['effects_leaked']}, orphans {result['orphans']}, resume repeated "
        "{result['resume_duplicate_effects']}\", file=sys.stderr)",
        f"    result.{method}()  # raises {exception}; the published trial's: PUBLISHED",
        "    print('not reproduced: the trial shows none of what the published one did', file=sys.stderr)",
        "",
        "",
        'if __name__ == "__main__":',
        "    main()",
        "",
    ]
    return "\n".join(head + adapter.code + trial)


def _py(value: Any) -> str:
    """A Python literal of a declaration (tuples, dicts with tuple keys, strings; stable); a text of several lines
    (the scenario's YAML) as a triple-quoted string when it can be one."""
    if isinstance(value, str):
        if "\n" in value and TRIPLE not in value and "\\" not in value:
            return TRIPLE + "\\\n" + value + TRIPLE
        return json.dumps(value)
    return pprint.pformat(value, width=116, sort_dicts=False)
