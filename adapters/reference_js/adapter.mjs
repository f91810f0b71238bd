// reference-js: the reference's stop, in Node. A plain agent loop on the model API (streamed Chat Completions over
// node:http) with the scenario's tools from stopbench-tools, stopped with an AbortController, as a JavaScript chat
// UI's stop button is. It does what adapters/reference does:
// - the model stream is closed the moment stop arrives (the controller's signal aborts the request);
// - tool calls already sent are awaited, not abandoned, so their outcome is known; a call or model request not yet
//   sent when stop is pressed is not sent (it asks the trial's stop button as it leaves);
// - every effect that committed after the press is compensated (recall / close / cancel / delete);
// - each step carries an idempotency key, and a checkpoint of completed steps lets resume continue without
//   repeating a side effect or a model turn.
// `sigterm` is the same stop pressed by a signal: the app's SIGTERM handler (serve() installs it, as
// framework.toml's [stop_signals] declares).
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { monotonicNs, StopPressed, Toolbox } from "stopbench-tools";
import { callTool, openMcp } from "stopbench-tools/mcp";
import { installedVersion, serve } from "stopbench-tools/protocol";

class Checkpoint {
  constructor(file) {
    this.file = file;
    let data = {};
    try {
      data = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      data = {};
    }
    this.turns = data.turns ?? [];
    this.results = data.results ?? {};
    this.attempts = data.attempts ?? {};
  }

  save() {
    writeFileSync(this.file + ".tmp", JSON.stringify({ turns: this.turns, results: this.results, attempts: this.attempts }));
    renameSync(this.file + ".tmp", this.file);
  }

  messages(system, prompt) {
    const out = [{ role: "system", content: system }, { role: "user", content: prompt }];
    for (const turn of this.turns) {
      out.push(turn);
      for (const call of turn.tool_calls ?? []) {
        if (call.id in this.results) out.push({ role: "tool", tool_call_id: call.id, content: this.results[call.id].content });
      }
    }
    return out;
  }

  pendingCalls() {
    const last = this.turns.length ? this.turns[this.turns.length - 1].tool_calls ?? [] : [];
    return last.filter((c) => !(c.id in this.results));
  }
}

/** A request sent again at most this many times, as the openai SDKs do (DEFAULT_MAX_RETRIES). */
const RETRIES = 2;

/** A failed model request that may succeed when sent again: its status (408, 409, 429, >= 500), a connection
 * error, or a stream that broke off before its end; `retryAfterS` from the Retry-After header. */
class Retryable extends Error {
  constructor(message, retryAfterS = null) {
    super(message);
    this.retryAfterS = retryAfterS;
  }
}

/** modelTurn, sent again after a Retryable failure (the SDKs' back-off: Retry-After, else 0.5 s doubled), at most
 * RETRIES times; the wait is cut short by the stop (the signal). */
async function modelTurnRetrying(ctx, tools, messages, signal) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await modelTurn(ctx, tools, messages, signal);
    } catch (e) {
      if (!(e instanceof Retryable) || signal.aborted || attempt >= RETRIES) throw e;
      await sleep(1000 * (e.retryAfterS ?? 0.5 * 2 ** attempt), undefined, { signal });
    }
  }
}

