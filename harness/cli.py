"""stopbench: what an agent framework really does when its user presses stop.

Commands: run | report | compare | repro | findings | agree | merge | list | reap | world | new-adapter | test-adapter
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

import harness
from harness.billing import FORMS
from harness.contract.registry import AdapterError
from harness.providers import PROVIDERS
from harness.results.dataset import DatasetError
from harness.results.repetitions import DEFAULT_REPS_RULE, REPS_RULES
from harness.scenario import ANCHOR_KINDS, DEFAULT_OBSERVE_MS, DEFAULT_SCENARIOS_DIR, MAX_OBSERVE_MS, ScenarioError
from harness.tools.mcp_launch import LAUNCHES
from harness.tools.mitigation import MitigationError
from harness.trial.spec import HOSTS, ShardError

MAX_JOBS = 64


class UsageError(Exception):
    """Bad arguments: exit 2 with the message."""


def cmd_world(args: argparse.Namespace) -> int:
    from harness.world.server import main as serve_world

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: give 0 (any free port) to 65535")
    try:
        return serve_world(["--port", str(args.port), "--scenarios", args.scenarios])
    except OSError as e:
        raise UsageError(f"--port {args.port}: cannot listen on 127.0.0.1:{args.port} ({e.strerror or e})") from e


def cmd_run(args: argparse.Namespace) -> int:
    from harness.contract.registry import load_adapter
    from harness.results.rows import OutputError
    from harness.trial.runner import RunOptions, run_matrix
    from harness.trial.spec import Deadlines

    if args.reps < 1:
        raise UsageError(f"--reps {args.reps}: must be at least 1")
    if args.jobs != "auto" and not (args.jobs.isdigit() and 1 <= int(args.jobs) <= MAX_JOBS):
        raise UsageError(f"--jobs {args.jobs!r}: give a number from 1 to {MAX_JOBS}, or auto")
    jobs = None if args.jobs == "auto" else int(args.jobs)
    if args.observe_ms is not None and not 0 <= args.observe_ms <= MAX_OBSERVE_MS:
        raise UsageError(f"--observe-ms {args.observe_ms:g}: give milliseconds from 0 to {MAX_OBSERVE_MS:g}")
    adapter_cls = load_adapter(args.adapter)
    opts = RunOptions(
        adapter=args.adapter, modes=args.mode or [], scenarios=args.scenario or [], offsets=args.offset or [],
        tool_styles=args.tools or [], mitigations=args.mitigation or ["none"], reps=args.reps, jobs=jobs,
        out=Path(args.out), scenarios_dir=Path(args.scenarios), start_method=args.start_method,
        deadlines=Deadlines(), seed=args.seed, keep_workdirs=args.keep_workdirs, shard=args.shard,
        observe_ms=args.observe_ms, anchors=args.anchors or "all", mcp_launches=args.mcp_launch or ["direct"],
        hosts=args.host or ["close"], serve_paths=args.serve or ["in-process"], reps_rule=args.reps_rule,
        providers=args.provider or [],
        billing=args.billing,
    )
    opts.also = [_also(opts, text) for text in args.also or []]
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped by CI or nox: same as Ctrl-C
    try:
        run_matrix(adapter_cls, opts)
    except KeyboardInterrupt:
        return 130
    except OutputError as e:
        raise UsageError(str(e)) from e
    return 0


def _matrix_parser(prog: str) -> argparse.ArgumentParser:
    """The options that make a matrix (`run`'s, and each `--also`'s)."""
    p = argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False)
    p.add_argument("--mode", action="append", help="stop mode (repeatable; default: every mode)")
    p.add_argument("--scenario", action="append", help="scenario name (repeatable; default: all)")
    p.add_argument("--offset", action="append", help="offset (repeatable; default: the scenario's own)")
    p.add_argument("--tools", action="append", choices=["sync", "async", "mcp"],
                   help="tool style (repeatable; default: every style the adapter supports)")
    p.add_argument("--mitigation", action="append", choices=["none", "saga", "idempotent", "saga+idempotent"],
                   help="harness-side mitigation (repeatable; default: none)")
    p.add_argument("--mcp-launch", action="append", choices=LAUNCHES,
                   help="how the MCP server is launched, for MCP tools (repeatable; default: direct): a launcher "
                        "chain that does not forward signals, a server deaf to the end of stdin, one that also "
                        "ignores SIGTERM (harness/tools/mcp_launch.py)")
    p.add_argument("--host", action="append", choices=HOSTS,
                   help="what the app hosting the agent does after the stop (repeatable; default: close): "
                        "close (resume, then close()) or crash (SIGKILLed without cleanup; what outlives it is "
                        "watched for the observation window, then reaped)")
    p.add_argument("--serve", action="append", metavar="PATH",
                   help="serve the run and stop it from a client (repeatable; default: in-process, no server): "
                        "starlette-sse (the client disconnects), starlette-sse+cancel (the page calls the cancel "
                        "endpoint), starlette-sse+browser (the chat page's Stop in headless Chromium aborts the "
                        "fetch); harness/trial/serve/paths.py")
    p.add_argument("--provider", action="append", choices=list(PROVIDERS),
                   help="the model provider the adapter's client talks to (repeatable; default: the adapter's home "
                        "provider, the first it declares); the adapter must declare it (`providers` in its "
                        "framework.toml)")
    p.add_argument("--billing", metavar="PROFILE",
                   help=f"what the provider bills after a streamed answer's client left, in place of each scenario's "
                        f"`billing:` ({FORMS}; harness/billing.py)")
    p.add_argument("--anchors", choices=ANCHOR_KINDS,
                   help="only event-anchored trials (a second run to compare with `compare --anchors event`), or only "
                        "time-offset ones (default: all; an --also matrix: the run's)")
    p.add_argument("--reps", type=int, default=1)
    return p


def _also(base, text: str):
    """One `--also` matrix: the run's options with its own matrix options (a bad one: exit 2 naming it); its
    providers, billing profile and anchors are the run's unless it names its own."""
    import dataclasses
    import shlex

    try:
        a = _matrix_parser("--also").parse_args(shlex.split(text))
    except (argparse.ArgumentError, ValueError) as e:
        raise UsageError(f"--also {text!r}: {e}") from e
    if a.reps < 1:
        raise UsageError(f"--also {text!r}: --reps {a.reps}: must be at least 1")
    return dataclasses.replace(base, modes=a.mode or [], scenarios=a.scenario or [], offsets=a.offset or [],
                               tool_styles=a.tools or [], mitigations=a.mitigation or ["none"], reps=a.reps,
                               mcp_launches=a.mcp_launch or ["direct"], hosts=a.host or ["close"],
                               serve_paths=a.serve or base.serve_paths,
                               providers=a.provider or base.providers, billing=a.billing or base.billing,
                               anchors=a.anchors or base.anchors, also=[])


