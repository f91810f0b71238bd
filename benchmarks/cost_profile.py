"""Where a trial's CPU goes: a sampling profiler inside each subject, per framework x tool style.

`python benchmarks/cost_profile.py ADAPTER [--scenario S] [--offset O] [--reps N] [--json FILE]` in the adapter's
environment (`nox -s "cost_profile(adapter='X')"`); `python benchmarks/cost_profile.py --table FILE.json ...` puts
the figures of several in one table.

It runs a sample of real trials (every stop mode and tool style of the adapter, one event-anchored offset) and,
inside each forked subject, samples the stack every 5 ms of the process's CPU time (SIGPROF: the kernel counts
CPU, not wall, so waiting costs no samples). Each sample goes to one bucket:

- `imports`: under an import (a module the parent did not import before the fork: the adapter's `prepare()` can);
- `harness` (`audits`, `settle`, `steps`: marks, the control stream, the watchdog; `kit`: the adapter base class's
  plumbing), by the innermost frame in harness/;
- `tools`: the scenario's tools (harness/tools), called by the agent;
- `framework`: the adapter and the framework under it (innermost frame in adapters/ or no harness frame at all);
- `loop`: the event loop's own bookkeeping with no frame of ours above it;
- `native`: CPU of the subject no Python thread shows (native threads of an extension; the sampler itself).

The subject's CPU (RUSAGE_SELF) is split in those shares; its waited-for children (an MCP server, an adapter
process) are `children` (RUSAGE_CHILDREN), which `subject_cpu_s` counts too. Outside the subject, the runner
and the world are the harness's CPU per trial. The harness's share of subject CPU is `harness` / subject CPU.
A sampling profile is an estimate: with threads, a sample is charged to the threads that were not waiting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
HARNESS, ADAPTERS = str(ROOT / "harness"), str(ROOT / "adapters")
SAMPLE_S = 0.005  # of the subject's CPU time
AUDITS = ("trial/audit.py", "trial/activity.py", "trial/host.py", "trial/reap.py")
BUCKETS = ("imports", "audits", "settle", "steps", "kit", "tools", "framework", "loop", "native")
HARNESS_BUCKETS = ("audits", "settle", "steps", "kit")


def bucket(stack: list[FrameType]) -> tuple[str, str | None]:
    """(bucket, module being imported) for one stack, root first. Only the frames of the callback or task step
    the loop is running count (below it: asyncio.run and the subject's entry, which every stack has)."""
    for f in stack:
        if f.f_code.co_name == "_find_and_load" and "importlib" in f.f_code.co_filename:
            return "imports", str(f.f_locals.get("name", "?"))
    steps = [i for i, f in enumerate(stack) if f.f_code.co_name == "_run" and f.f_code.co_filename.endswith(
        ("asyncio/events.py", "asyncio\\events.py"))]
    if not steps and any(f.f_code.co_name == "_run_once" for f in stack):  # the loop itself, between steps
        return "loop", None
    own = stack[steps[-1] + 1:] if steps else stack
    for depth in range(len(own) - 1, -1, -1):
        path = own[depth].f_code.co_filename
        if path.startswith(ADAPTERS):
            return "framework", None
        if path.startswith(HARNESS):
            rel = path[len(HARNESS) + 1:]
            if rel == "tools/loopback_http.py":  # the HTTP client of both the marks and the tools: its caller says
                continue
            if rel.startswith("tools/"):
                return "tools", None
            if rel.startswith("contract/"):  # the kit calling into the framework (a client it makes) is the framework's
                below = own[depth + 1:]
                return ("framework" if any("site-packages" in f.f_code.co_filename for f in below) else "kit"), None
            if rel.endswith(AUDITS):
                return "audits", None
            if rel == "trial/subject.py" and own[depth].f_code.co_name == "_settle":
                return "settle", None
            return "steps", None
    if any("site-packages" in f.f_code.co_filename for f in own):
        return "framework", None
    return "loop", None


def _stack(frame: FrameType | None) -> list[FrameType]:
    out = []
    while frame is not None:
        out.append(frame)
        frame = frame.f_back
    return out[::-1]


class Sampler:
    """SIGPROF every SAMPLE_S of this process's CPU; at each tick, the CPU each Python thread used since the last
    (its own clock: pthread_getcpuclockid) is charged to the bucket of the stack it is in now. CPU no Python thread
    shows (native threads of an extension, the sampler itself) is what is left of the process's CPU: `native`."""

    def __init__(self) -> None:
        self.cpu: Counter[str] = Counter()
        self.imports: Counter[str] = Counter()
        self.spots: Counter[str] = Counter()  # the harness's own: its innermost function, for the buckets of ours
        self.last: dict[int, float] = {}

    def tick(self, signum: int, frame: FrameType | None) -> None:
        frames = sys._current_frames()
        frames[threading.main_thread().ident or 0] = frame  # not this handler's own frame
        for ident, top in frames.items():
            try:
                now = time.clock_gettime(time.pthread_getcpuclockid(ident))
            except OSError:  # the thread ended meanwhile
                continue
            used, self.last[ident] = now - self.last.get(ident, now), now
            if used <= 0 or top is None:
                continue
            stack = _stack(top)
            b, module = bucket(stack)
            self.cpu[b] += used
            if module:
                self.imports[module] += used
            if b in HARNESS_BUCKETS:
                self.spots[_spot(stack)] += used

    def start(self) -> None:
        for ident in sys._current_frames():
            with contextlib.suppress(OSError):
                self.last[ident] = time.clock_gettime(time.pthread_getcpuclockid(ident))
        signal.signal(signal.SIGPROF, self.tick)
        signal.setitimer(signal.ITIMER_PROF, SAMPLE_S, SAMPLE_S)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)


