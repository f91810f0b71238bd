"""How fast and how exact is the world on this machine? `python benchmarks/world_bench.py [--strict]`

(a) throughput: streamed tokens per second across concurrent unpaced streams (clients here, world in its
    own process; tokens counted and timed from the ledger's stamps, first token to last).
(b) pacing error: ledger token stamps of a 50 tokens/s stream against the ideal start + ttft + i/rate.
(c) anchor-to-stop delay: from the anchor (the `anchor_fired` stamp, and the anchored token's stamp) to the
    `stop` push reaching a listening client, stamped with time.monotonic_ns() on receipt (CLOCK_MONOTONIC is
    system-wide, so both processes read the same clock).
Prints a table, writes benchmarks/results/world.json; with --strict, exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.scenario import parse_offset
from harness.trial.world_client import WorldClient, WorldProcess

RESULTS = Path(__file__).resolve().parent / "results" / "world.json"
GOALS = {"throughput_tokens_per_s": 20_000, "pacing_p99_ms": 2.0, "anchor_stop_p99_ms": 2.0}


def inline(text_tokens: int, tps: float, ttft: float, name: str = "bench") -> dict[str, Any]:
    return {"name": name, "turns": [{"text_tokens": text_tokens}], "offsets": [],
            "pacing": {"tokens_per_s": tps, "ttft_ms": ttft}}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def http_request(url: str, method: str = "GET", body: dict | None = None) -> bytes:
    """A raw HTTP/1.1 request (connection closed after the answer): no client library on the hot path."""
    parts = urlsplit(url)
    data = json.dumps(body).encode() if body is not None else b""
    head = (f"{method} {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
    return head.encode() + data


# ----- (a) throughput ---------------------------------------------------------------------------------

async def _drain_stream(url: str, body: dict) -> int:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(http_request(url, "POST", body))
    await writer.drain()
    size = 0
    while chunk := await reader.read(1 << 16):
        size += len(chunk)
    writer.close()
    return size


def throughput(wc: WorldClient, streams: int, tokens: int, repeats: int) -> dict[str, Any]:
    rates = []
    for _ in range(repeats):
        run = wc.create_run(inline(tokens, 0, 0))
        body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        url = f"{run['model_base_url']}/chat/completions"

        async def all_streams(url: str = url, body: dict = body) -> list[int]:
            return await asyncio.gather(*(_drain_stream(url, body) for _ in range(streams)))

        sizes = asyncio.run(all_streams())
        assert all(sizes), "a stream returned nothing"
        wc.quiet(run["run_id"], window_ms=50, deadline_ms=30_000)
        stamps = [e["t"] for e in wc.ledger(run["run_id"])["events"] if e["event"] == "token"]
        assert len(stamps) == streams * tokens, f"{len(stamps)} tokens, expected {streams * tokens}"
        rates.append(len(stamps) / ((max(stamps) - min(stamps)) / 1e9))
    return {"streams": streams, "tokens_per_stream": tokens, "repeats": repeats,
            "tokens_per_s": statistics.median(rates), "tokens_per_s_each": [round(r) for r in rates]}


# ----- (b) pacing error -------------------------------------------------------------------------------

def pacing(wc: WorldClient, rate: float, ttft_ms: float, tokens: int, streams: int) -> dict[str, Any]:
    run = wc.create_run(inline(tokens, rate, ttft_ms))
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    url = f"{run['model_base_url']}/chat/completions"

    async def all_streams() -> list[int]:
        return await asyncio.gather(*(_drain_stream(url, body) for _ in range(streams)))

    asyncio.run(all_streams())
    wc.quiet(run["run_id"], window_ms=50, deadline_ms=30_000)
    events = wc.ledger(run["run_id"])["events"]
    errors = []
    for req in (e for e in events if e["event"] == "llm_request"):
        # The request stamp precedes the pacer's own start by microseconds: the error is if anything overstated.
        start = req["t"] + ttft_ms * 1e6
        toks = [e for e in events if e["event"] == "token" and e["req"] == req["req"]]
        assert len(toks) == tokens
        errors += [abs(e["t"] - (start + e["i"] * 1e9 / rate)) / 1e6 for e in toks]
    return {"tokens_per_s": rate, "ttft_ms": ttft_ms, "tokens": tokens * streams, "streams": streams,
            "p50_ms": pct(errors, 50), "p99_ms": pct(errors, 99), "max_ms": max(errors)}


# ----- (c) anchor-to-stop delay -----------------------------------------------------------------------

class StopListener(threading.Thread):
    """Holds a run's control stream open on a raw socket and stamps the moment a `stop` arrives."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.opened = threading.Event()
        self.stopped = threading.Event()
        self.received_ns = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        parts = urlsplit(self.url)
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(http_request(self.url))
                seen = b""
                while True:
                    data = sock.recv(65536)
                    now = time.monotonic_ns()
                    if not data:
                        raise ConnectionError("control stream closed before stop")
                    seen += data
                    if not self.opened.is_set() and b": open" in seen:
                        self.opened.set()
                    if b"event: stop" in seen:
                        self.received_ns = now
                        return
        except BaseException as e:  # reported by the main thread
            self.error = e
        finally:
            self.opened.set()
            self.stopped.set()


