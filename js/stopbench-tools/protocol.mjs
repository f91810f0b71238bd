// The process side of the adapter protocol (docs/adapter-protocol.md) for an adapter in Node: `serve(adapter)`.
//
// It writes the capabilities first, then reads stdin line by line for as long as the process lives, so a `stop`
// arrives while the agent is busy (each request is handled as it comes, none waits for another), and answers each
// request with its result or an error. stdout carries protocol messages only: console.log, info and debug are sent
// to stderr before the adapter (or its framework) can write to stdout. The process exits when its stdin ends.
//
// An adapter is an object:
//   capabilities                     the capabilities message's params (without `protocol`)
//   async start(ctx)                 begin the job (ctx: the start request's params); return once it runs;
//                                    set `this.job` to the promise of the run
//   async stop(mode)                 press that stop button; return when the framework says it stopped
//   async resume(nextInput)          continue the stopped run from the framework's state; resolve when it ended
//                                    (throw NoResume if it has none)
//   async close()                    release what the adapter opened
//   versions()                       {package: version} of what it measures
// A signal mode (capabilities.stop_modes[mode].signal) is stopped by the harness's signal: at `start`, serve()
// installs the handler of the mode the trial will press (the start request's `mode`) and no other, so two modes on
// one signal are never both pressed; the handler calls adapter.stop(mode) and then sends the `stopped` notification.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { egress, held } from "./audit.mjs";
import { monotonicNs } from "./http.mjs";

export const PROTOCOL_VERSION = 1;
export const NO_RESUME = -32001;
export const FAILED = -32002;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const PARSE_ERROR = -32700;

export class NoResume extends Error {}

const write = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug"]) console[name] = console.error; // stdout is the protocol's

function send(message) {
  write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

/** How a job's promise ended: completed, cancelled (an AbortError, or the framework's own abort error) or failed. */
export async function ending(job, isCancel = (e) => e?.name === "AbortError") {
  try {
    await job;
    return { ended: "completed", error: null };
  } catch (error) {
    return { ended: isCancel(error) ? "cancelled" : "failed", error: describe(error) };
  }
}

function describe(error) {
  return String(error?.stack?.split("\n").slice(0, 2).join(" ") || error).slice(0, 500);
}

/** The installed version of package `name` where the module at `fromUrl` (its import.meta.url) finds it: the
 * package.json in the nearest node_modules up from it, as Node resolves a bare name (read as a file: a package's
 * exports may hide ./package.json). */
export function installedVersion(name, fromUrl) {
  for (let dir = path.dirname(fileURLToPath(fromUrl)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, "node_modules", name, "package.json");
    if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")).version;
  }
  return "not installed";
}

/** The moment this process handles a stop, on the harness's clock (process.hrtime is CLOCK_MONOTONIC, as Python's
 * time.monotonic_ns): told before the framework's primitive is pressed, so the world holds its anchor until here
 * and "after stop" counts from here; the way from the harness's press to here is the delivery, measured apart. */
function stopHandled() {
  send({ method: "stop_handled", params: { t: String(monotonicNs()) } });
}

/** The trial's own mode, when it is a signal mode: its signal presses it (once per process: one trial, one mode). */
function pressedBySignal(adapter, mode) {
  const signal = adapter.capabilities.stop_modes[mode]?.signal;
  if (!signal || process.listenerCount(signal) > 0) return;
  process.on(signal, () => {
    stopHandled();
    adapter.stop(mode).then(
      () => send({ method: "stopped", params: { signal } }),
      (error) => send({ method: "stopped", params: { signal, error: describe(error) } }),
    );
  });
}

export function serve(adapter) {
  send({ method: "capabilities",
         params: { protocol: PROTOCOL_VERSION, notifies_stop_handled: true, ...adapter.capabilities } });
  const methods = {
    start: (params) => {
      pressedBySignal(adapter, params.mode);
      return adapter.start(params).then(() => ({}));
    },
    stop: (params) => {
      stopHandled();
      return adapter.stop(params.mode).then(() => ({}));
    },
    wait: () => ending(adapter.job, adapter.isCancel),
    resume: (params) => adapter.resume(params.next_input).then(() => ({})),
    close: () => adapter.close().then(() => ({})),
    versions: async () => ({ packages: adapter.versions() }),
    audit: async () => ({ held: held(), egress: egress() }),
  };
  const inFlight = new Set();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      send({ id: null, error: { code: PARSE_ERROR, message: `not JSON: ${line.slice(0, 120)}` } });
      return;
    }
    const { id, method, params = {} } = request ?? {};
    if (id === undefined || typeof method !== "string") {
      send({ id: id ?? null, error: { code: INVALID_REQUEST, message: "a request has an id and a method" } });
      return;
    }
    const handler = methods[method];
    if (!handler) {
      send({ id, error: { code: METHOD_NOT_FOUND, message: `no method ${method}` } });
      return;
    }
    const answered = Promise.resolve()
      .then(() => handler(params))
      .then(
        (result) => send({ id, result }),
        (error) => send({ id, error: { code: error instanceof NoResume ? NO_RESUME : FAILED, message: describe(error) } }),
      );
    inFlight.add(answered);
    answered.finally(() => inFlight.delete(answered));
  });
  // the end of stdin: the harness is done (or gone); answer what was asked, then exit
  lines.on("close", () => Promise.allSettled([...inFlight]).then(() => process.exit(0)));
}