def cmd_report(args: argparse.Namespace) -> int:
    from harness.results.report import write_report
    from harness.results.rows import raw_files, read_rows

    out = Path(args.dir)
    if not (out / "raw").is_dir():
        raise UsageError(f"{out}: no raw/ folder of result rows (run `stopbench run --out {out}` first)")
    to = Path(args.to) if args.to else out
    try:
        to.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--to {to}: cannot write the report there ({e.strerror or e})") from e
    from harness.results.counterparts import CounterpartError
    from stopbench.repro import write_reproducers

    try:
        written = write_report(out, to, reproduce=write_reproducers)
    except CounterpartError as e:  # raised before the report deletes or writes anything
        raise UsageError(str(e)) from e
    for path in written:
        print(path)
    _, bad = read_rows(raw_files(out))
    if bad:  # the report is written, and lists them; the exit code says the rows behind it are not all there
        for line in bad:
            print(f"stopbench report: unreadable result line skipped: {line}", file=sys.stderr)
        return 2
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.results.compare import CompareError, compare
    from harness.results.judgement_diff import JudgementDiffError, compare_judgements

    try:
        if args.judgements:
            text = compare_judgements(Path(args.old), Path(args.new))
        else:
            text = compare(Path(args.old), Path(args.new), args.anchors, args.adapter)
    except (CompareError, JudgementDiffError) as e:
        raise UsageError(str(e)) from e
    if args.to:
        Path(args.to).write_text(text)
        print(args.to)
    else:
        print(text)
    return 0


