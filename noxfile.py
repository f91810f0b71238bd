"""Reproduce stopbench: `nox` runs every framework's bench and then the report; `nox -s tests` tests.

Sessions are derived from the framework folders (adapters/<name>/framework.toml, harness/frameworks.py):
each framework gets its own virtualenv with its own dependencies and pinned constraints (their pins
conflict: CrewAI needs openai<3 and mcp<2, the others take openai 3.x and mcp 2.x). The harness is
installed into every one of them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))
from harness.bench_plan import bench_args  # noqa: E402 (stdlib only)
from harness.frameworks import CORE, Framework, discover, history_runs, test_suites  # noqa: E402 (stdlib only)
from harness.install_state import install_digest, is_installed, mark_installed, npm_inputs  # noqa: E402 (stdlib only)
from harness.npm_install import install_commands  # noqa: E402 (stdlib only)

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["bench", "publish", "report"]
nox.options.reuse_existing_virtualenvs = True

FRAMEWORKS: dict[str, Framework] = {f.name: f for f in discover(ROOT)}
RESULTS = os.environ.get("STOPBENCH_RESULTS", "results")
REPS = os.environ.get("STOPBENCH_REPS", "3")
# the version history: a small fixed matrix per release, apart from the headline run
HISTORY = os.environ.get("STOPBENCH_HISTORY", f"{RESULTS}/history")
HISTORY_MATRIX = ("--scenario", "q3_report", "--anchors", "event")  # every mode, tool style; REPS repetitions
# bench a patch (`nox -s "patch(adapter='X')" -- SOURCE`): its rows and COMPARE.md go to <PATCHES>/<adapter>/
PATCHES = os.environ.get("STOPBENCH_PATCHES", f"{RESULTS}/patches")
# releases that appeared since framework.toml was written, as "fw=X.Y,..." (the scheduled CI workflow's --latest)
HISTORY_RUNS = history_runs(ROOT, os.environ.get("STOPBENCH_HISTORY_NEW", ""))
# On Ctrl-C nox sends SIGTERM 0.3 s after the SIGINT and SIGKILL 0.2 s later: a run is given this long to end its
# running trials (their ledgers read, their processes ended) as it does on Ctrl-C
RUN_ENDS = {"interrupt_timeout": 30.0}
# the core suite's pytest-xdist workers: its tests mostly wait (a trial's pacing, its observation floor), so two per
# core keep the cores busy
TEST_WORKERS = os.environ.get("STOPBENCH_TEST_WORKERS", str(2 * (os.cpu_count() or 1)))
# Trials side by side: a number, or auto (as many as the CPU and the stops' precision allow)
JOBS = os.environ.get("STOPBENCH_JOBS", "auto")
# K/N: this machine runs shard K of N of every matrix (CI fans out per framework x shard, then merges)
SHARD = ["--shard", os.environ["STOPBENCH_SHARD"]] if os.environ.get("STOPBENCH_SHARD") else []
SELECT = list(SHARD)
# event | time: only the trials at that kind of offset (a second run to check with `compare --anchors event`)
SELECT += ["--anchors", os.environ["STOPBENCH_ANCHORS"]] if os.environ.get("STOPBENCH_ANCHORS") else []
# all | agree: which repetitions run (harness/results/repetitions.py); the published run uses agree
SELECT += ["--reps-rule", os.environ.get("STOPBENCH_REPS_RULE", "agree")]


def install_framework(session: nox.Session, name: str, *extras: str, precompile: bool = True) -> None:
    """The harness (with `extras`) plus one framework's adapter dependencies, at its pinned versions; for an adapter
    process in JavaScript or an orchestrator CLI from npm, its packages from its lockfile (`npm ci` in its folder,
    on the Node the adapter runs on: node_modules is never committed).
    A reused environment whose install would change nothing (harness/install_state.py) is left as it is. Without
    `precompile` (the tests: they count what trials did, not the CPU they took) an installed module is compiled as
    Python does by default, on its first import and cached, instead of every one of them at install."""
    spec = f".[{','.join(extras)}]" if extras else "."
    args = ["-e", spec, *FRAMEWORKS[name].install_args()]
    env = Path(session.virtualenv.location)
    digest = install_digest(args, [ROOT / "pyproject.toml"])
    if not is_installed(env, digest):
        session.install(*args)
        compile_bytecode(session, site_packages=precompile)
        mark_installed(env, digest)
    compile_bytecode(session)  # the repository's own code changes between sessions; it is small
    framework = FRAMEWORKS[name]
    if framework.npm:
        modules = framework.folder / "node_modules"
        lock = install_digest(["npm", "ci"], npm_inputs(framework.folder))
        if not is_installed(modules, lock):  # npm on the Node the adapter runs on (harness/npm_install.py)
            for command in install_commands(framework.folder, env):
                session.run_install(*command, external=True)
            mark_installed(modules, lock)


def compile_bytecode(session: nox.Session, site_packages: bool = False) -> None:
    """The repository's code (and with `site_packages`, every installed module) compiled to bytecode now, once,
    as pip does at install (uv does not, and with PYTHONDONTWRITEBYTECODE set nothing is cached): otherwise every
    subject, MCP server and world process compiles what it imports again, up to ~0.5 s of CPU a trial that no user
    pays. Files that do not compile (templates, other Python versions' code) are left as they are."""
    folders = ", ".join(["*site.getsitepackages()"] * site_packages + ["'harness'", "'adapters'", "'stopbench'"])
    session.run_install("python", "-c", "import compileall, re, site; [compileall.compile_dir(d, quiet=2, workers=0, "
                        f"rx=re.compile('node_modules')) for d in [{folders}]]", silent=True)  # also --install-only


@nox.session
@nox.parametrize("suite", test_suites(ROOT))
def tests(session: nox.Session, suite: str) -> None:
    """`core`: the world, the harness and the reference adapter; others: that adapter's contract tests."""
    if suite == "core":
        install_framework(session, CORE, "test", "report", "dev", precompile=False)
        session.run("ruff", "check", ".")
        # the public API (the stopbench package) is typed: mypy --strict on it
        session.run("mypy", "--strict", "--follow-imports=silent", "--ignore-missing-imports", "stopbench")
        session.run("actionlint", *sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml")))
        # TEST_WORKERS side by side (pytest-xdist): most of a test's time is a trial waiting out its scenario's
        # pacing; a module whose tests share an expensive fixture is one group (xdist_group), made once on one worker
        session.run("pytest", "-q", "-n", TEST_WORKERS, "--dist", "loadgroup", "--durations=15", *session.posargs)
        return
    install_framework(session, suite, "test", precompile=False)
    session.run("stopbench", "test-adapter", suite, *session.posargs)


@nox.session
@nox.parametrize("adapter", sorted(FRAMEWORKS))
def bench(session: nox.Session, adapter: str) -> None:
    """Every stop mode x scenario x offset x tool style x repetition for one framework (and its variants)."""
    install_framework(session, adapter)
    session.install("pyarrow>=16")  # the published rows (Parquet) say which trials are done already
    if session.posargs:  # a partial run by hand: just that
        session.run("stopbench", "run", "--adapter", adapter, "--reps", REPS, "--jobs", JOBS, "--out", RESULTS,
                    *SELECT, *session.posargs, **RUN_ENDS)
        return
    # one run (one world, one queue: no pause between matrices): its matrices are data (harness/bench_plan.py)
    session.run("stopbench", "run", "--adapter", adapter, *bench_args(FRAMEWORKS[adapter], REPS), "--jobs", JOBS,
                "--out", RESULTS, *SELECT, **RUN_ENDS)
    for variant in FRAMEWORKS[adapter].variants:
        session.run("stopbench", "run", "--adapter", variant.adapter, *variant.args, "--reps", REPS, "--jobs", JOBS,
                    "--out", RESULTS, *SELECT, **RUN_ENDS)
    session.run("stopbench", "reap", "--check")  # nothing of the run may be left on the machine


@nox.session
@nox.parametrize(["adapter", "release"], HISTORY_RUNS, ids=[f"{a}-{r}" for a, r in HISTORY_RUNS])
def history(session: nox.Session, adapter: str, release: str) -> None:
    """One release of a framework's version history: its own environment (framework.toml `[history]`), the
    history matrix into results/history/<framework>/<release>/; `nox -s report` draws the history pages."""
    session.install("-e", ".", "pyarrow>=16", *FRAMEWORKS[adapter].install_args(release))
    session.run("stopbench", "run", "--adapter", adapter, *HISTORY_MATRIX, "--reps", REPS, "--jobs", JOBS,
                "--out", f"{HISTORY}/{adapter}/{release}", *SHARD, *session.posargs, **RUN_ENDS)
    session.run("stopbench", "reap", "--check")


@nox.session
@nox.parametrize("adapter", sorted(FRAMEWORKS))
def patch(session: nox.Session, adapter: str) -> None:
    """`-- SOURCE [stopbench run options]`: the framework from SOURCE (a local checkout folder, `git+URL@ref`, a
    wheel) in place of its pinned release, the history matrix (narrowed by the options given, e.g. `--mode drain`),
    then `stopbench compare` against the release's published rows (RESULTS) into <PATCHES>/<adapter>/COMPARE.md:
    which counts and verdicts moved beyond the run-to-run spread, and the trials behind each. Rows record where
    the framework came from (`sources`), so a patch's rows are never taken for the release's."""
    if not session.posargs or session.posargs[0].startswith("-"):
        session.error(f"give the framework's source: nox -s \"patch(adapter='{adapter}')\" -- ../checkout "
                      "| git+https://github.com/OWNER/REPO@REF | dist/pkg.whl [stopbench run options]")
    source, *subset = session.posargs
    install_framework(session, adapter, "report")  # compare reads rows with pandas
    # only the framework itself is replaced: every other package stays at the pinned release's versions
    session.install("--no-deps", "--force-reinstall", source)
    out = f"{PATCHES}/{adapter}"
    session.run("stopbench", "run", "--adapter", adapter, *HISTORY_MATRIX, *subset, "--reps", REPS, "--jobs", JOBS,
                "--out", out, **RUN_ENDS)
    session.run("stopbench", "reap", "--check")
    session.run("stopbench", "compare", RESULTS, out, "--adapter", adapter, "--anchors", "event",
                "--to", f"{out}/COMPARE.md")


@nox.session
def report(session: nox.Session) -> None:
    """Tables and plots from results/raw/ into results/README.md, CSV and HTML, and the measured blocks of the adapter
    READMEs (`-- DIR` for another folder: its report only)."""
    install_framework(session, CORE, "report")  # the reference pins cover pandas and matplotlib too
    session.run("stopbench", "report", *(session.posargs or [RESULTS]))
    if not session.posargs:  # the published rows: the adapter READMEs' measured blocks are rewritten from them
        session.run("python", "-m", "harness.results.readme_blocks", "--update", RESULTS)


@nox.session
def publish(session: nox.Session) -> None:
    """The run's JSON Lines (results/ and results/history) compacted into the published dataset (Parquet and
    dataset.json: what is committed); `-- DIR` for another folder."""
    install_framework(session, CORE, "report")
    for folder in session.posargs or [RESULTS, HISTORY]:
        if Path(folder).is_dir():
            session.run("stopbench", "publish", folder)


@nox.session
def merge(session: nox.Session) -> None:
    """`nox -s merge -- OUT SRC...`: the raw rows of result folders (a run's shards) into OUT."""
    install_framework(session, CORE)
    session.run("stopbench", "merge", *session.posargs)


@nox.session
@nox.parametrize("adapter", sorted(FRAMEWORKS))
def cost_profile(session: nox.Session, adapter: str) -> None:
    """Where one framework's trials spend their CPU (benchmarks/cost_profile.py): a sample of trials, profiled."""
    install_framework(session, adapter)
    session.run("python", "benchmarks/cost_profile.py", adapter, "--json", f"benchmarks/results/cost/{adapter}.json")


@nox.session
def benchmarks(session: nox.Session) -> None:
    """The harness's own speed: world throughput, pacing, trigger delay, per-trial overhead."""
    install_framework(session, CORE, "test")
    session.run("python", "benchmarks/world_bench.py")
    session.run("python", "benchmarks/trial_overhead.py")
    session.run("python", "benchmarks/mcp_start.py")
    session.run("python", "benchmarks/world_soak.py")
    session.run("python", "benchmarks/trial_cost.py", RESULTS)
