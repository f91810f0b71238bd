"""A whole run against its CPU floor, and where the machine's idle time went.

`python benchmarks/full_run.py [--out FILE] [--schedule DIR ...] -- COMMAND ...` (e.g. `-- nox -s bench`) runs the
command and reports:

- wall: how long it took;
- CPU: what it and every process it waited for used (user + system, from the kernel: nox, runners, the world,
  subjects, MCP servers; a subject's descendants are waited for by the subject, a subreaper);
- floor: CPU / cores, the wall time a perfectly packed run would take; ratio = wall / floor;
- idle: the share of its seconds the machine was below 90% busy (/proc/stat, every core), and why: for seconds
  inside a run of `stopbench run`, the runner's own account (`<results>/schedule/*.jsonl`,
  harness/trial/utilization.py: at the limit, one time-offset trial before its stop, the run's tail, or trials
  in flight that were all waiting); other seconds are between runs (nox sessions, installs, prepare(), the world's
  start).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run by the machine's python3, around nox
from harness.trial.utilization import HELD  # noqa: E402 (standard library only)

BUSY = 0.9  # below this share of every core, a second counts as idle


def _ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return sum(values), values[3] + values[4]


def sample(samples: list[tuple[float, float]], done: threading.Event) -> None:
    prev = _ticks()
    while not done.wait(1.0):
        cur = _ticks()
        total = cur[0] - prev[0]
        samples.append((time.time(), 1 - (cur[1] - prev[1]) / total if total else 0.0))
        prev = cur


def schedule_lines(folders: list[Path], since: float) -> list[dict]:
    lines = []
    for folder in folders:
        for path in sorted((folder / "schedule").glob("*.jsonl")):
            for line in path.read_text().splitlines():
                row = json.loads(line)
                if row["t"] >= since:
                    lines.append(row)
    return sorted(lines, key=lambda r: r["t"])


def why(t: float, lines: list[dict], times: list[float]) -> str:
    """The runner's account of the second ending at `t`: its nearest line within 1.5 s, else between runs."""
    i = bisect.bisect_left(times, t)
    near = [lines[j] for j in (i - 1, i) if 0 <= j < len(lines) and abs(times[j] - t) <= 1.5]
    if not near:
        return "between runs (nox, installs, prepare, world start)"
    line = min(near, key=lambda r: abs(r["t"] - t))
    return HELD.get(line["held"] or "", "trials in flight, all waiting")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="full_run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the figures here (JSON)")
    parser.add_argument("--schedule", type=Path, action="append", default=[],
                        help="a result folder whose schedule/ the runs write (default: results)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    samples: list[tuple[float, float]] = []
    done = threading.Event()
    sampler = threading.Thread(target=sample, args=(samples, done), daemon=True)
    started, t0 = time.time(), time.monotonic()
    sampler.start()
    code = subprocess.call(command)
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    cores = os.cpu_count() or 1
    lines = schedule_lines(args.schedule or [Path("results")], started)
    times = [r["t"] for r in lines]
    idle = [(t, b) for t, b in samples if b < BUSY]
    reasons = Counter(why(t, lines, times) for t, _ in idle)
    # the idle CPU-time of those seconds: what a full machine would have done more
    lost: Counter[str] = Counter()
    for t, b in idle:
        lost[why(t, lines, times)] += (1 - b) * cores
    figures = {"command": command, "exit_code": code, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "cores": cores, "floor_s": round(cpu / cores, 1),
               "ratio": round(wall / (cpu / cores), 3) if cpu else None,
               "seconds": len(samples), "idle_seconds": len(idle),
               "idle_share": round(len(idle) / len(samples), 3) if samples else None,
               "mean_busy": round(sum(b for _, b in samples) / len(samples), 3) if samples else None,
               "idle_by_reason": dict(reasons.most_common()),
               "idle_core_s_by_reason": {k: round(v, 1) for k, v in lost.most_common()}}
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