def cmd_rederive(args: argparse.Namespace) -> int:
    from harness.results.rederive import rederive

    folder = Path(args.dir)
    if not (folder / "raw").is_dir():
        raise UsageError(f"{folder}: no raw/ folder of result rows")
    print(rederive(folder).text())
    return 0


def cmd_repro(args: argparse.Namespace) -> int:
    from stopbench.repro import ReproError, reproducer

    try:
        text = reproducer(Path(args.dir), args.trial, args.kind, written_to=Path(args.out))
    except ReproError as e:
        raise UsageError(str(e)) from e
    try:
        Path(args.out).write_text(text)
    except OSError as e:
        raise UsageError(f"-o {args.out}: cannot write the reproducer there ({e.strerror or e})") from e
    print(args.out)
    return 0


def cmd_findings(args: argparse.Namespace) -> int:
    from harness.results.findings import UpstreamError, findings, findings_text
    from harness.results.report import load

    folder = Path(args.dir)
    if not (folder / "raw").is_dir():
        raise UsageError(f"{folder}: no raw/ folder of result rows")
    df, _ = load(folder)
    try:
        found = findings(df)
    except UpstreamError as e:
        raise UsageError(str(e)) from e
    written: dict[tuple[str, str, str], str] = {}
    if args.reproducers:
        from stopbench.repro import write_reproducers

        out = Path(args.reproducers)
        why = write_reproducers(folder, found, out)
        for f in found:
            if why[f.reproducer_file]:
                print(f"stopbench findings: no reproducer for {f.adapter} {f.mode} {f.kind}: {why[f.reproducer_file]}",
                      file=sys.stderr)
            else:
                written[(f.adapter, f.mode, f.kind)] = str(out / f.reproducer_file)
    print(findings_text(found, written))
    return 0


