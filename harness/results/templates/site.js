// stopbench report: sortable tables, the button pages' filters (a scorecard cell's link lists exactly its
// trials), and a trial's timeline drawn from the evidence embedded in its page.
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
    th.addEventListener("click", (event) => {
      if (event.target.closest("a")) return;  // a header's glossary link
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

// --- a button page's filters ----------------------------------------------------------------------------
// the trial table's columns the filters read (button.html.j2)
const FILTER_COLUMNS = { scenario: 1, offset: 2, tool_style: 3, mitigation: 4, status: 6 };

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function has(row, attr, key) {
  return (" " + (row.dataset[attr] || "") + " ").includes(" " + key + " ");
}

function applyFilters() {
  const table = document.querySelector("table.trials");
  const form = document.getElementById("filters");
  if (!table || !form) return;
  const params = hashParams();
  let cell = params.get("cell") || "";
  if (!cell && params.get("over")) cell = "over:" + params.get("over");
  const select = form.elements.cell;
  if (cell && !Array.from(select.options).some((o) => o.value === cell)) {
    const option = document.createElement("option");  // a claim's or a finding's trials: named by its key
    option.value = cell;
    option.textContent = cell.startsWith("finding-") ? "finding: " + cell.slice(8).replace(/_/g, " ")
      : cell.replace(/^over:/, "all judged: ").replace(/^claim-/, "claim ");
    select.appendChild(option);
  }
  select.value = cell;
  const wanted = {};
  for (const name of Object.keys(FILTER_COLUMNS)) {
    wanted[name] = params.get(name) || "";
    form.elements[name].value = wanted[name];
  }
  const rows = Array.from(table.tBodies[0].rows);
  let shown = 0;
  const counts = {};
  for (const row of rows) {
    let ok = !cell || (cell.startsWith("over:") ? has(row, "n", cell.slice(5)) : has(row, "k", cell));
    for (const [name, col] of Object.entries(FILTER_COLUMNS)) {
      if (wanted[name] && row.cells[col].textContent !== wanted[name]) ok = false;
    }
    row.hidden = !ok;
    if (!ok) continue;
    shown += 1;
    for (const key of (row.dataset.n || "").split(" ").filter(Boolean)) {
      counts[key] = counts[key] || [0, 0];
      counts[key][1] += 1;
      if (has(row, "k", key)) counts[key][0] += 1;
    }
  }
  document.querySelectorAll("#counts td[data-share]").forEach((td) => {
    const [k, n] = counts[td.dataset.share] || [0, 0];
    td.textContent = n ? k + "/" + n : "n/a";
    td.className = "share " + (n === 0 ? "na" : k === 0 ? "zero" : k / n > 0.5 ? "most" : "some");
  });
  const what = select.options[select.selectedIndex] ? select.options[select.selectedIndex].textContent : "";
  const filters = Object.entries(wanted).filter(([, v]) => v).map(([k, v]) => k + " " + v);
  document.getElementById("shown").textContent = "Showing " + shown + " of " + rows.length + " trials" +
    (cell ? " (" + what + ")" : "") + (filters.length ? "; " + filters.join(", ") : "") +
    ". The shares below are over the trials shown (mitigation none; the scorecard's rule).";
}

function filtersToHash() {
  const form = document.getElementById("filters");
  const params = new URLSearchParams();
  const cell = form.elements.cell.value;
  if (cell.startsWith("over:")) params.set("over", cell.slice(5));
  else if (cell) params.set("cell", cell);
  for (const name of Object.keys(FILTER_COLUMNS)) {
    if (form.elements[name].value) params.set(name, form.elements[name].value);
  }
  location.hash = params.toString();
}

// --- a trial's timeline -----------------------------------------------------------------------------------
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

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;");
// a mark's value that is a monotonic clock reading (ns): shown in ms from the stop
const isClock = (k, v) => typeof v === "number" && v > 1e12 && (/_(ns|t)$/.test(k) || k === "waited_until");

function describe(e, ms) {
  if (e.event === "mark") {
    const data = e.data || {};
    const parts = Object.entries(data).filter(([k, v]) => k !== "processes" && v !== null && v !== "" &&
      !(typeof v === "object" && Object.keys(v).length === 0)).map(([k, v]) =>
      k + "=" + (isClock(k, v) ? ms(v) + " ms" : typeof v === "object" ? JSON.stringify(v) : v));
    if (data.processes && data.processes.length) parts.push("processes=" + data.processes.length);
    const detail = parts.join(", ");
    return "mark " + e.name + (detail ? " (" + detail.slice(0, 220) + ")" : "");
  }
  const keys = ["kind", "effect_id", "req", "n", "what", "anchor", "pid", "role", "timeout", "tokens", "complete"];
  const parts = keys.filter((k) => e[k] !== undefined && e[k] !== null && e[k] !== "").map((k) => k + "=" + e[k]);
  if (e.logical) parts.push("logical key " + e.logical);
  if (e.args) parts.push("args " + JSON.stringify(e.args));
  if (e.sent_t) parts.push("sent " + ((e.t - e.sent_t) / 1e6).toFixed(1) + " ms before");
  return e.event + (parts.length ? " (" + parts.join(", ") + ")" : "");
}

// what each mark on the strip is, in the legend's order
const MARKER = { llm_request: ["#0b5cad", "model request"], effect_received: ["#e0a100", "effect received"],
                 effect_committed: ["#d33", "effect committed"], compensation: ["#2e9d49", "compensation"] };

function niceStep(span) {
  const raw = span / 8;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}

function drawTimeline(record, row) {
  const box = document.getElementById("timeline");
  const events = record.events.slice().sort((a, b) => a.t - b.t);
  const started = events.find((e) => e.event === "mark" && e.name === "run_started");
  const stop = events.find((e) => e.event === "mark" && e.name === "stop_called");
  const zero = stop ? stop.t : started ? started.t : events[0].t;  // ms from the stop
  const first = started ? started.t : events[0].t;
  const end = events[events.length - 1].t;
  const ms = (t) => ((t - zero) / 1e6).toFixed(1);
  const span = Math.max(1, end - first);
  const x = (t) => (1000 * (t - first)) / span;
  let svg = '<svg viewBox="0 0 1000 64" preserveAspectRatio="none" role="img" aria-label="timeline">' +
    '<line x1="0" y1="30" x2="1000" y2="30" stroke="#bbb"/>';
  const step = niceStep(span / 1e6);
  for (let v = Math.ceil((first - zero) / 1e6 / step) * step; v <= (end - zero) / 1e6; v += step) {
    const px = x(zero + v * 1e6);
    svg += '<line x1="' + px.toFixed(1) + '" y1="40" x2="' + px.toFixed(1) + '" y2="45" stroke="#777"/>' +
      '<text x="' + px.toFixed(1) + '" y="57" font-size="9" text-anchor="middle" fill="#555">' +
      (Math.round(v * 10) / 10) + '</text>';
  }
  for (const e of events) {
    if (e.t < first) continue;
    if (e.event === "tokens") {  // a run of streamed tokens: a band from the first to the last
      const w = Math.max(1.5, (1000 * (e.t_last - e.t)) / span);
      svg += '<rect x="' + x(e.t).toFixed(1) + '" y="24" width="' + w.toFixed(1) + '" height="12" fill="' +
        (e.after ? "#e8a3a3" : "#9bb7d4") + '"/>';
      continue;
    }
    const m = MARKER[e.event];
    if (!m) continue;
    svg += '<line x1="' + x(e.t).toFixed(1) + '" y1="16" x2="' + x(e.t).toFixed(1) + '" y2="36" stroke="' + m[0] + '"/>';
  }
  if (stop) {
    svg += '<line x1="' + x(stop.t) + '" y1="2" x2="' + x(stop.t) + '" y2="44" stroke="#000" stroke-width="2"/>' +
      '<text x="' + (x(stop.t) + 4) + '" y="11" font-size="10">stop pressed</text>';
  }
  svg += "</svg>";
  const legend = '<p class="tl-legend">' + Object.values(MARKER).map(([c, w]) =>
    '<span><i style="background:' + c + '"></i>' + w + "</span>").join("") +
    '<span><i style="background:#9bb7d4"></i>tokens before the stop</span>' +
    '<span><i style="background:#e8a3a3"></i>tokens after the stop</span>' +
    '<span><i style="background:#000"></i>stop pressed</span>' +
    "<span>axis: ms from the stop</span><span class=\"dup\">same effect again: a duplicate</span></p>";
  const committed = new Map();  // logical key -> the effect_id first committed with it
  const items = [];
  for (const e of events) {
    let text;
    let dup = "";
    if (e.event === "tokens") {
      text = (e.n > 1 ? "tokens x" + e.n + " (to " + ms(e.t_last) + " ms)" : "token") + " of req " + e.req;
    } else {
      text = describe(e, ms);
      if (e.logical && (e.event === "effect_received" || e.event === "effect_committed")) {
        const earlier = committed.get(e.logical);
        if (earlier && earlier !== e.effect_id) dup = earlier;
        if (e.event === "effect_committed" && !earlier) committed.set(e.logical, e.effect_id);
      }
    }
    const isStop = e === stop;
    const cls = [isStop ? "stop" : stop && e.t > stop.t ? "after" : "", dup ? "dup" : ""].join(" ").trim();
    items.push('<li class="' + cls + '"><span class="t">' + ms(e.t) + "</span>" +
      (isStop ? "=== STOP PRESSED === " : "") + esc(text) +
      (dup ? ' <b class="dup">DUPLICATE: the same effect as ' + esc(dup) + "</b>" : "") + "</li>");
  }
  box.innerHTML = "<h3>Trial " + row.dataset.index + ": " + esc(record.trial_id) +
    " <small>(run " + esc(record.run_id) + "; times in ms from the stop; " + events.length + " events)</small></h3>" +
    svg + legend + '<ol class="events">' + items.join("") + "</ol>";
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
  applyFilters();
  const trial = hashParams().get("trial");
  if (trial) showTrial(trial);
}

document.querySelectorAll("table.sortable").forEach(makeSortable);
if (document.getElementById("timeline")) {
  document.addEventListener("click", (event) => {  // a trial's number: its timeline, the filters kept
    const a = event.target.closest('a[href^="#trial="]');
    if (!a) return;
    event.preventDefault();
    const params = hashParams();
    params.set("trial", a.getAttribute("href").slice("#trial=".length));
    location.hash = params.toString();
  });
  document.getElementById("filters").addEventListener("change", filtersToHash);
  window.addEventListener("hashchange", fromHash);
  fromHash();
}
