// stopbench report: sortable tables, and a trial's timeline drawn from the evidence embedded in its page.
"use strict";

function cellValue(td) {
  const text = td.textContent.trim();
  const n = parseFloat(text.replace(/[^0-9.eE+-].*$/, ""));
  return text !== "" && !isNaN(n) && /^[0-9.+-]/.test(text) ? n : text.toLowerCase();
}

function makeSortable(table) {
  const head = table.tHead;
  if (!head) return;
  Array.from(head.rows[0].cells).forEach((th, col) => {
    th.addEventListener("click", () => {
      const down = th.getAttribute("aria-sort") === "ascending";
      Array.from(head.rows[0].cells).forEach((o) => o.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
        const r = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === "number" ? -1 : 1;
        return down ? -r : r;
      });
      rows.forEach((r) => body.appendChild(r));
    });
  });
}

let evidence = null;  // trial_id -> record

async function loadEvidence() {
  if (evidence) return evidence;
  evidence = new Map();
  const node = document.getElementById("evidence");
  const text = node ? node.textContent.trim() : "";
  if (!text) return evidence;
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const lines = (await new Response(stream).text()).split("\n");
  for (const line of lines) {
    if (line.trim()) {
      const record = JSON.parse(line);
      evidence.set(record.trial_id, record);
    }
  }
  return evidence;
}

function describe(e) {
  if (e.event === "mark") {
    const data = e.data || {};
    const parts = Object.entries(data).filter(([k, v]) => k !== "processes" && v !== null && v !== "" &&
      !(typeof v === "object" && Object.keys(v).length === 0)).map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : v));
    if (data.processes && data.processes.length) parts.push("processes=" + data.processes.length);
    const detail = parts.join(", ");
    return "mark " + e.name + (detail ? " (" + detail.slice(0, 220) + ")" : "");
  }
  const keys = ["kind", "effect_id", "req", "n", "what", "anchor", "pid", "role", "timeout", "tokens", "complete"];
  const parts = keys.filter((k) => e[k] !== undefined && e[k] !== null && e[k] !== "").map((k) => k + "=" + e[k]);
  if (e.sent_t) parts.push("sent " + ((e.t - e.sent_t) / 1e6).toFixed(1) + " ms before");
  return e.event + (parts.length ? " (" + parts.join(", ") + ")" : "");
}

const MARKER = { llm_request: "#0b5cad", effect_received: "#e0a100", effect_committed: "#d33", compensation: "#2e9d49",
                 token: "#9bb7d4" };

function drawTimeline(record, row) {
  const box = document.getElementById("timeline");
  const events = record.events.slice().sort((a, b) => a.t - b.t);
  const started = events.find((e) => e.event === "mark" && e.name === "run_started");
  const t0 = started ? started.t : events[0].t;
  const stop = events.find((e) => e.event === "mark" && e.name === "stop_called");
  const end = events[events.length - 1].t;
  const ms = (t) => ((t - t0) / 1e6).toFixed(1);
  const span = Math.max(1, end - t0);
  let svg = '<svg viewBox="0 0 1000 46" preserveAspectRatio="none" role="img" aria-label="timeline">' +
    '<line x1="0" y1="30" x2="1000" y2="30" stroke="#bbb"/>';
  for (const e of events) {
    if (e.t < t0) continue;
    const x = (1000 * (e.t - t0)) / span;
    if (e.event === "tokens") {  // a run of streamed tokens: a band from the first to the last
      const w = Math.max(1.5, (1000 * (e.t_last - e.t)) / span);
      svg += '<rect x="' + x.toFixed(1) + '" y="24" width="' + w.toFixed(1) + '" height="12" fill="' +
        (e.after ? "#e8a3a3" : MARKER.token) + '"/>';
      continue;
    }
    const color = MARKER[e.event];
    if (!color) continue;
    svg += '<line x1="' + x.toFixed(1) + '" y1="16" x2="' + x.toFixed(1) + '" y2="36" stroke="' + color + '"/>';
  }
  if (stop) {
    const x = (1000 * (stop.t - t0)) / span;
    svg += '<line x1="' + x + '" y1="2" x2="' + x + '" y2="44" stroke="#000" stroke-width="2"/>' +
      '<text x="' + (x + 4) + '" y="11" font-size="10">stop pressed</text>';
  }
  svg += "</svg>";
  const items = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    let text;
    if (e.event === "tokens") {
      text = (e.n > 1 ? "tokens x" + e.n + " (to " + ms(e.t_last) + " ms)" : "token") + " of req " + e.req;
    } else {
      text = describe(e);
    }
    const isStop = e === stop;
    const cls = isStop ? "stop" : stop && e.t > stop.t ? "after" : "";
    items.push('<li class="' + cls + '"><span class="t">' + ms(e.t) + "</span>" +
      (isStop ? "=== STOP PRESSED === " : "") + text.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</li>");
  }
  box.innerHTML = "<h3>Trial " + row.dataset.index + ": " + record.trial_id.replace(/&/g, "&amp;").replace(/</g, "&lt;") +
    " <small>(run " + record.run_id + "; ms from run_started; " + events.length + " events)</small></h3>" + svg +
    '<ol class="events">' + items.join("") + "</ol>";
  box.hidden = false;
}

async function showTrial(index) {
  const row = document.querySelector('tr[data-index="' + index + '"]');
  if (!row) return;
  document.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
  row.classList.add("selected");
  const records = await loadEvidence();
  const record = records.get(row.dataset.trial);
  const box = document.getElementById("timeline");
  if (!record) {
    box.innerHTML = "<p>No ledger kept for this trial: its row is all there is.</p>";
    box.hidden = false;
    return;
  }
  drawTimeline(record, row);
  box.scrollIntoView({ block: "start" });
}

function fromHash() {
  const m = /trial=(\d+)/.exec(location.hash);
  if (m) showTrial(m[1]);
}

document.querySelectorAll("table.sortable").forEach(makeSortable);
if (document.getElementById("timeline")) {
  window.addEventListener("hashchange", fromHash);
  fromHash();
}