def cmd_agree(args: argparse.Namespace) -> int:
    from harness.results.agreement import report

    folder = Path(args.dir)
    if not (folder / "raw").is_dir():
        raise UsageError(f"{folder}: no raw/ folder of result rows")
    if args.reps_rule:
        from harness.results.reps_rule_effect import report as rule_report

        print(rule_report(folder))
        return 0
    print(report(folder, args.anchors))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.results.rows import MergeError, merge

    try:
        summary = merge([Path(s) for s in args.sources], Path(args.out))
    except MergeError as e:
        raise UsageError(str(e)) from e
    for name, counts in sorted(summary.items()):
        print(f"{args.out}/raw/{name}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    from harness.results.evidence import merge_evidence

    for name, n in sorted(merge_evidence([Path(s) for s in args.sources], Path(args.out)).items()):
        print(f"{args.out}/evidence/{name}: {n} added")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from harness.results.publish import PublishError, check, publish

    folder = Path(args.dir)
    if args.check:
        problems = check(folder)
        for problem in problems:
            print(f"stopbench publish: {problem}", file=sys.stderr)
        return 2 if problems else 0
    try:
        done = publish(folder, Path(args.to) if args.to else None)
    except PublishError as e:
        raise UsageError(str(e)) from e
    for path in [*done.written, done.manifest]:
        print(path)
    print(f"stopbench publish: token times to the millisecond and runs of tokens as their count, first and last "
          f"time in {done.rounding.rounded} trial(s), as measured in "
          f"{done.rounding.kept} (a measure would have moved, or no row to check)", file=sys.stderr)
    if args.remove_working:
        for path in done.working:
            path.unlink()
            print(f"removed {path} (the dataset holds its rows)", file=sys.stderr)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    from harness.results.evidence import find_trial, timeline

    folder = Path(args.dir)
    if not (folder / "evidence").is_dir():
        raise UsageError(f"{folder}: no evidence/ folder (rows measured before evidence was kept have none)")
    record = find_trial(folder, args.trial)
    if record is None:
        raise UsageError(f"{args.trial!r}: no trial with that trial_id (or a unique prefix of one) or run_id "
                         f"in {folder}/evidence/")
    print(timeline(record))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from harness.contract.registry import available_adapters, builtin_frameworks, load_adapter
    from harness.frameworks import Declaration
    from harness.scenario import load_scenarios
    from harness.world.model_api import tokens_per_turn

    declared = {name: f.adapter for name, f in builtin_frameworks().items() if f.adapter is not None}
    print("adapters:")
    for name in available_adapters():
        try:
            cls: type | Declaration = load_adapter(name)
        except AdapterError as e:
            if name not in declared:
                print(f"  {name}: not available here ({str(e).split(';')[-1].strip()})")
                continue
            # not installed here: what its framework.toml declares, read without importing the framework
            cls = declared[name]
            why = str(e).split(";")[-1].strip()
            print(f"  {name}  [not installed here: {why}]  tools: {', '.join(cls.tool_styles)}")
        else:
            versions = ", ".join(f"{k} {v}" for k, v in cls.versions().items()) or "no framework"
            print(f"  {name}  [{versions}]  tools: {', '.join(cls.tool_styles)}")
        for mode, primitive in cls.stop_modes.items():
            print(f"    stop {mode:<20} {primitive}")
        print(f"    resume: {cls.resume_primitive or 'none'}")
    print("scenarios:")
    for name, s in load_scenarios(Path(args.scenarios)).items():
        print(f"  {name} ({s.digest}): tokens per turn {tokens_per_turn(s)}")
        print(f"    offsets: {', '.join(o.text for o in s.offsets)}")
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    """End what stopbench left running: processes whose owner (the runner that started them) is gone, and
    their temporary folders. A live run's processes are listed and left alone (`--all` ends them too)."""
    import shutil
    import signal

    from harness import owner

    ended = kept = 0
    verb = "would end" if args.dry_run else "ending"
    for pid, who, cmd in owner.processes():
        if who.alive and not args.all:
            kept += 1
            print(f"left alone {pid} ({who.kind} of runner {who.runner_pid}, which is running): {cmd[:100]}")
            continue
        ended += 1
        print(f"{verb} {pid} ({who.kind}{'' if who.alive else ', its runner is gone'}): {cmd[:100]}")
        if not args.dry_run:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    for folder in owner.stale_workroots():
        print(f"{'would remove' if args.dry_run else 'removing'} {folder} (its runner is gone)")
        if not args.dry_run:
            shutil.rmtree(folder, ignore_errors=True)
    if not ended and not kept:
        print("nothing of stopbench is running")
    if args.check and ended:
        print(f"stopbench reap --check: {ended} process(es) of stopbench were left running after the run",
              file=sys.stderr)
        return 1
    return 0


def cmd_new_adapter(args: argparse.Namespace) -> int:
    """Into the checkout's adapters/ (found by name from then on), or into `--dir` (loaded by import path). An
    installed stopbench (a built wheel, not `pip install -e`) has no adapters/ of the user's: it refuses to write
    into site-packages and says what to do instead."""
    from harness.contract.registry import ADAPTERS_DIR
    from harness.contract.skeleton import write_skeleton
    from harness.frameworks import folder_name

    module = folder_name(args.name)
    if args.dir is None and harness.PACKAGE != "harness":
        raise UsageError(
            f"stopbench is installed as a package ({Path(harness.__file__).parent.parent}), and a new adapter does "
            "not belong in it: the next install would remove it. To add a framework to stopbench, install your "
            f"checkout editable (`pip install -e .` in it), then `stopbench new-adapter {args.name}` writes "
            f"adapters/{module}/ there. For an adapter of your own: `stopbench new-adapter {args.name} --dir DIR`, "
            f"then `PYTHONPATH=DIR stopbench test-adapter {module}.adapter:ADAPTER`.")
    folder = Path(args.dir) if args.dir else ADAPTERS_DIR
    try:
        written = write_skeleton(args.name, folder)
    except (ValueError, FileExistsError) as e:
        raise UsageError(str(e)) from e
    for path in written:
        print(path)
    found_by_name = folder.resolve() == ADAPTERS_DIR.resolve()
    test = (f"stopbench test-adapter {args.name}" if found_by_name
            else f"PYTHONPATH={folder} stopbench test-adapter {module}.adapter:ADAPTER")
    print(f"next: {test}   (then fill in the TODOs)")
    return 0


def install_extra(extra: str) -> str:
    """How to add one of stopbench's extras: it is installed from its checkout (it is not on the package index)."""
    return f"`pip install -e '.[{extra}]'` in your stopbench checkout"


#: what of the 'test' extra the contract tests themselves need (an adapter's own packages are its dependencies)
CONTRACT_TESTS_NEED = ("pytest", "pytest-timeout")


def cmd_test_adapter(args: argparse.Namespace) -> int:
    """The shared contract tests under pytest; arguments after the adapter go to pytest as they are."""
    missing = [p for p in missing_of_extra("test") if p in CONTRACT_TESTS_NEED]
    if missing:
        raise UsageError(f"the contract tests run under pytest, from stopbench's 'test' extra (missing: "
                         f"{', '.join(missing)}): install it with {install_extra('test')}")
    import pytest

    return pytest.main(["-p", f"{harness.PACKAGE}.testing.plugin", "--pyargs", f"{harness.PACKAGE}.testing",
                        "--adapter", args.adapter, *args.pytest_args])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stopbench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"stopbench {harness.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run trials for one adapter and append rows to OUT/raw/",
                       parents=[_matrix_parser("run")])
    r.add_argument("--adapter", required=True, help="built-in name, entry-point name or package.module:Class")
    r.add_argument("--also", action="append", metavar="'MATRIX OPTIONS'",
                   help="another matrix of the same adapter in the same run, its --mode .. --reps given as one "
                        "argument (repeatable; e.g. --also '--scenario q3_report --mitigation saga'): one world, "
                        "one queue, no pause between matrices; every other option is the run's")
    r.add_argument("--reps-rule", choices=list(REPS_RULES), default=DEFAULT_REPS_RULE,
                   help="which repetitions run: " + "; ".join(f"{k}: {v}" for k, v in REPS_RULES.items())
                   + " (harness/results/repetitions.py)")
    r.add_argument("--jobs", default="1", help="trials at work side by side: a number, or auto (as many as the CPU "
                   "and the stops' precision allow); trials that only observe after a stop run beside these "
                   "(see harness/trial/concurrency.py)")
    r.add_argument("--shard", metavar="K/N", help="run only shard K of N of the matrix (deterministic; the N shards "
                   "together are the whole matrix)")
    r.add_argument("--observe-ms", type=float, metavar="MS",
                   help=f"observation floor: each trial stays alive and observed at least this long after the stop "
                        f"and after resume (default: the scenario's observe_ms, else {DEFAULT_OBSERVE_MS:g})")
    r.add_argument("--out", default="results")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--start-method", choices=["fork", "spawn"], default="fork")
    r.add_argument("--keep-workdirs", action="store_true", help="keep each trial's temp folder")
    r.add_argument("--scenarios", default=str(DEFAULT_SCENARIOS_DIR))
    r.set_defaults(func=cmd_run)

    rp = sub.add_parser("report", help="tables and plots from DIR/raw/ (JSON Lines, or the published dataset)")
    rp.add_argument("dir", nargs="?", default="results")
    rp.add_argument("--to", help="write the report here (default: DIR)")
    rp.set_defaults(func=cmd_report)

    cp = sub.add_parser("compare", help="the capability table of two result folders side by side")
    cp.add_argument("old", help="a result folder (with raw/), e.g. results of framework 1.1")
    cp.add_argument("new", help="another result folder, e.g. results of framework 1.2")
    cp.add_argument("--to", help="write the Markdown here instead of printing it")
    cp.add_argument("--adapter", help="compare this adapter's rows only (a patched framework against its release's "
                    "published rows); the sources that differ are named")
    cp.add_argument("--anchors", choices=ANCHOR_KINDS, default="all",
                    help="compare only event-anchored trials (the world freezes at the anchor: what differs is "
                         "the frameworks' run-to-run spread), or only time-anchored ones (default: all)")
    cp.add_argument("--judgements", action="store_true",
                    help="instead: the conclusions of the two folders' reports (summary.json): every best button, "
                         "capability verdict and claim that moved, with its cause")
    cp.set_defaults(func=cmd_compare)

    rd = sub.add_parser("rederive", help="derive DIR's rows again from their kept evidence with this stopbench's "
                        "metric code (no trial is run again); says how many rows changed")
    rd.add_argument("dir", help="a result folder (with raw/ and evidence/)")
    rd.set_defaults(func=cmd_rederive)

    rpr = sub.add_parser("repro", help="write one self-contained Python file that runs a published trial again "
                         "and raises what the world saw (StopLied, StopHung, ResumeRepeated, ...)")
    rpr.add_argument("dir", help="a result folder (with raw/ and evidence/)")
    rpr.add_argument("trial", help="the row's trial_id (or a unique prefix of it) or run_id")
    rpr.add_argument("-o", "--out", required=True, help="the Python file to write")
    rpr.add_argument("--kind", choices=["hang", "fail", "leak", "leaves processes", "repeats on resume"],
                     help="the finding to assert (default: the first the trial shows, in that order)")
    rpr.set_defaults(func=cmd_repro)

    fd = sub.add_parser("findings", help="every stop button that leaks, hangs, fails, repeats on resume or leaves "
                        "processes, with a representative trial and the upstream issue it matches")
    fd.add_argument("dir", nargs="?", default="results", help="a result folder (with raw/ and evidence/)")
    fd.add_argument("--reproducers", metavar="FOLDER", help="write each finding's reproducer (`stopbench repro`) "
                    "into FOLDER")
    fd.set_defaults(func=cmd_findings)

    ag = sub.add_parser("agree", help="do a run's repetitions agree? trial cells whose repetitions disagree, per "
                        "adapter and field (the reproducibility figures)")
    ag.add_argument("dir", nargs="?", default="results")
    ag.add_argument("--anchors", choices=ANCHOR_KINDS, default="event",
                    help="the trials to read (default: event, where the world fixes everything but the framework)")
    ag.add_argument("--reps-rule", choices=["agree"], help="instead: what running only the repetitions this rule "
                    "asks for would have changed (trials saved; verdicts and claims that would read differently)")
    ag.set_defaults(func=cmd_agree)

    mg = sub.add_parser("merge", help="merge the raw rows of result folders (e.g. shards of one run) into OUT")
    mg.add_argument("out", help="the result folder to merge into (created if needed)")
    mg.add_argument("sources", nargs="+", help="result folders with raw/")
    mg.set_defaults(func=cmd_merge)

    pb = sub.add_parser("publish", help="compact a run's JSON Lines (rows and evidence) into the published dataset: "
                        "Parquet files and dataset.json")
    pb.add_argument("dir", help="a result folder (with raw/), or a tree of them (results/history)")
    pb.add_argument("--to", help="the dataset folder to write (default: DIR itself, next to the JSON Lines)")
    pb.add_argument("--remove-working", action="store_true", help="then delete the JSON Lines the dataset now holds "
                    "(once every file written reads back as they do)")
    pb.add_argument("--check", action="store_true", help="only check DIR's dataset against its manifest")
    pb.set_defaults(func=cmd_publish)

    ls = sub.add_parser("list", help="adapters, stop modes, versions, scenarios and offsets")
    ls.add_argument("--scenarios", default=str(DEFAULT_SCENARIOS_DIR))
    ls.set_defaults(func=cmd_list)

    tl = sub.add_parser("timeline", help="what happened in one trial: its ledger and marks, from the evidence kept "
                        "with its row")
    tl.add_argument("dir", help="a result folder (with evidence/)")
    tl.add_argument("trial", help="the row's trial_id (or a unique prefix of it) or run_id")
    tl.set_defaults(func=cmd_timeline)

    rep = sub.add_parser("reap", help="end what stopbench left running: processes (world, subjects, MCP servers) "
                         "whose runner is gone, and their temporary folders")
    rep.add_argument("--dry-run", action="store_true", help="say what would be ended, end nothing")
    rep.add_argument("--all", action="store_true", help="end live runs' processes too (default: only those "
                     "whose runner is gone)")
    rep.add_argument("--check", action="store_true", help="after a run: exit 1 if anything of stopbench was "
                     "left running (it is ended all the same): `nox -s bench` checks itself with this")
    rep.set_defaults(func=cmd_reap)

    w = sub.add_parser("world", help="serve the world standalone; prints its base URL first")
    w.add_argument("--port", type=int, default=0)
    w.add_argument("--scenarios", default=str(DEFAULT_SCENARIOS_DIR))
    w.set_defaults(func=cmd_world)

    na = sub.add_parser("new-adapter", help="write the skeleton of a new adapter")
    na.add_argument("name")
    na.add_argument("--dir", help="where its folder goes (default: the adapters/ of this checkout of stopbench; "
                    "required when stopbench is installed as a package)")
    na.set_defaults(func=cmd_new_adapter)

    ta = sub.add_parser("test-adapter", help="run the shared contract tests against an adapter (needs the 'test' "
                        "extra)", usage="stopbench test-adapter [-h] adapter [pytest_args ...]")
    ta.add_argument("adapter")
    ta.add_argument("pytest_args", nargs=argparse.REMAINDER,
                    help="passed to pytest as they are, e.g. -v, -x, --contract-scenario flaky_provider")
    ta.set_defaults(func=cmd_test_adapter)
    return p