/** One streamed Chat Completions request; resolves to the assistant message. The signal closes the stream. */
function modelTurn(ctx, tools, messages, signal) {
  const body = JSON.stringify({ model: ctx.model_name, stream: true, tools, messages });
  const url = new URL(`${ctx.model_base_url.replace(/\/$/, "")}/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: "POST", signal, agent: false,
      headers: { "Content-Type": "application/json", Authorization: "Bearer x", "Content-Length": Buffer.byteLength(body) },
    }, (res) => {
      if (res.statusCode >= 400) {
        res.resume();
        const again = [408, 409, 429].includes(res.statusCode) || res.statusCode >= 500;
        const after = Number(res.headers["retry-after"]);
        const error = `model API: HTTP ${res.statusCode}`;
        reject(again ? new Retryable(error, after > 0 && after <= 60 ? after : null) : new Error(error));
        return;
      }
      res.setEncoding("utf8");
      const text = [];
      const calls = {};
      let buffer = "";
      let done = false;
      res.on("data", (chunk) => {
        buffer += chunk;
        const lines = buffer.split("\n");
        buffer = lines.pop();
        for (const line of lines) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") {
            done = true;
            continue;
          }
          const delta = JSON.parse(data).choices?.[0]?.delta;
          if (!delta) continue;
          if (delta.content) text.push(delta.content);
          for (const tc of delta.tool_calls ?? []) {
            const call = (calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
            call.id = tc.id || call.id;
            call.function.name = tc.function?.name || call.function.name;
            call.function.arguments += tc.function?.arguments ?? "";
          }
        }
      });
      res.on("end", () => {
        if (!done) {
          reject(new Retryable("model API: the stream broke off before its end"));
          return;
        }
        const message = { role: "assistant", content: text.join("") || null };
        const indexes = Object.keys(calls).map(Number).sort((a, b) => a - b);
        if (indexes.length) message.tool_calls = indexes.map((i) => calls[i]);
        resolve(message);
      });
      res.on("error", (e) => reject(signal.aborted ? e : new Retryable(`model API: ${e.message}`)));
      res.on("aborted", () => reject(signal.aborted ? new Error("aborted") : new Retryable("model API: the stream broke off")));
    });
    req.on("error", (e) => reject(signal.aborted || e.name === "AbortError" ? e : new Retryable(`model API: ${e.message}`)));
    req.end(body);
  });
}

class ReferenceJs {
  /** framework.toml's [stop_modes]: the one stop, by a request (cancel) or by the app's SIGTERM handler. */
  stops = { cancel: () => this.cancel(), sigterm: () => this.cancel() };

  /** A model request or tool call not yet sent when stop is pressed is not sent: it asks the trial's stop button. */
  asksStopButton = true;

  async start(ctx) {
    this.ctx = ctx;
    this.toolbox = new Toolbox(ctx);
    this.tools = this.toolbox.openaiDefinitions();
    this.checkpoint = new Checkpoint(path.join(ctx.workdir, "reference-js-checkpoint.json"));
    this.inflight = new Set();
    this.stopNs = null;
    this.mcp = null;
    await this.openMcp();
    this.run();
  }

  run() {
    this.controller = new AbortController();
    this.job = this.loop(this.controller.signal);
    this.job.catch(() => {}); // `wait` reads how it ended
  }

  async cancel() {
    this.stopNs = this.pressedNs() ?? monotonicNs();
    this.controller.abort();
    await this.job.catch(() => {}); // first the model stream: closed once the loop has unwound
    await Promise.allSettled([...this.inflight]);
    await this.compensateLateEffects();
    await this.closeMcp();
  }

  /** When the user pressed stop: the trial's stop button holds that moment (the same monotonic clock). The stop
   * request arrives later (a message, then this event loop's turn): an effect that committed in between committed
   * after the press, and is undone like any other. */
  pressedNs() {
    try {
      const text = readFileSync(this.ctx.stop_button.path, "utf8").trim();
      return text ? BigInt(text) : null;
    } catch {
      return null;
    }
  }

  async resume() {
    this.stopNs = null;
    await this.openMcp();
    this.run();
    await this.job;
  }

  async close() {
    this.controller?.abort();
    await this.job?.catch(() => {});
    await this.closeMcp();
  }

  versions() {
    return { node: process.versions.node, "@modelcontextprotocol/sdk": installedVersion("@modelcontextprotocol/sdk", import.meta.url) };
  }

  async openMcp() {
    if (this.ctx.tool_style === "mcp" && this.mcp === null) this.mcp = await openMcp(this.ctx);
  }

  async closeMcp() {
    const mcp = this.mcp;
    this.mcp = null;
    await mcp?.close();
  }

  // --- the agent loop ---------------------------------------------------------------------------

  async loop(signal) {
    for (;;) {
      const pending = this.checkpoint.pendingCalls();
      if (pending.length) {
        // every call started; none abandoned: the loop waits for all (stop waits for them too)
        const results = await Promise.allSettled(pending.map((call) => this.startTool(call, signal)));
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw failed.reason instanceof StopPressed ? signal.reason ?? abortError() : failed.reason;
        continue;
      }
      signal.throwIfAborted();
      // like a tool call, a model request not yet sent when stop is pressed is not sent: a signal or a stop request
      // reaches this process after the press, and the loop may be about to ask again in between
      if (this.pressedNs() !== null) throw abortError();
      const message = await modelTurnRetrying(this.ctx, this.tools, this.checkpoint.messages(this.ctx.system_prompt, this.ctx.prompt), signal);
      this.checkpoint.turns.push(message);
      this.checkpoint.save();
      if (!message.tool_calls) return;
    }
  }

  startTool(call, signal) {
    const task = this.runTool(call, signal);
    this.inflight.add(task);
    task.finally(() => this.inflight.delete(task)).catch(() => {});
    return task;
  }

  async runTool(call, signal) {
    const name = call.function.name;
    const args = JSON.parse(call.function.arguments || "{}");
    const attempt = this.checkpoint.attempts[call.id] ?? 0;
    const key = `${this.ctx.run_id}:${call.id}:${attempt}`;
    if (signal.aborted) throw new StopPressed(`${name}: not sent, stop was pressed`);
    // not aborted by the signal once sent: its outcome is awaited, as the Python reference shields its calls
    const content = this.mcp
      ? await callTool(this.mcp, name, args, { notSent: this.ctx.stop_button?.not_sent })
      : await this.toolbox.call(name, args, { idempotencyKey: key, unlessPressed: true });
    let answer = {};
    try {
      answer = JSON.parse(content);
    } catch {
      answer = {};
    }
    const kind = this.toolbox.specs[name].effect_kind;
    const effect = kind ? { kind, effect_id: answer.effect_id ?? null, committed_ns: answer.committed_ns ?? null } : null;
    this.checkpoint.results[call.id] = { content, effect };
    this.checkpoint.save();
  }

  async compensateLateEffects() {
    // undo what landed after the user said stop, and forget it so resume does it again
    for (const [id, result] of Object.entries(this.checkpoint.results)) {
      const effect = result.effect;
      if (!effect?.committed_ns || BigInt(effect.committed_ns) <= this.stopNs) continue;
      await this.toolbox.compensate(effect.kind, effect.effect_id);
      delete this.checkpoint.results[id];
      this.checkpoint.attempts[id] = (this.checkpoint.attempts[id] ?? 0) + 1;
    }
    this.checkpoint.save();
  }
}

function abortError() {
  return new DOMException("stopped", "AbortError");
}

serve(new ReferenceJs());
