// Drives the migration console's page in Debian's headless Chromium (playwright-core) against a
// console the C++ test started and filled: checks the numbers the DOM shows, that the page
// updates live while work completes (no reload), the filters, and the sign-in form; saves
// screenshots. Usage: node console_page_test.mjs URL SESSION TOKEN SCREENSHOT_DIR
// Prints one JSON line of what it saw; exits 1 with the reason on the first failed check.
import { chromium } from "playwright-core";

const [url, session, token, shots] = process.argv.slice(2);
const base = `/sessions/${session}/backfill/work-items`;

async function api(method, path, body) {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const seen = {};
const browser = await chromium.launch({
  executablePath: process.env.RFS_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const text = (selector) => page.locator(selector).first().innerText();

  // Without a token the page asks for one; the form opens the sessions.
  await page.goto(url + "/");
  await page.waitForSelector("#login:not([hidden])");
  seen.asked_for_token = true;
  await page.fill("#token-input", token);
  await page.click("#login-form button");
  await page.waitForSelector(`#sessions li[data-session="${session}"]`);

  // With ?token= the token is taken and dropped from the address bar.
  await page.goto(`${url}/?token=${token}`);
  await page.waitForFunction(() => document.querySelector("#overall-percent") !== null);
  seen.token_left_in_url = page.url().includes(token);
  check(!seen.token_left_in_url, "the token stayed in the address bar");
  seen.running = {
    session_name: await text("#session-name"),
    overall: await text("#overall-percent"),
    documents_processed: await text("#documents-processed"),
    documents_total: await text("#documents-total"),
    shards_completed: await text("#shards-completed"),
    documents_failed: await text("#documents-failed"),
    session_percent: await text(`#sessions li[data-session="${session}"] .percent`),
    workers: await page.locator("#workers tr.worker").allInnerTexts(),
    indices: await page.locator("#indices tr.index").count(),
    shards: await page.locator("#shards tr.shard").count(),
    progressbars: await page.locator("[role=progressbar]").count(),
  };

  // Work moves on: logs/0 reaches 700 documents. The page shows it without a reload, with the
  // throughput of the last minute and an ETA.
  await api("PUT", `${base}/logs-0/lease`, {
    worker_id: "page-w1",
    progress: { documents_processed: 700, bytes_processed: 700000, documents_failed: 2,
                outcomes: { rejected: 2, transform_dropped: 1, already_newer: 3 } },
    back_pressure: { rejected_429: 1234, retries: 56 },
  });
  await page.waitForFunction(() =>
    document.querySelector("#documents-processed")?.innerText === "1,700" &&
    document.querySelector("#throughput")?.innerText.includes("docs/s") &&
    document.querySelector("#eta")?.innerText !== "unknown", null, { timeout: 15000 });
  seen.moving = {
    overall: await text("#overall-percent"),
    throughput: await text("#throughput"),
    eta: await text("#eta"),
    expiry: await page.locator("#workers tr.worker .expiry").first().innerText(),
    chart_lines: await page.locator("#throughput-chart polyline").count(),
    chart_points: (await page.locator("#throughput-chart polyline").first()
      .getAttribute("points")).trim().split(/\s+/).length,
    expiry_title: await page.locator("#workers tr.worker .expiry").first().getAttribute("title"),
    outcome: await text("#session-outcome"),
    logs_rejected: await text('#indices tr.index[data-index="logs"] td[data-outcome="rejected"]'),
    logs_dropped: await text('#indices tr.index[data-index="logs"] td[data-outcome="transform_dropped"]'),
    logs_already_newer: await text('#indices tr.index[data-index="logs"] td[data-outcome="already_newer"]'),
    chart_indices: await page.locator("#chart-of option").allInnerTexts(),
    last_report: await page.locator("#workers tr.worker .last-report").first().innerText(),
    time_axis: await text("#chart-time-axis"),
    run_started: await text("#run-started"),
    elapsed: await text("#elapsed"),
    finished: await text("#finished"),
    back_pressure: await page.locator('#pressure tr.pressure[data-worker="page-w1"]').allInnerTexts(),
  };
  check(/1,234\s+56/.test(seen.moving.back_pressure.join(" ")),
        `page-w1's back-pressure is not shown: ${seen.moving.back_pressure}`);
  // The chart of one index.
  await page.selectOption("#chart-of", "logs");
  seen.moving.logs_chart_lines = await page.locator("#throughput-chart polyline").count();
  seen.moving.logs_chart_points = (await page.locator("#throughput-chart polyline").first()
    .getAttribute("points")).trim().split(/\s+/).length;
  await page.selectOption("#chart-of", "");
  await page.screenshot({ path: `${shots}/console-running.png`, fullPage: true });

  // Filters: completed shards only, then one worker's.
  await page.selectOption("#filter-status", "completed");
  seen.completed_rows = await page.locator("#shards tr.shard").count();
  await page.selectOption("#filter-status", "");
  await page.selectOption("#filter-worker", "page-w1");
  seen.w1_rows = await page.locator("#shards tr.shard").count();
  await page.selectOption("#filter-worker", "");

  // Live: finish the migration through the API; the open page must follow without a reload.
  const items = await api("GET", base);
  for (const item of items.filter((i) => i.status !== "completed")) {
    const worker = item.worker_id || "page-w9";
    if (!item.worker_id) await api("POST", `${base}/${item.work_item_id}/acquire?worker_id=${worker}`);
    await api("PUT", `${base}/${item.work_item_id}/lease`, {
      worker_id: worker,
      progress: { documents_processed: item.document_count, bytes_processed: item.total_size_bytes },
    });
    await api("PUT", `${base}/${item.work_item_id}/complete`, worker);
  }
  await page.waitForFunction(() => document.querySelector("#overall-percent")?.innerText === "100%",
                             null, { timeout: 15000 });
  seen.done = {
    overall: await text("#overall-percent"),
    documents_processed: await text("#documents-processed"),
    shards_completed: await text("#shards-completed"),
    eta: await text("#eta"),
    session_percent: await text(`#sessions li[data-session="${session}"] .percent`),
    workers: await page.locator("#workers tr.worker").count(),
    outcome: await text("#session-outcome"),
    findings: await page.locator("#findings li.finding").allInnerTexts(),
    throughput: await text("#throughput"),
    finished: await text("#finished"),
  };
  await page.screenshot({ path: `${shots}/console-complete.png`, fullPage: true });
  console.log(JSON.stringify(seen));
} catch (error) {
  console.log(JSON.stringify(seen));
  console.error(error.stack || String(error));
  process.exitCode = 1;
} finally {
  await browser.close();
}
