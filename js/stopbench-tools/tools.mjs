// The scenario's tools for an adapter in Node: the one implementation, as harness/tools/toolbox.py is for Python.
// Each tool calls the world's service for the run and returns the service's JSON answer as a string. The tool
// catalogue is not copied here: the harness sends it in `start` (docs/adapter-protocol.md), from
// harness/tools/catalogue.py. Idempotency keys and the saga log follow harness/tools/mitigation.py exactly, so
// `--mitigation` works for a Node adapter as for a Python one.
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { monotonicNs, postJson } from "./http.mjs";

export { monotonicNs, postJson, SENT_HEADER } from "./http.mjs";

export class ToolError extends Error {}
/** The call had not left when stop was pressed, and its caller asked not to send it then. */
export class StopPressed extends Error {}

/** Python's json.dumps(value, sort_keys=sortKeys): separators ", " and ": ", non-ASCII escaped (ensure_ascii). */
export function pyDumps(value, sortKeys = false) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") {
    return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return "[" + value.map((v) => pyDumps(v, sortKeys)).join(", ") + "]";
  const keys = Object.keys(value);
  if (sortKeys) keys.sort();
  return "{" + keys.map((k) => `${pyDumps(k)}: ${pyDumps(value[k], sortKeys)}`).join(", ") + "}";
}

/** What makes two effects "the same": their kind and arguments (harness/tools/catalogue.py logical_effect). */
export function logicalEffect(kind, args) {
  return createHash("sha256").update(`${kind}:${pyDumps(args, true)}`).digest("hex").slice(0, 16);
}

export const GENERATIONS = "saga-generations.json";

/**
 * The trial's stop button, as a tool that asks it before a send reads it (harness/stop_button.py): the file holds
 * the press's time once pressed, nothing before. Read without its lock (Node has no flock): a press between the
 * read and the stamp, microseconds apart, is not seen.
 */
export class StopButton {
  constructor(file) {
    this.file = file;
  }

  sendTime() {
    let text = "";
    try {
      text = readFileSync(this.file, "utf8").trim();
    } catch {
      text = "";
    }
    if (text) throw new StopPressed("stop was pressed before this call left");
    return monotonicNs();
  }
}

export class Toolbox {
  /** `ctx`: the params of the protocol's `start`. */
  constructor(ctx, { timeoutMs = 30000 } = {}) {
    this.ctx = ctx;
    this.servicesUrl = ctx.services_base_url.replace(/\/$/, "");
    this.timeoutMs = timeoutMs;
    this.specs = Object.fromEntries(ctx.tools.map((t) => [t.name, t]));
    this.button = ctx.stop_button ? new StopButton(ctx.stop_button.path) : null;
  }

  /** The tools in OpenAI Chat Completions form (harness/tools/catalogue.py openai_tool_definitions). */
  openaiDefinitions() {
    return this.ctx.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }

  /** The Idempotency-Key the trial's mitigation gives a call (harness/tools/mitigation.py), or null. */
  keyFor(name, args) {
    const kind = this.specs[name].effect_kind;
    if (!kind) return null;
    if (this.ctx.idempotency === "per_call") return `${this.ctx.run_id}-call-${randomBytes(8).toString("hex")}`;
    if (this.ctx.idempotency !== "idempotent") return null;
    const logical = logicalEffect(kind, args);
    let generation = 0;
    try {
      generation = JSON.parse(readFileSync(path.join(this.ctx.workdir, GENERATIONS), "utf8"))[logical] ?? 0;
    } catch {
      generation = 0;
    }
    return `${this.ctx.run_id}-${logical}-${generation}`;
  }

  /**
   * One tool call: resolves to the service's answer as JSON text. `idempotencyKey` in place of the mitigation's;
   * `signal` aborts it (closes its connection); `unlessPressed`: throw StopPressed rather than send after the
   * trial's stop button was pressed (only the reference asks; a framework's tools never do).
   */
  async call(name, args, { idempotencyKey, signal, unlessPressed = false } = {}) {
    const spec = this.specs[name];
    if (!spec) throw new ToolError(`no tool ${JSON.stringify(name)} (tools: ${Object.keys(this.specs).join(", ")})`);
    const params = Object.keys(spec.parameters.properties);
    const given = Object.keys(args).sort();
    if (given.join() !== [...params].sort().join()) {
      throw new TypeError(`${name}() takes ${params.join(", ")}; got ${given.join(", ")}`);
    }
    const key = idempotencyKey ?? this.keyFor(name, args);
    if (key && spec.effect_kind && this.ctx.saga_log) {
      appendFileSync(this.ctx.saga_log, pyDumps({ kind: spec.effect_kind, key, logical: logicalEffect(spec.effect_kind, args) }) + "\n");
    }
    const sendTime = unlessPressed && this.button ? () => this.button.sendTime() : monotonicNs;
    const url = `${this.servicesUrl}/${spec.path}`;
    const { status, text } = await postJson(url, args, key ? { "Idempotency-Key": key } : {},
      { timeoutMs: this.timeoutMs, signal, sendTime });
    return pyDumps(answer(url, status, text));
  }

  /** Undo a committed effect (recall the email, close the PR, cancel the meeting, delete the post). */
  async compensate(kind, effectId) {
    const url = `${this.servicesUrl}/${this.ctx.compensations[kind]}`;
    const { status, text } = await postJson(url, { effect_id: effectId }, {}, { timeoutMs: this.timeoutMs });
    return answer(url, status, text);
  }
}

function answer(url, status, text) {
  if (status >= 400) throw new ToolError(`${new URL(url).pathname}: HTTP ${status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}
