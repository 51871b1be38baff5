// The console page: plain HTML, CSS and JavaScript, no build step. It reads the token from
// "?token=T" (then drops it from the address bar) or asks for it, lists the sessions the token
// opens with their percent complete, and shows one session's status, polled every two seconds:
// overall, per-index and per-shard progress bars, throughput, ETA, active workers and failed
// documents, with filters by status, worker and index.
#include "console/console_page_internal.hpp"

namespace rfs::console::internal {

namespace {

constexpr std::string_view kPage = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rfs migration console</title>
<style>
  :root { --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --bar:#e8ebf1; --ok:#2e8b57;
          --run:#2f6fd6; --wait:#b0b7c3; --bad:#c0392b; }
  * { box-sizing: border-box; }
  body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
         margin: 0; background: #f6f7fa; }
  header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex;
           align-items: center; gap: 16px; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; }
  header .right { margin-left: auto; font-size: 12px; color: #c9cfdb; }
  main { display: grid; grid-template-columns: 260px 1fr; gap: 16px; padding: 16px 20px; }
  section, nav { background: #fff; border: 1px solid var(--line); border-radius: 6px;
                 padding: 12px 14px; }
  nav h2, section h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em;
                       color: var(--muted); margin: 0 0 8px; }
  nav ul { list-style: none; margin: 0; padding: 0; }
  nav li { padding: 6px 8px; border-radius: 4px; cursor: pointer; display: flex;
           justify-content: space-between; gap: 8px; }
  nav li:hover { background: #eef1f6; }
  nav li.selected { background: #dfe8fb; font-weight: 600; }
  .bar { position: relative; height: 16px; background: var(--bar); border-radius: 3px;
         overflow: hidden; min-width: 120px; }
  .bar > span { position: absolute; left: 0; top: 0; bottom: 0; background: var(--run); }
  .bar.done > span { background: var(--ok); }
  .bar.big { height: 24px; }
  .bar > em { position: absolute; right: 6px; top: 0; font-style: normal; font-size: 11px;
              line-height: 16px; color: #0b1220; }
  .bar.big > em { line-height: 24px; font-size: 13px; font-weight: 600; }
  .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr));
             gap: 10px; margin-top: 12px; }
  .figure { border: 1px solid var(--line); border-radius: 4px; padding: 6px 10px; }
  .figure b { display: block; font-size: 18px; }
  .figure small { color: var(--muted); }
  .plot { display: flex; align-items: stretch; gap: 6px; }
  .plot svg { flex: 1; border-left: 1px solid var(--muted); border-bottom: 1px solid var(--muted); }
  .axis-y { display: flex; flex-direction: column; justify-content: space-between;
    font-size: 11px; white-space: nowrap; }
  .axis-y.left { text-align: right; } .axis-y.right { text-align: left; }
  .axis-x { display: flex; justify-content: space-between; font-size: 11px; color: var(--muted);
    margin: 2px 0 4px; }
  table { width: 100%; border-collapse: collapse; margin-top: 6px; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line);
           vertical-align: middle; }
  th { font-size: 12px; color: var(--muted); font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .status { font-size: 12px; padding: 1px 6px; border-radius: 8px; color: #fff; }
  .status.completed { background: var(--ok); } .status.assigned { background: var(--run); }
  .status.pending { background: var(--wait); }
  .filters { display: flex; gap: 10px; flex-wrap: wrap; margin: 8px 0; }
  .filters label { font-size: 12px; color: var(--muted); }
  .error { color: var(--bad); margin: 8px 0; }
  #login { max-width: 420px; margin: 60px auto; }
  #login input { width: 100%; padding: 6px; margin: 8px 0; }
  .stack > * + * { margin-top: 16px; }
  .muted { color: var(--muted); }
  #session-name { text-transform: none; letter-spacing: 0; font-size: 15px; color: var(--fg); }
</style>
</head>
<body>
<header><h1>rfs migration console</h1><span class="right" id="clock"></span></header>
<div id="login" hidden>
  <section>
    <h2>Sign in</h2>
    <p>Enter the console's admin token or a session's token.</p>
    <form id="login-form"><input id="token-input" type="password" autocomplete="off"
      placeholder="token"><button type="submit">Open</button></form>
    <div class="error" id="login-error"></div>
  </section>
</div>
<main id="app" hidden>
  <nav><h2>Sessions</h2><ul id="sessions"></ul><div class="error" id="sessions-error"></div></nav>
  <div class="stack">
    <section id="overview"><h2>Session</h2><p class="muted">Choose a session.</p></section>
    <section id="chart-section" hidden><h2>Throughput over time</h2>
      <div class="filters"><label>Of <select id="chart-of"><option value="">the whole session</option></select></label></div>
      <div id="chart"></div></section>
    <section id="phases-section" hidden><h2>RfsWorker phases</h2><table id="phases"></table></section>
    <section id="workers-section" hidden><h2>Active workers</h2><table id="workers"></table></section>
    <section id="pressure-section" hidden><h2>Back-pressure per worker</h2><table id="pressure"></table></section>
    <section id="indices-section" hidden><h2>Indices</h2><table id="indices"></table></section>
    <section id="shards-section" hidden><h2>Shards</h2>
      <div class="filters">
        <label>Status <select id="filter-status"><option value="">all</option>
          <option>pending</option><option>assigned</option><option>completed</option></select></label>
        <label>Worker <select id="filter-worker"><option value="">all</option></select></label>
        <label>Index <select id="filter-index"><option value="">all</option></select></label>
      </div>
      <table id="shards"></table>
    </section>
  </div>
</main>
<script>
"use strict";
const state = { token: null, session: null, status: null, timer: null };
const OUTCOMES = [["rejected", "Rejected"], ["not_convertible", "Not convertible"],
  ["transform_failed", "Transform failed"], ["transform_dropped", "Dropped by transform"],
  ["rebuilt", "Rebuilt"]];
const $ = (id) => document.getElementById(id);

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function pct(value) { return value == null ? "" : Math.floor(value) + "%"; }
function num(n) { return n == null ? "?" : Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n == null) return "?";
  const units = ["B", "KB", "MB", "GB", "TB"]; let u = 0;
  while (n >= 1000 && u < units.length - 1) { n /= 1000; u++; }
  return (u ? n.toFixed(1) : n.toFixed(0)) + " " + units[u];
}
function duration(s) {
  if (s == null) return "unknown";
  s = Math.round(s);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}
// The session's throughput over time (status.throughput_history, smoothed by the console over the
// workers' reports) as two lines, each scaled to its own peak: documents/s against the left axis,
// _source bytes/s against the right one; time (UTC) along the bottom, with gridlines at halves.
function chart(series) {
  if (!series || series.length < 2) {
    return `<p class="muted">The chart appears after a few updates.</p>`;
  }
  const w = 600, h = 120;
  const line = (key, color, dash) => {
    const max = Math.max(...series.map((p) => p[key]), 1e-9);
    const points = series.map((p, i) =>
      `${(i / (series.length - 1) * w).toFixed(1)},${(h - 2 - p[key] / max * (h - 4)).toFixed(1)}`);
    return { max, svg: `<polyline class="${key}" fill="none" stroke="${color}" stroke-width="2"
      stroke-dasharray="${dash}" vector-effect="non-scaling-stroke" points="${points.join(" ")}"/>` };
  };
  // Dashed over solid: both stay visible where they coincide.
  const docs = line("documents_per_second", "#2f6fdb", "none");
  const src = line("bytes_per_second", "#2e8b57", "6 4");
  // Gridlines at the peak and at half of it.
  const grid = [2, h / 2].map((y) => `<line class="grid" x1="0" x2="${w}" y1="${y}" y2="${y}"
    stroke="#ddd" vector-effect="non-scaling-stroke"/>`).join("");
  const time = (at) => esc(String(at).slice(11, 19));
  const middle = series[Math.floor((series.length - 1) / 2)];
  return `<div class="plot"><div class="axis-y left" style="color:#2f6fdb"><span>${num(Math.round(docs.max))}</span>
      <span>${num(Math.round(docs.max / 2))}</span><span>0 docs/s</span></div>
    <svg id="throughput-chart" viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" width="100%"
      height="${h}" role="img" aria-label="throughput over time">${grid}${docs.svg}${src.svg}</svg>
    <div class="axis-y right" style="color:#2e8b57"><span>${bytes(src.max)}/s</span>
      <span>${bytes(src.max / 2)}/s</span><span>0</span></div></div>
    <div class="axis-x" id="chart-time-axis"><span title="${esc(series[0].at)}">${time(series[0].at)}</span>
      <span>${time(middle.at)}</span><span title="${esc(series[series.length - 1].at)}">${time(series[series.length - 1].at)} UTC</span></div>
    <div class="legend"><span style="color:#2f6fdb">&#9632; documents/s, peak
      ${num(Math.round(docs.max))}</span> &nbsp; <span style="color:#2e8b57">&#9632; _source/s, peak
      ${bytes(src.max)}</span></div>`;
}

// A time the console gave (ISO 8601 UTC) as the browser's local time, with the UTC time on hover.
function when(at) {
  if (!at) return "-";
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return esc(at);
  return `<span title="${esc(at)}">${esc(date.toLocaleTimeString())}</span>`;
}

// A lease expiry as "in 4 min 12 s" (or "... ago"), measured against the console's clock (the
// answer's server_time), with the absolute time on hover.
function expiry(at, serverTime) {
  if (!at) return "";
  const ms = Date.parse(at) - Date.parse(serverTime);
  if (Number.isNaN(ms)) return esc(at);
  const text = ms >= 0 ? "in " + duration(ms / 1000) : duration(-ms / 1000) + " ago";
  return `<span class="expiry" title="${esc(at)}">${esc(text)}</span>`;
}
function bar(percent, label, big) {
  const p = Math.max(0, Math.min(100, percent ?? 0));
  return `<div class="bar${big ? " big" : ""}${p >= 100 ? " done" : ""}" role="progressbar"
    aria-valuenow="${p}" aria-valuemin="0" aria-valuemax="100"><span style="width:${p}%"></span>
    <em>${esc(label ?? pct(percent))}</em></div>`;
}

async function api(path) {
  const response = await fetch(path, { headers: { Authorization: "Bearer " + state.token } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || response.statusText);
    error.status = response.status; throw error;
  }
  return body;
}

function showLogin(message) {
  $("app").hidden = true; $("login").hidden = false;
  $("login-error").textContent = message || "";
}

async function loadSessions() {
  let sessions;
  try { sessions = await api("/sessions"); }
  catch (e) {
    if (e.status === 401 || e.status === 403) { showLogin("That token opens no session."); return; }
    $("sessions-error").textContent = e.message; return;
  }
  $("login").hidden = true; $("app").hidden = false;
  const details = await Promise.all(sessions.map((s) =>
    api("/sessions/" + encodeURIComponent(s.name)).catch(() => s)));
  $("sessions").innerHTML = details.map((s) =>
    `<li data-session="${esc(s.name)}" class="${s.name === state.session ? "selected" : ""}">
       <span class="name">${esc(s.name)}</span>
       <span class="percent" data-percent="${s.percent_complete ?? ""}">${pct(s.percent_complete)}</span></li>`)
    .join("") || `<li class="muted">No sessions yet</li>`;
  for (const li of document.querySelectorAll("#sessions li[data-session]")) {
    li.onclick = () => select(li.dataset.session);
  }
  if (!state.session && details.length) select(details[0].name);
}

function select(name) {
  state.session = name;
  for (const li of document.querySelectorAll("#sessions li[data-session]")) {
    li.classList.toggle("selected", li.dataset.session === name);
  }
  refresh();
}

function fillSelect(id, values, all = "all") {
  const select = $(id); const current = select.value;
  select.innerHTML = `<option value="">${esc(all)}</option>` +
    values.map((v) => `<option>${esc(v)}</option>`).join("");
  select.value = values.includes(current) ? current : "";
}

function render(status) {
  const d = status.documents, b = status.bytes, t = status.throughput;
  $("overview").innerHTML = `<h2>Session <span id="session-name">${esc(status.session_name)}</span>
    ${status.trial ? `<span id="trial" class="status pending" title="at most ${esc(status.trial.max_docs_per_shard)} documents of each shard, into prefixed indices">TRIAL</span>` : ""}</h2>
    ${bar(status.percent_complete, pct(status.percent_complete), true)}
    <div class="figures">
      <div class="figure"><small>Complete</small><b id="overall-percent">${pct(status.percent_complete)}</b></div>
      <div class="figure"><small>Documents</small><b id="documents-processed">${num(d.processed)}</b>
        <small>of <span id="documents-total">${num(d.total)}</span></small></div>
      <div class="figure"><small>Shard files</small><b id="bytes-processed">${bytes(b.processed)}</b>
        <small>of ${bytes(b.total)} (${bytes(b.source_bytes_sent)} of _source sent)</small></div>
      <div class="figure"><small>Shards</small><b id="shards-completed">${num(status.work_items.completed)}</b>
        <small>completed, ${num(status.work_items.assigned)} assigned, ${num(status.work_items.pending)} pending</small></div>
      <div class="figure"><small>Throughput (smoothed)</small><b id="throughput">${t ? num(Math.round(t.documents_per_second)) + " docs/s" : "measuring"}</b>
        <small>${t ? bytes(t.bytes_per_second) + "/s of _source" : ""}</small></div>
      <div class="figure"><small>ETA</small><b id="eta">${duration(status.eta_seconds)}</b></div>
      <div class="figure"><small>Started</small><b id="run-started">${when(status.run_started_at)}</b>
        <small>elapsed <span id="elapsed">${status.elapsed_seconds == null ? "-" : duration(status.elapsed_seconds)}</span></small></div>
      <div class="figure"><small>Finished</small><b id="finished">${when(status.finished_at)}</b></div>
      <div class="figure"><small>Failed documents</small><b id="documents-failed">${num(d.failed)}</b></div>
      <div class="figure"><small>Outcome</small><b id="session-outcome" data-outcome="${esc(status.outcome)}">${esc((status.outcome || "").replaceAll("_", " ").toLowerCase())}</b></div>
    </div>
    ${(status.findings || []).length ? `<ul id="findings">${status.findings.map((f) =>
      `<li class="finding">${esc(f.index_name)}: ${num(f.documents)} ${esc(f.outcome.replaceAll("_", " "))}</li>`).join("")}</ul>` : ""}`;
  $("chart-section").hidden = false;
  const byIndex = status.throughput_history_by_index || {};
  fillSelect("chart-of", Object.keys(byIndex).sort(), "the whole session");
  const of = $("chart-of").value;
  $("chart").innerHTML = chart(of ? byIndex[of] : status.throughput_history);
  const phases = (status.workflow || []).filter((r) => r.record.startsWith("phase_") || r.record === "failed");
  $("phases-section").hidden = phases.length === 0;
  $("phases").innerHTML = `<tr><th>Phase</th><th>Status</th><th>Attempts</th><th>Worker</th><th>Reason</th></tr>` +
    phases.map((r) => `<tr class="phase" data-status="${esc(r.status)}"><td>${esc(r.record)}</td>
      <td><span class="status ${r.status === "COMPLETED" ? "completed" : r.status === "IN_PROGRESS" ? "assigned" : "pending"}">${esc(r.status)}</span></td>
      <td class="num">${esc(r.attempts)}</td><td>${esc(r.worker_id ?? "")}</td><td>${esc(r.reason ?? "")}</td></tr>`).join("");
  $("workers-section").hidden = false;
  // Liveness: a worker's last progress report ("12 s ago"), beside its lease.
  $("workers").innerHTML = `<tr><th>Worker</th><th>Index</th><th>Shard</th><th>Last report</th><th>Lease expiry</th></tr>` +
    (status.active_workers.map((w) => `<tr class="worker"><td>${esc(w.worker_id)}</td>
      <td>${esc(w.index_name)}</td><td class="num">${esc(w.shard_number)}</td>
      <td class="last-report" title="${esc(w.last_report_at ?? "")}">${w.last_report_seconds_ago == null ? "no report yet" : esc(duration(w.last_report_seconds_ago) + " ago")}</td>
      <td>${expiry(w.lease_expiry, status.server_time)}</td></tr>`).join("") ||
      `<tr><td colspan="5" class="muted">No worker holds a lease</td></tr>`);
  // What the targets answered each worker (429s, requests or items sent again), run over or not.
  const pressure = status.workers_back_pressure || [];
  $("pressure-section").hidden = pressure.length === 0;
  $("pressure").innerHTML = `<tr><th>Worker</th><th>429s</th><th>Retries</th><th>Reported</th></tr>` +
    pressure.map((w) => `<tr class="pressure" data-worker="${esc(w.worker_id)}"><td>${esc(w.worker_id)}</td>
      <td class="num rejected">${num(w.rejected_429)}</td><td class="num retries">${num(w.retries)}</td>
      <td title="${esc(w.reported_at)}">${esc(duration(w.reported_seconds_ago) + " ago")}</td></tr>`).join("");
  $("indices-section").hidden = false;
  $("indices").innerHTML = `<tr><th>Index</th><th>Shards</th><th>Documents</th><th>Bytes</th><th>Failed</th>` +
    OUTCOMES.map(([, title]) => `<th>${title}</th>`).join("") + `</tr>` +
    status.indices.map((i) => `<tr class="index" data-index="${esc(i.index_name)}">
      <td>${esc(i.index_name)}</td><td class="num">${i.work_items.completed}/${i.shards}</td>
      <td>${bar(i.documents.percent ?? i.percent_complete, num(i.documents.processed) + " / " + num(i.documents.total))}</td>
      <td>${bar(i.bytes.percent ?? i.percent_complete, bytes(i.bytes.processed) + " / " + bytes(i.bytes.total))}</td>
      <td class="num">${num(i.documents.failed)}</td>` +
      OUTCOMES.map(([key]) => `<td class="num outcome" data-outcome="${key}">${num((i.outcomes || {})[key] ?? 0)}</td>`).join("") +
      `</tr>`).join("");
  $("shards-section").hidden = false;
  fillSelect("filter-worker", [...new Set(status.shards.map((s) => s.worker_id).filter(Boolean))].sort());
  fillSelect("filter-index", [...new Set(status.shards.map((s) => s.index_name))].sort());
  const fs = $("filter-status").value, fw = $("filter-worker").value, fi = $("filter-index").value;
  const shards = status.shards.filter((s) => (!fs || s.status === fs) &&
    (!fw || s.worker_id === fw) && (!fi || s.index_name === fi));
  $("shards").innerHTML = `<tr><th>Index</th><th>Shard</th><th>Status</th><th>Documents</th><th>Bytes</th><th>Worker</th><th>Lease expiry</th></tr>` +
    shards.map((s) => `<tr class="shard" data-status="${esc(s.status)}">
      <td>${esc(s.index_name ?? s.work_item_id)}</td><td class="num">${esc(s.shard_number)}</td>
      <td><span class="status ${esc(s.status)}">${esc(s.status)}</span></td>
      <td>${bar(s.documents.percent ?? s.percent_complete, num(s.documents.processed) + " / " + num(s.documents.total))}</td>
      <td>${bar(s.bytes.percent ?? s.percent_complete, bytes(s.bytes.processed) + " / " + bytes(s.bytes.total))}</td>
      <td>${esc(s.worker_id ?? "")}</td><td>${expiry(s.lease_expiry, status.server_time)}</td></tr>`).join("");
  $("clock").textContent = "updated " + new Date().toLocaleTimeString();
  const li = document.querySelector(`#sessions li[data-session="${CSS.escape(status.session_name)}"] .percent`);
  if (li) { li.textContent = pct(status.percent_complete); li.dataset.percent = status.percent_complete; }
}

async function refresh() {
  clearTimeout(state.timer);
  if (state.session) {
    try {
      state.status = await api("/sessions/" + encodeURIComponent(state.session) + "/backfill/work-items/status");
      render(state.status);
    } catch (e) {
      $("overview").innerHTML = `<h2>Session</h2><div class="error">${esc(e.message)}</div>`;
    }
  }
  state.timer = setTimeout(() => { loadSessions().then(refresh); }, 2000);
}

for (const id of ["filter-status", "filter-worker", "filter-index", "chart-of"]) {
  $(id).onchange = () => state.status && render(state.status);
}
$("login-form").onsubmit = (event) => {
  event.preventDefault();
  state.token = $("token-input").value.trim();
  sessionStorage.setItem("rfs-console-token", state.token);
  loadSessions();
};

const params = new URLSearchParams(location.search);
state.token = params.get("token") || sessionStorage.getItem("rfs-console-token");
if (params.get("token")) {
  sessionStorage.setItem("rfs-console-token", state.token);
  history.replaceState(null, "", location.pathname);  // keep the token out of the history
}
if (params.get("session")) state.session = params.get("session");
if (state.token) { loadSessions().then(refresh); } else { showLogin(); }
</script>
</body>
</html>
)PAGE";

}  // namespace

std::string_view ConsolePage() { return kPage; }

}  // namespace rfs::console::internal