def _requirements_of_extras() -> list[tuple[str, str]]:
    """(distribution, extra) of each of stopbench's optional requirements, from its installed metadata."""
    import re
    from importlib import metadata

    try:
        requirements = metadata.requires("stopbench") or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if extra:
            out.append((re.split(r"[<>=!~\[\s]", name.strip(), maxsplit=1)[0], extra.group(1)))
    return out


def missing_of_extra(extra: str) -> list[str]:
    """The distributions of stopbench's `extra` that are not installed."""
    from importlib import metadata

    missing = []
    for package, of in _requirements_of_extras():
        if of != extra:
            continue
        try:
            metadata.version(package)
        except metadata.PackageNotFoundError:
            missing.append(package)
    return missing


def extra_providing(module: str | None) -> str | None:
    """The optional extra of stopbench (pyproject.toml) that installs `module`, if one does: a command run where
    that extra is missing (a framework's bench environment has no pandas) says so instead of a traceback."""
    if not module:
        return None
    top = module.split(".")[0].lower()
    return next((extra for package, extra in _requirements_of_extras()
                 if package.lower().replace("-", "_") == top), None)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, AdapterError, ScenarioError, MitigationError, ShardError, DatasetError) as e:
        print(f"stopbench {args.command}: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        extra = extra_providing(e.name)
        if extra is None:
            raise
        print(f"stopbench {args.command}: error: needs {e.name}, from stopbench's {extra!r} extra: install it with "
              f"{install_extra(extra)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