def anchor_delay(wc: WorldClient, trials: int, anchor_token: int) -> dict[str, Any]:
    scenario = inline(anchor_token + 10, 2000, 0, name="anchor_bench")
    from_anchor, from_token = [], []
    for _ in range(trials):
        run = wc.create_run(scenario, stop_anchor=parse_offset(f"on:token:{anchor_token}"))
        listener = StopListener(f"{run['services_base_url']}/control")
        listener.start()
        if not listener.opened.wait(10) or listener.error:
            raise RuntimeError(f"control stream did not open: {listener.error}")
        url = f"{run['model_base_url']}/chat/completions"
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
            sock.sendall(http_request(url, "POST", {"model": "scripted", "stream": True,
                                                    "messages": [{"role": "user", "content": "go"}]}))
            # Block (GIL released) until the stop is in: nothing here competes with the listener's stamp.
            if not listener.stopped.wait(10) or listener.error:
                raise RuntimeError(f"no stop pushed: {listener.error}")
            # as a trial does: the world holds the stream at the anchor until it sees the stop pressed
            wc.mark(run["run_id"], "stop_called", t=listener.received_ns)
            while sock.recv(65536):
                pass
        listener.join(5)
        events = wc.ledger(run["run_id"])["events"]
        if any(e["event"] == "anchor_released" and e.get("timeout") for e in events):
            raise RuntimeError("the world held the anchored stream until its timeout: stop_called never reached it")
        fired = next(e["t"] for e in events if e["event"] == "anchor_fired")
        token = next(e["t"] for e in events if e["event"] == "token" and e["i"] == anchor_token - 1)
        from_anchor.append((listener.received_ns - fired) / 1e6)
        from_token.append((listener.received_ns - token) / 1e6)
    return {"trials": trials, "anchor": f"on:token:{anchor_token}",
            "p50_ms": pct(from_anchor, 50), "p99_ms": pct(from_anchor, 99), "max_ms": max(from_anchor),
            "from_token_p50_ms": pct(from_token, 50), "from_token_p99_ms": pct(from_token, 99)}


# ----- main -------------------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    import importlib.util

    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "uvloop": importlib.util.find_spec("uvloop") is not None,
            "httptools": importlib.util.find_spec("httptools") is not None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=5000, help="tokens per throughput stream")
    ap.add_argument("--repeats", type=int, default=3, help="throughput repeats (median reported)")
    ap.add_argument("--pacing-tokens", type=int, default=250, help="tokens of the 50 tokens/s stream")
    ap.add_argument("--trials", type=int, default=200, help="anchor-to-stop trials")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    args = ap.parse_args(argv)

    with WorldProcess() as world:
        wc = WorldClient(world.url)
        try:
            thr = throughput(wc, args.streams, args.tokens, args.repeats)
            pac = pacing(wc, 50.0, 20.0, args.pacing_tokens, 1)
            anc = anchor_delay(wc, args.trials, anchor_token=5)
        finally:
            wc.close()

    checks = {
        "throughput_tokens_per_s": thr["tokens_per_s"] >= GOALS["throughput_tokens_per_s"],
        "pacing_p99_ms": pac["p99_ms"] < GOALS["pacing_p99_ms"],
        "anchor_stop_p99_ms": anc["p99_ms"] < GOALS["anchor_stop_p99_ms"],
    }
    rows = [
        ("throughput", f"{thr['tokens_per_s']:,.0f} tokens/s ({args.streams} streams x {args.tokens}, "
                       f"median of {args.repeats})", f">= {GOALS['throughput_tokens_per_s']:,}/s",
         checks["throughput_tokens_per_s"]),
        ("pacing error @50/s", f"p50 {pac['p50_ms']:.3f}  p99 {pac['p99_ms']:.3f}  max {pac['max_ms']:.3f} ms",
         f"p99 < {GOALS['pacing_p99_ms']} ms", checks["pacing_p99_ms"]),
        ("anchor -> stop", f"p50 {anc['p50_ms']:.3f}  p99 {anc['p99_ms']:.3f}  max {anc['max_ms']:.3f} ms "
                           f"({args.trials} trials)", f"p99 < {GOALS['anchor_stop_p99_ms']} ms",
         checks["anchor_stop_p99_ms"]),
        ("token -> stop", f"p50 {anc['from_token_p50_ms']:.3f}  p99 {anc['from_token_p99_ms']:.3f} ms", "", None),
    ]
    w0, w1, w2 = (max(len(r[i]) for r in rows) for i in range(3))
    print(f"{'measure':<{w0}}  {'result':<{w1}}  {'goal':<{w2}}  ok")
    for name, result, goal, ok in rows:
        print(f"{name:<{w0}}  {result:<{w1}}  {goal:<{w2}}  {'' if ok is None else 'yes' if ok else 'NO'}")

    report = {"machine": machine(), "goals": GOALS, "met": checks,
              "throughput": thr, "pacing": pac, "anchor_to_stop": anc, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 1 if args.strict and not all(checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
