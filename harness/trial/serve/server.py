"""The served trial's server process: the hosted run inside the path's app, under uvicorn on 127.0.0.1.

Started by the subject (harness/trial/serve/client.py) before the run's clock starts, as a child of it: the trial's
audits, reaping and owner marker cover it and everything it starts. It tells the subject its port on the fd it was
given, once the adapter is ready and its baseline is taken. SIGTERM ends it as it ends any uvicorn app.

    python -m harness.trial.serve.server PLAN_JSON SCENARIO_JSON OWNER_PID READY_FD    (the path: the plan's serve_path)
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import sys

import uvicorn

from harness.contract.registry import load_adapter
from harness.scenario import scenario_from_dict
from harness.trial import audit
from harness.trial.serve.hosted import HostedRun
from harness.trial.serve.paths import serve_path
from harness.trial.spec import SubjectPlan


def load_app_factory(ref: str):
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


async def main(hosted: HostedRun, factory, ready_fd: int) -> None:
    hosted.own.add(asyncio.current_task())  # the server's own: not the run's
    await hosted.launch()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(factory(hosted), log_level="warning", lifespan="off",
                                           access_log=False))
    serving = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.005)
    if serving.done():
        await serving  # its error
        return
    hosted.take_baseline()
    os.write(ready_fd, (json.dumps({"port": sock.getsockname()[1], "pid": os.getpid()}) + "\n").encode())
    os.close(ready_fd)
    await serving


if __name__ == "__main__":
    plan = SubjectPlan.from_json(sys.argv[1])
    path = serve_path(plan.spec.serve_path)
    assert path is not None, "the server serves a path"
    adapter_cls = load_adapter(plan.spec.adapter)
    adapter_cls.prepare()  # its framework imported before the run, as the runner does for forked subjects
    audit.install_egress_counter()
    hosted = HostedRun(plan, adapter_cls, scenario_from_dict(json.loads(sys.argv[2])), int(sys.argv[3]))
    asyncio.run(main(hosted, load_app_factory(path.app), int(sys.argv[4])))
