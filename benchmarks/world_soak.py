"""Does the world's memory stay flat over thousands of runs? `python benchmarks/world_soak.py [--runs N]`

Each run does what a trial does to the world: create the run, stream one model answer, commit one effect,
post marks, read the ledger, delete the run (as the runner does once the row is written). Every 1,000 runs
the world's resident memory (RSS, from /proc) is sampled. Reported: RSS after warm-up (the first 1,000
runs), and its growth per 1,000 runs after that (least squares over the samples). Goal: flat after
warm-up, i.e. under 1 MB per 1,000 runs. With `--keep` the runs are not deleted (what a client that never
deletes costs: the world then drops its oldest runs past harness/world/app.py MAX_RUNS).
Writes benchmarks/results/soak.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import httpx
import psutil

from harness.trial.world_client import WorldClient, WorldProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import publish  # noqa: E402 (benchmarks/ is the script's folder)

OUT = Path(__file__).resolve().parent / "results" / "soak.json"
GOAL_MB_PER_1000 = 1.0
EMAIL = {"to": "a@example.com", "subject": "s", "body": "b"}


def one_run(http: httpx.Client, world: WorldClient, keep: bool) -> None:
    run = world.create_run("q3_report")
    base = run["services_base_url"]
    with http.stream("POST", f"{run['model_base_url']}/chat/completions",
                     json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}) as r:
        for _ in r.iter_lines():
            pass
    http.post(f"{base}/email/send", json=EMAIL).raise_for_status()
    world.mark(run["run_id"], "stop_called")
    world.ledger(run["run_id"])
    if not keep:
        world.delete_run(run["run_id"])


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--keep", action="store_true", help="never delete a run")
    parser.add_argument("--every", type=int, default=1000, help="sample the world's RSS every this many runs")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    samples: list[tuple[int, float]] = []
    started = time.monotonic()
    with WorldProcess() as proc, httpx.Client(timeout=30) as http:
        world = WorldClient(proc.url)
        rss = psutil.Process(proc.proc.pid)
        for i in range(1, args.runs + 1):
            one_run(http, world, args.keep)
            if i % args.every == 0:
                samples.append((i, rss.memory_info().rss / 2**20))
                print(f"{i} runs: world RSS {samples[-1][1]:.1f} MB", file=sys.stderr, flush=True)
        world.close()
    after_warmup = samples[1:] if len(samples) > 2 else samples
    growth = (slope([n / 1000 for n, _ in after_warmup], [mb for _, mb in after_warmup])
              if len(after_warmup) > 1 else 0.0)
    publish({
        "runs": args.runs, "deleted": not args.keep, "seconds": round(time.monotonic() - started, 1),
        "rss_mb_after_warmup": round(samples[0][1], 1) if samples else None,
        "rss_mb_at_end": round(samples[-1][1], 1) if samples else None,
        "rss_growth_mb_per_1000_runs": round(growth, 2), "goal_mb_per_1000_runs": GOAL_MB_PER_1000,
        "met": growth < GOAL_MB_PER_1000,
    }, args.out)


if __name__ == "__main__":
    main()
