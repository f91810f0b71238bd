"""Per-trial overhead of the harness itself, and the cost of starting a subject process.

`python benchmarks/trial_overhead.py [--trials N]`

- trial overhead: wall time per trial (launch -> row written) for an adapter that does nothing
  (start returns, stop cancels an idle task, no resume) with the settle window and the observation floor
  set to 0, so what is left is the harness: run creation, fork, audits, marks, reap scan, ledger fetch,
  metrics, row.
- subject start: fork of this process (with the reference adapter's `openai` already imported) until
  the child is running, and the full fork -> exit -> waitpid round trip; and the same with spawn.
Goal (issue #17): p50 of 20 ms or less per trial with forked subjects (it was 50 ms).
Results also go to benchmarks/results/trial.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.contract.adapter import Adapter
from harness.trial.runner import RunOptions, run_matrix

OUT = Path(__file__).parent / "results" / "trial.json"


class NullAdapter(Adapter):
    name = "null"
    stop_modes = {"cancel": "cancel an idle task"}
    tool_styles = ("async",)

    async def start(self) -> None:
        self.task = asyncio.create_task(asyncio.Event().wait())

    async def stop_cancel(self) -> None:
        self.task.cancel()

    async def wait(self) -> None:
        try:
            await self.task
        except asyncio.CancelledError:
            pass

    async def close(self) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fork_roundtrip(n: int) -> dict[str, float]:
    import openai  # noqa: F401  (the subject's parent has its framework imported)

    starts, rounds = [], []
    for _ in range(n):
        r, w = os.pipe()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"x")
            os._exit(0)
        os.read(r, 1)
        t1 = time.perf_counter()
        os.waitpid(pid, 0)
        t2 = time.perf_counter()
        os.close(r)
        os.close(w)
        starts.append((t1 - t0) * 1000)
        rounds.append((t2 - t0) * 1000)
    return {"fork_to_running_ms_p50": statistics.median(starts), "fork_roundtrip_ms_p50": statistics.median(rounds),
            "fork_roundtrip_ms_p99": pct(rounds, 0.99)}


def spawn_roundtrip(n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import harness.trial.subject, openai"], check=True)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="stopbench-overhead-"))
    # distinct trials (repetitions), each stopped the moment it starts: no scripted waiting in the figure
    opts = RunOptions(adapter="benchmarks.trial_overhead:NullAdapter", scenarios=["q3_report"], offsets=["at:0ms"],
                      reps=args.trials, out=out, settle_window_ms=0, observe_ms=0)
    try:
        rows = run_matrix(NullAdapter, opts, log=open(os.devnull, "w"))
    finally:
        shutil.rmtree(out, ignore_errors=True)  # its rows are only counted here: leave no folder behind
    durations = [r["duration_s"] * 1000 for r in rows if r["status"] == "ok"]
    result = {
        "trials": len(rows), "ok": len(durations),
        "trial_overhead_ms_p50": statistics.median(durations), "trial_overhead_ms_p90": pct(durations, 0.9),
        "trial_overhead_ms_mean": statistics.mean(durations),
        **fork_roundtrip(50),
        "spawn_subject_ms_p50": spawn_roundtrip(5),
        "goal_ms": 20,
    }
    result["met"] = result["trial_overhead_ms_p50"] <= 20
    from figures import publish  # benchmarks/ is the script's folder

    publish(result, OUT, digits=2)


if __name__ == "__main__":
    main()