def _spot(stack: list[FrameType]) -> str:
    """The innermost frame of the harness in a stack: file:function."""
    for f in reversed(stack):
        if f.f_code.co_filename.startswith(HARNESS):
            return f"{f.f_code.co_filename[len(HARNESS) + 1:]}:{f.f_code.co_name}"
    return "?"


def install(out_dir: Path) -> None:
    """Wrap each subject's trial (this benchmark's own hook; the harness has none)."""
    from harness.trial import subject

    run = subject.Subject.run

    async def profiled(self: subject.Subject) -> None:
        sampler = Sampler()
        sampler.start()
        try:
            await run(self)
        finally:
            sampler.stop()
            own = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            self_s = own.ru_utime + own.ru_stime
            sampler.cpu["native"] = max(0.0, self_s - sum(sampler.cpu.values()))
            (out_dir / f"{os.getpid()}.json").write_text(json.dumps({
                "mode": self.spec.mode, "tool_style": self.spec.tool_style, "ran": self.adapter is not None,
                "self_s": self_s, "children_s": kids.ru_utime + kids.ru_stime,
                "cpu": sampler.cpu, "imports": sampler.imports, "spots": sampler.spots}))

    subject.Subject.run = profiled  # type: ignore[method-assign]


def summarize(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per tool style, over the trials that ran (not skipped): mean CPU per trial in each bucket. The buckets are
    scaled to the subject's own CPU (RUSAGE_SELF) when the threads' clocks add up to more (they are read at ticks)."""
    out: dict[str, dict[str, Any]] = {}
    ran = [s for s in samples if s["ran"]]
    for style in sorted({s["tool_style"] for s in ran}):
        rs = [s for s in ran if s["tool_style"] == style]
        cpu: Counter[str] = Counter()
        imports: Counter[str] = Counter()
        spots: Counter[str] = Counter()
        for s in rs:
            scale = min(1.0, s["self_s"] / (sum(s["cpu"].values()) or 1))
            for into, what in ((cpu, "cpu"), (imports, "imports"), (spots, "spots")):
                for k, v in s[what].items():
                    into[k] += v * scale / len(rs)
        subject_s = sum(s["self_s"] + s["children_s"] for s in rs) / len(rs)
        harness_s = sum(cpu[b] for b in HARNESS_BUCKETS)
        out[style] = {"trials": len(rs), "subject_cpu_s": round(subject_s, 4),
                      "children_s": round(sum(s["children_s"] for s in rs) / len(rs), 4),
                      **{f"{b}_s": round(cpu[b], 4) for b in BUCKETS},
                      "harness_s": round(harness_s, 4),
                      "harness_share": round(harness_s / subject_s, 4) if subject_s else None,
                      "top_imports": [[m, round(v, 4)] for m, v in imports.most_common(8)],
                      "harness_spots": [[m, round(v, 4)] for m, v in spots.most_common(8)]}
    return out


def table(results: list[dict[str, Any]]) -> str:
    """The figures of several adapters' profiles in one table, and the harness's share over all their trials."""
    lines = ["| adapter | tools | subject CPU s | imports | harness | tools | framework | loop | native | children "
             "| harness share | runner + world s |", "|---|---|" + "---:|" * 10]
    harness = subject = 0.0
    for r in sorted(results, key=lambda r: r["adapter"]):
        for style, s in r["styles"].items():
            harness += s["harness_s"] * s["trials"]
            subject += s["subject_cpu_s"] * s["trials"]
            lines.append(f"| {r['adapter']} | {style} | {s['subject_cpu_s']:.3f} | {s['imports_s']:.3f} | "
                         f"{s['harness_s']:.3f} | {s['tools_s']:.3f} | {s['framework_s']:.3f} | {s['loop_s']:.3f} | "
                         f"{s['native_s']:.3f} | {s['children_s']:.3f} | {100 * (s['harness_share'] or 0):.1f}% | "
                         f"{r['runner_cpu_s_per_trial'] + r['world_cpu_s_per_trial']:.3f} |")
    share = 100 * harness / subject if subject else 0.0
    return "\n".join(lines) + f"\n\nThe harness's share of the subjects' CPU over these trials: {share:.1f}%\n"


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"]:  # `--table FILE.json ...`: the profiles written with --json, in one table
        print(table([json.loads(Path(f).read_text()) for f in argv[1:]]))
        return 0
    parser = argparse.ArgumentParser(prog="cost_profile.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("adapter")
    parser.add_argument("--scenario", default="q3_report")
    parser.add_argument("--offset", default="on:effect_received:email", help="an event anchor (a time offset waits "
                        "alone on a quiet machine and would profile the same)")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    from harness.contract.registry import load_adapter
    from harness.trial.runner import RunOptions, run_matrix

    adapter_cls = load_adapter(args.adapter)
    me = psutil.Process()
    with tempfile.TemporaryDirectory(prefix="stopbench-profile-") as tmp:
        samples_dir = Path(tmp) / "samples"
        samples_dir.mkdir()
        install(samples_dir)
        cpu0, kids0, wall0 = me.cpu_times(), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        rows = run_matrix(adapter_cls, RunOptions(adapter=args.adapter, scenarios=[args.scenario],
                                                  offsets=[args.offset], reps=args.reps, jobs=1,
                                                  out=Path(tmp) / "out"), log=open(os.devnull, "w"))
        cpu1, kids1 = me.cpu_times(), resource.getrusage(resource.RUSAGE_CHILDREN)
        samples = [json.loads(p.read_text()) for p in samples_dir.glob("*.json")]
    runner_s = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    n = max(1, len(rows))
    subjects_s = sum(r.get("subject_cpu_s") or 0 for r in rows)
    # the world is the runner's other waited-for child: what the children used beyond the subjects
    world_s = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime) - subjects_s
    result = {"adapter": args.adapter, "scenario": args.scenario, "offset": args.offset, "trials": len(rows),
              "wall_s": round(time.monotonic() - wall0, 2),
              "runner_cpu_s_per_trial": round(runner_s / n, 4),
              "world_cpu_s_per_trial": round(world_s / n, 4),
              "row_subject_cpu_s": round(subjects_s / n, 4),
              "styles": summarize(samples)}
    print(render(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def render(result: dict[str, Any]) -> str:
    lines = [f"## {result['adapter']}: {result['trials']} trials of {result['scenario']} at {result['offset']}",
             f"per trial: subject CPU (the rows' subject_cpu_s) {result['row_subject_cpu_s']} s, runner "
             f"{result['runner_cpu_s_per_trial']} s, world {result['world_cpu_s_per_trial']} s",
             "| tools | trials | subject CPU s | " + " | ".join(BUCKETS)
             + " | children | harness share | top imports |",
             "| --- | ---: | ---: |" + " ---: |" * (len(BUCKETS) + 2) + " --- |"]
    for style, s in result["styles"].items():
        top = ", ".join(f"{m} {v:.2f}" for m, v in s["top_imports"][:3])
        lines.append(f"| {style} | {s['trials']} | {s['subject_cpu_s']:.3f} | "
                     + " | ".join(f"{s[f'{b}_s']:.3f}" for b in BUCKETS)
                     + f" | {s['children_s']:.3f} | {100 * (s['harness_share'] or 0):.1f}% | {top} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
