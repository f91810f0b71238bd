// The JS serving path (docs/serving.md): the adapter's run hosted by a Node HTTP handler, as apps serve the Vercel
// AI SDK: the handler makes the request's abort signal (what `req.signal` is in a Web-standard handler: aborted
// when the client goes away before the answer ended) and passes it on, `abortSignal: req.signal`; here the signal
// presses the adapter's stop for the trial's mode, the button the in-process rows press. `POST /cancel` is the stop
// endpoint a page calls (`resume: true`, where a stop is only a disconnect). `/harness/...` is the trial's channel.
//
// Started by the harness (harness/trial/serve/client.py) with STOPBENCH_SERVE_HTTP=<fd>: it listens on 127.0.0.1,
// writes {"port", "pid"} to that fd once ready, and posts the server's reaction to the world as marks
// (served_stop_seen, served_stop_returned, served_run_ended), stamped on CLOCK_MONOTONIC.
import { closeSync, readFileSync, writeSync } from "node:fs";
import http from "node:http";
import { egress, held } from "./audit.mjs";
import { monotonicNs, postJson } from "./http.mjs";

/** node:http's own timers, the server's furniture, not the run's: the Date header's cache, reset a second after a
 * response is written (lib/_http_outgoing.js utcDate). */
const FURNITURE = /^setTimeout\(resetCache, /;

export function describe(error) {
  return String(error?.stack?.split("\n").slice(0, 2).join(" ") || error).slice(0, 500);
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {});
      } catch (e) {
        reject(e);
      }
    });
    req.on("error", reject);
  });
}

function json(res, status, body) {
  const data = JSON.stringify(body, (_k, v) => (typeof v === "bigint" ? String(v) : v));
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data),
                          Connection: "close" });
  res.end(data);
}

export function serveHttp(adapter, ending, NoResume, readyFd, press) {
  let ctx = null; // the start params, from /harness/configure
  let job = null; // how the job ended, once started: a promise of {ended, error}
  let stopping = null;
  const own = new Set(); // the async ids of the harness's own resources here (the listening socket, the channel)

  async function mark(name, t, data) {
    await postJson(`${ctx.run_url}/marks`, [{ name, t: Number(t), data }]);
  }

  function stop(how) {
    if (stopping === null) {
      const t = monotonicNs();
      stopping = (async () => {
        await mark("served_stop_seen", t, { how });
        let error = null;
        try {
          await press(adapter, ctx.mode);
        } catch (e) {
          error = describe(e);
        }
        await mark("served_stop_returned", monotonicNs(), { error });
      })();
    }
    return stopping;
  }

  const routes = {
    "POST /harness/configure": async (req, res) => {
      ctx = await readJson(req);
      json(res, 200, {});
    },
    "GET /": async (req, res) => { // the chat page (harness/trial/serve/page/chat.html: its path comes with the config)
      const page = readFileSync(ctx.page);
      res.writeHead(200, { "Content-Type": "text/html", "Content-Length": page.length, Connection: "close" });
      res.end(page);
    },
    "POST /chat": async (req, res) => {
      await readJson(req);
      // the request's abort signal, as a Web-standard handler's req.signal: aborted when the client goes away
      // before the answer has ended
      const controller = new AbortController();
      res.on("close", () => { if (!res.writableFinished) controller.abort(); });
      const signal = controller.signal;
      try {
        await adapter.start(ctx);
      } catch (e) {
        json(res, 500, { error: describe(e) });
        return;
      }
      signal.addEventListener("abort", () => { stop("disconnect"); }, { once: true }); // abortSignal: req.signal
      job = ending(adapter.job, adapter.isCancel).then(async (end) => {
        await mark("served_run_ended", monotonicNs(), end);
        return end;
      });
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
      res.write("event: started\r\ndata: {}\r\n\r\n");
      const end = await job;
      if (!signal.aborted) res.end(`event: done\r\ndata: ${JSON.stringify(end)}\r\n\r\n`);
    },
    "POST /cancel": async (req, res) => {
      await readJson(req);
      await stop("cancel");
      json(res, 200, {});
    },
    "POST /harness/wait": async (req, res) => {
      await readJson(req);
      json(res, 200, await job);
    },
    "POST /harness/resume": async (req, res) => {
      await readJson(req);
      try {
        await adapter.resume(ctx.next_input);
        json(res, 200, { resumed: true });
      } catch (e) {
        if (e instanceof NoResume) json(res, 200, { resumed: false, reason: String(e.message) });
        else json(res, 500, { error: describe(e) });
      }
    },
    "POST /harness/close": async (req, res) => {
      await readJson(req);
      try {
        await adapter.close();
        json(res, 200, {});
      } catch (e) {
        json(res, 500, { error: describe(e) });
      }
    },
    "GET /harness/audit": async (req, res) => {
      const asking = String(req.socket._handle?.getAsyncId?.() ?? "");
      const run = held().filter((i) => i.id !== asking && !own.has(i.id) && !FURNITURE.test(i.what));
      json(res, 200, { held: run, egress: egress() });
    },
  };

  const server = http.createServer((req, res) => {
    const route = routes[`${req.method} ${req.url}`];
    if (!route) {
      json(res, 404, { error: `no ${req.method} ${req.url}` });
      return;
    }
    route(req, res).catch((e) => { if (!res.headersSent) json(res, 500, { error: describe(e) }); });
  });
  server.listen(0, "127.0.0.1", () => {
    for (const item of held()) own.add(item.id); // the server's own: its listening socket, its timers
    writeSync(readyFd, JSON.stringify({ port: server.address().port, pid: process.pid }) + "\n");
    closeSync(readyFd);
  });
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
