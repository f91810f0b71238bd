// The process side of the adapter protocol (docs/adapter-protocol.md) for an adapter in Node: `serve(adapter)`.
//
// It writes the capabilities first, then reads stdin line by line for as long as the process lives, so a `stop`
// arrives while the agent is busy (each request is handled as it comes, none waits for another), and answers each
// request with its result or an error. stdout carries protocol messages only: console.log, info and debug are sent
// to stderr before the adapter (or its framework) can write to stdout. The process exits when its stdin ends.
//
// What the adapter is (its name, stop modes and their texts, the signal of a signal mode, resume, tool styles,
// unsupported pairs) is declared once, in its folder's framework.toml: the harness hands that declaration to the
// process (the STOPBENCH_DECLARATION environment variable, JSON in the capabilities' shape), `declaration()` reads
// it, and serve() says it back as the capabilities. The adapter states only what it implements:
//   stops                            {mode: async function}: one per declared stop mode, no other (serve() refuses
//                                    to start otherwise); called with the adapter as `this`, it presses that
//                                    mode's button and returns when the framework says it stopped
//   async start(ctx)                 begin the job (ctx: the start request's params); return once it runs;
//                                    set `this.job` to the promise of the run
//   async resume(nextInput)          continue the stopped run from the framework's state; resolve when it ended
//                                    (throw NoResume if it has none)
//   async close()                    release what the adapter opened
//   versions()                       {package: version} of what it measures
//   isCancel(error)                  (optional) the job's error is the stop's (default: an AbortError)
//   async reportedUsage()            (optional) the output tokens the framework's own usage says the run used
//   asksStopButton                   (optional) true for a reference that reads the trial's stop button
// A signal mode (declared with a signal) is stopped by the harness's signal: at `start`, serve() installs the
// handler of the mode the trial will press (the start request's `mode`) and no other, so two modes on one signal
// are never both pressed; the handler presses that mode and then sends the `stopped` notification.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { egress, held } from "./audit.mjs";
import { monotonicNs } from "./http.mjs";
import { serveHttp } from "./http_host.mjs";

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

/** The environment variable in which the harness hands the process its declaration. */
export const DECLARATION_ENV = "STOPBENCH_DECLARATION";

/** Say why this process cannot serve, on stderr (the harness quotes it), and exit with 2. */
function refuse(message) {
  process.stderr.write(`${process.argv[1] ?? "adapter"}: ${message}\n`);
  process.exit(2);
}

let declared = null;

/** What the harness declares for this adapter (its framework.toml): {name, stop_modes: {mode: {primitive,
 * signal?}}, resume_primitive, tool_styles, unsupported, ..., declared_in (the file it is written in)}. */
export function declaration() {
  if (declared !== null) return declared;
  const text = process.env[DECLARATION_ENV];
  if (!text) {
    refuse(`${DECLARATION_ENV} is not set: the harness starts this process with the declaration of its ` +
      "framework.toml (docs/adapter-protocol.md, capabilities)");
  }
  try {
    declared = JSON.parse(text);
  } catch (error) {
    refuse(`${DECLARATION_ENV} is not JSON: ${String(error).slice(0, 200)}`);
  }
  if (typeof declared?.stop_modes !== "object" || declared.stop_modes === null) {
    refuse(`${DECLARATION_ENV}: no stop_modes in ${text.slice(0, 200)}`);
  }
  return declared;
}

/** The adapter implements exactly the declared stop modes: a function in `stops` for each, and none more. */
function checkStops(adapter, { stop_modes: modes, declared_in: where }) {
  if ("capabilities" in adapter) {
    refuse(`capabilities: declared in ${where}; the adapter states only its stops (one function per mode)`);
  }
  const stops = adapter.stops ?? {};
  const missing = Object.keys(modes).filter((mode) => typeof stops[mode] !== "function");
  const extra = Object.keys(stops).filter((mode) => !Object.hasOwn(modes, mode));
  if (missing.length) refuse(`stop mode(s) ${missing.join(", ")} declared in ${where} have no function in stops`);
  if (extra.length) refuse(`stops ${extra.join(", ")}: no such stop mode declared in ${where}`);
}

/** Press `mode`'s stop button: its function in `stops`, with the adapter as `this`. */
function press(adapter, mode) {
  const stop = adapter.stops[mode];
  if (!stop) return Promise.reject(new Error(`no stop mode ${mode}`));
  return Promise.resolve().then(() => stop.call(adapter));
}

/** The trial's own mode, when it is a signal mode: its signal presses it (once per process: one trial, one mode). */
function pressedBySignal(adapter, modes, mode) {
  const signal = modes[mode]?.signal;
  if (!signal || process.listenerCount(signal) > 0) return;
  process.on(signal, () => {
    stopHandled();
    press(adapter, mode).then(
      () => send({ method: "stopped", params: { signal } }),
      (error) => send({ method: "stopped", params: { signal, error: describe(error) } }),
    );
  });
}

export function serve(adapter) {
  const { declared_in: _, ...declared } = declaration();
  checkStops(adapter, declaration());
  if (process.env.STOPBENCH_SERVE_HTTP) { // a served trial: a Node HTTP handler hosts the run (http_host.mjs)
    serveHttp(adapter, ending, NoResume, Number(process.env.STOPBENCH_SERVE_HTTP), press);
    return;
  }
  send({ method: "capabilities", params: { protocol: PROTOCOL_VERSION, notifies_stop_handled: true,
                                           asks_stop_button: adapter.asksStopButton === true, ...declared } });
  const methods = {
    start: (params) => {
      pressedBySignal(adapter, declared.stop_modes, params.mode);
      return adapter.start(params).then(() => ({}));
    },
    stop: (params) => {
      stopHandled();
      return press(adapter, params.mode).then(() => ({}));
    },
    wait: () => ending(adapter.job, adapter.isCancel),
    resume: (params) => adapter.resume(params.next_input).then(() => ({})),
    close: () => adapter.close().then(() => ({})),
    versions: async () => ({ packages: adapter.versions() }),
    // what the framework's own usage says the stopped run used (output tokens), or null: it reports none
    usage: async () => ({ output_tokens: (await adapter.reportedUsage?.()) ?? null }),
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
