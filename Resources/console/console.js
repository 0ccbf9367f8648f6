// fetchd operator console. Job data is only ever set with textContent or as attribute values,
// never parsed as markup. The token lives in sessionStorage and travels only in the
// Authorization header; nothing is put in a URL.
"use strict";

const TOKEN_KEY = "fetchd.token";
const STATES = ["queued", "running", "paused", "completed", "failed", "cancelled"];
const SECTION = { running: "running", queued: "queued", paused: "paused", failed: "failed", completed: "finished", cancelled: "finished" };
// Which actions a job in each state takes (API.md: pause/resume/cancel/retry).
const ACTIONS = { queued: ["Pause", "Cancel"], running: ["Pause", "Cancel"], paused: ["Resume", "Cancel"], failed: ["Retry"] };
const FALLBACK_RELIST_MS = 5000;
// Which actions a watch in each state takes (API.md, Watches: pause/resume/check).
const WATCH_ACTIONS = { active: ["Pause", "Check now"], paused: ["Resume"] };
const WATCH_REQUEST = { Pause: "pause", Resume: "resume", "Check now": "check" };
// A watch's checks are jobs: their state events say that watches changed, and the watches are
// listed again at most this often (10,000 watches checked each minute send 300 events a second).
const WATCH_RELIST_MS = 1000;

const $ = (id) => document.getElementById(id);
const jobs = new Map();      // id → Download, as last seen
const live = new Map();      // id → latest progress event of a running job
const sessions = new Map();  // name → counts {state: n}
const watches = new Map();   // id → Watch, as last listed
let watchTimer = null;       // the watches' next listing, once a check changed state
let lastEventId = null;
let stream = null;           // AbortController of the /events request
let streamOpen = false;      // /events answered and is being read
let listing = null;          // the listing in flight
let listAgain = false;       // a listing was asked for while one was in flight
let fallbackTimer = null;    // re-lists while /events cannot be opened
let pendingEvents = null;    // state events that arrive while a listing is in flight

class Refused extends Error {}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  if (response.status === 401) { refuse(); throw new Refused("token refused"); }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) throw new Error(problemText(data, response.status));
  return data;
}

function problemText(problem, status) {
  if (!problem) return "HTTP " + status;
  if (Array.isArray(problem.errors) && problem.errors.length) {
    return problem.errors.map((e) => (e.field ? e.field + ": " : "") + e.message).join("; ");
  }
  return problem.detail || problem.title || "HTTP " + status;
}

// --- formatting

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return (unit === 0 || value >= 10 ? Math.round(value) : value.toFixed(1)) + " " + units[unit];
}

function duration(seconds) {
  if (seconds < 60) return Math.max(1, Math.round(seconds)) + " s";
  if (seconds < 3600) return Math.round(seconds / 60) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}

// An upload's bytes are those sent, of its source's size; a download's those received.
function moved(item) { return item.kind === "upload" ? item.bytesSent : item.bytesReceived; }
function total(item) { return item.kind === "upload" ? item.bytesTotal : item.bytesExpected; }

// What a job is called in the list: a download by its destination, an upload by its source.
function title(job) { return job.kind === "upload" ? "upload " + job.source : job.destination; }

function progressText(job, event) {
  const received = moved(event || job);
  const expected = total(event || job);
  const parts = [bytes(received) + (expected != null ? " of " + bytes(expected) : "")];
  if (job.state === "running") {
    const rate = event ? event.bytesPerSecond : 0;
    parts.push(bytes(rate) + "/s");
    if (rate > 0 && expected != null && expected > received) parts.push(duration((expected - received) / rate) + " left");
  }
  return parts.join(" · ");
}

// --- rendering

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function renderJob(job) {
  const item = el("li", "job");
  item.dataset.jobId = job.id;
  item.dataset.state = job.state;
  item.dataset.kind = job.kind;
  item.append(el("span", "dest", title(job)));
  const actions = el("div", "actions");
  for (const action of ACTIONS[job.state] || []) {
    const button = el("button", "", action);
    button.type = "button";
    button.setAttribute("aria-label", action + " " + title(job));
    button.addEventListener("click", () => act(job, action));
    actions.append(button);
  }
  item.append(actions);
  let state = job.state;
  if (job.state === "queued" && job.waitingFor) state += " · waiting for " + job.waitingFor;
  if (job.session !== "default") state += " · session " + job.session;
  if (job.watch) state += " · check of a watch";
  item.append(el("span", "state", state));
  item.append(el("span", "url", job.url));
  if (job.state === "running" || job.state === "paused") {
    const bar = el("progress");
    updateBar(bar, moved(job), total(job));
    bar.setAttribute("aria-label", "progress of " + title(job));
    item.append(bar);
  }
  const started = moved(job) > 0 || total(job) != null;
  if (job.state === "running" || (started && job.state !== "cancelled")) {
    item.append(el("span", "detail", progressText(job, live.get(job.id))));
  }
  if (job.error) item.append(el("span", "error", job.error.code + ": " + job.error.message));
  if (job.state === "completed" && job.objectETag) {
    const version = job.objectVersionId && job.objectVersionId !== "null" ? " · version " + job.objectVersionId : "";
    item.append(el("span", "stored", "stored as " + job.path + " · ETag " + job.objectETag + version));
  }
  if (job.metadata != null) item.append(el("span", "meta", metadataText(job.metadata)));
  return item;
}

// The client's own data as it gave it: string values as they are, anything else as JSON.
function metadataText(metadata) {
  if (typeof metadata !== "object" || Array.isArray(metadata)) return "metadata " + JSON.stringify(metadata);
  return Object.entries(metadata).map(([key, value]) => key + ": " + (typeof value === "string" ? value : JSON.stringify(value))).join(" · ");
}

// A time as the reader's clock shows it, the API's value kept in <time datetime>.
function timeElement(prefix, iso) {
  const node = el("span", "detail", prefix);
  const time = el("time", "", new Date(iso).toLocaleString());
  time.dateTime = iso;
  node.append(time);
  return node;
}

function renderWatch(watch) {
  const item = el("li", "job");
  item.dataset.watchId = watch.id;
  item.dataset.state = watch.state;
  item.append(el("span", "dest", watch.destination));
  const actions = el("div", "actions");
  for (const action of WATCH_ACTIONS[watch.state] || []) {
    const button = el("button", "", action);
    button.type = "button";
    button.setAttribute("aria-label", action + " watch " + watch.destination);
    button.addEventListener("click", () => actOnWatch(watch, action));
    actions.append(button);
  }
  item.append(actions);
  const every = watch.interval ? "every " + watch.interval : "at " + watch.schedule + " UTC";
  item.append(el("span", "state", watch.state + " · " + every + (watch.session !== "default" ? " · session " + watch.session : "")));
  item.append(el("span", "url", watch.url));
  item.append(watch.lastCheckedAt ? timeElement("last check " + watch.lastResult + " · ", watch.lastCheckedAt)
                                  : el("span", "detail", "not checked yet"));
  if (watch.nextCheckAt) item.append(timeElement("next check ", watch.nextCheckAt));
  item.append(el("span", "checks", watch.checks + (watch.checks === 1 ? " check, " : " checks, ") + watch.changes + " changed the file"));
  if (watch.lastResult === "failed" && watch.lastError) {
    item.append(el("span", "error", watch.lastError.code + ": " + watch.lastError.message));
  }
  if (watch.metadata != null) item.append(el("span", "meta", metadataText(watch.metadata)));
  return item;
}

// Redraws only the watches that changed, so a focused button keeps its focus while others are checked.
function placeWatches(listed) {
  const list = $("watches");
  const shown = new Map([...list.children].map((item) => [item.dataset.watchId, item]));
  const fresh = new Map(listed.map((watch) => [watch.id, watch]));
  for (const [id, item] of shown) if (!fresh.has(id)) { item.remove(); watches.delete(id); }
  let before = null;  // newest first, as GET /watches lists them (ids sort by creation)
  for (const watch of [...fresh.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    let item = shown.get(watch.id);
    if (!item || JSON.stringify(watches.get(watch.id)) !== JSON.stringify(watch)) {
      const drawn = renderWatch(watch);
      if (item) item.replaceWith(drawn); else list.insertBefore(drawn, before);
      item = drawn;
    }
    watches.set(watch.id, watch);
    before = item;
  }
}

function placeWatch(watch) {
  placeWatches([...watches.values()].filter((other) => other.id !== watch.id).concat([watch]));
}

async function listWatches() {
  const page = await api("GET", "/watches?limit=100");
  placeWatches(page.items);
}

function watchesChanged() {
  if (watchTimer) return;
  watchTimer = setTimeout(() => {
    watchTimer = null;
    listWatches().catch(report);
  }, WATCH_RELIST_MS);
}

function updateBar(bar, received, expected) {
  if (expected != null && expected > 0) {
    bar.max = expected;
    bar.value = Math.min(received, expected);
  } else {
    bar.removeAttribute("value");
  }
}

function place(job) {
  const existing = document.querySelector(`[data-job-id="${CSS.escape(job.id)}"]`);
  const item = renderJob(job);
  const list = $(SECTION[job.state] || "queued");
  if (existing && existing.parentElement === list) { existing.replaceWith(item); return; }
  if (existing) existing.remove();
  // Newest first, as GET /downloads lists them (ids sort by creation).
  const after = [...list.children].find((other) => other.dataset.jobId < job.id);
  list.insertBefore(item, after || null);
}

// Updates counts in place, so a focused session button keeps its focus as events arrive.
function renderSessions() {
  const list = $("sessions");
  for (const name of [...sessions.keys()].sort()) {
    const counts = sessions.get(name);
    let item = [...list.children].find((other) => other.dataset.session === name);
    if (!item) {
      item = el("li");
      item.dataset.session = name;
      const actions = el("div", "actions");
      for (const action of ["Pause", "Resume", "Cancel", "Retry"]) {
        const button = el("button", "", action + " all");
        button.type = "button";
        button.setAttribute("aria-label", action + " session " + name);
        button.addEventListener("click", () => actOnSession(name, action));
        actions.append(button);
      }
      item.append(el("span", "name", name), el("span", "counts"), actions);
      list.insertBefore(item, [...list.children].find((other) => other.dataset.session > name) || null);
    }
    item.querySelector(".counts").textContent = STATES.filter((s) => counts[s]).map((s) => counts[s] + " " + s).join(", ") || "no jobs";
  }
}

// A state change moves a job between counts here rather than asking the server again.
function count(previous, job) {
  if (!sessions.has(job.session)) sessions.set(job.session, {});
  const counts = sessions.get(job.session);
  if (previous) {
    const old = sessions.get(previous.session);
    if (old && old[previous.state] > 0) old[previous.state]--;
  }
  counts[job.state] = (counts[job.state] || 0) + 1;
}

function apply(job) {
  const previous = jobs.get(job.id);
  if (!previous || previous.state !== job.state) count(previous, job);
  if (job.state !== "running") live.delete(job.id);
  jobs.set(job.id, job);
  place(job);
  renderSessions();
}

function progress(event) {
  const job = jobs.get(event.id);
  const item = document.querySelector(`[data-job-id="${CSS.escape(event.id)}"]`);
  if (!job || !item || job.state !== "running") return;
  live.set(event.id, event);
  const bar = item.querySelector("progress");
  if (bar) updateBar(bar, moved(event), total(event));
  const detail = item.querySelector(".detail");
  if (detail) detail.textContent = progressText(job, event);
}

// --- listing

// One listing at a time; one asked for meanwhile runs after it (it may need newer data).
async function relist() {
  if (listing) { listAgain = true; return listing; }
  listing = list();
  try {
    await listing;
  } finally {
    listing = null;
  }
  if (listAgain) { listAgain = false; await relist(); }
}

async function list() {
  pendingEvents = [];
  try {
    // The newest hundred of each kind, newest first as one list (ids sort by creation).
    const [pages] = await Promise.all([
      Promise.all(["/downloads", "/uploads"].map((path) => api("GET", path + "?limit=100"))), listWatches()]);
    const page = { items: pages.flatMap((p) => p.items).sort((a, b) => (a.id < b.id ? 1 : -1)) };
    jobs.clear();
    sessions.clear();
    for (const list of document.querySelectorAll(".jobs, #sessions")) list.replaceChildren();
    const names = new Set(page.items.map((job) => job.session));
    const counted = await Promise.all([...names].map((name) => api("GET", "/sessions/" + encodeURIComponent(name))));
    for (const status of counted) sessions.set(status.session, Object.assign({}, status.counts));
    for (const job of page.items.slice().reverse()) {
      jobs.set(job.id, job);
      place(job);
    }
    renderSessions();
    show();
  } finally {
    const queued = pendingEvents;
    pendingEvents = null;
    for (const job of queued) apply(job);
  }
}

// --- the event stream, read with fetch so it can carry the token

async function follow() {
  if (stream) return;
  stream = new AbortController();
  const headers = { Accept: "text/event-stream" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
  let opened = false;
  try {
    const response = await fetch("/events", { headers, signal: stream.signal, cache: "no-store" });
    if (response.status === 401) { refuse(); return; }
    if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
    opened = streamOpen = true;
    setLive(true);
    const fresh = lastEventId === null;
    if (fresh) relist().catch(report);
    await readEvents(response.body.getReader());
  } catch (error) {
    if (error.name === "AbortError") return;
  } finally {
    stream = null;
    streamOpen = false;
  }
  if (document.body.dataset.refused) return;
  if (!opened) setLive(false);
  setTimeout(follow, opened ? 500 : FALLBACK_RELIST_MS);
}

async function readEvents(reader) {
  const decoder = new TextDecoder();
  let buffer = "";
  let frame = { event: "message", data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      if (newline === buffer.length - 1 && buffer.endsWith("\r")) break;  // may be half of CR LF
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (frame.id !== null) lastEventId = frame.id;
        if (frame.data.length) dispatch(frame.event, frame.data.join("\n"));
        frame = { event: "message", data: [], id: null };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") frame.event = value;
      else if (field === "data") frame.data.push(value);
      else if (field === "id") frame.id = value;
    }
  }
}

function dispatch(type, data) {
  if (type === "reset") { relist().catch(report); return; }
  let payload;
  try { payload = JSON.parse(data); } catch { return; }
  if (type === "state") {
    if (pendingEvents) pendingEvents.push(payload); else apply(payload);
    if (payload.watch) watchesChanged();
  } else if (type === "progress") {
    progress(payload);
  }
}

// Without /events the page still works: it re-lists on an interval, and only then.
function setLive(open) {
  const status = $("live");
  status.classList.toggle("down", !open);
  status.textContent = open ? "live" : "live updates unavailable: re-listing every " + FALLBACK_RELIST_MS / 1000 + " s";
  if (open && fallbackTimer) { clearInterval(fallbackTimer); fallbackTimer = null; }
  if (!open && !fallbackTimer) {
    relist().catch(report);
    fallbackTimer = setInterval(() => relist().catch(report), FALLBACK_RELIST_MS);
  }
}

// --- actions

// Each kind's job at its own path: /downloads/{id} or /uploads/{id}.
const JOB_REQUEST = {
  Pause: (job) => ["POST", job + "/pause"],
  Resume: (job) => ["POST", job + "/resume"],
  Cancel: (job) => ["DELETE", job],
  Retry: (job) => ["POST", job + "/retry"],
};

async function act(job, action) {
  try {
    const [method, path] = JOB_REQUEST[action]("/" + (job.kind === "upload" ? "uploads" : "downloads") + "/" + encodeURIComponent(job.id));
    const changed = await api(method, path);
    // While the stream is open it brings this change, in order with the ones after it (an
    // answer applied late could undo a newer event).
    if (!streamOpen) apply(changed);
    $("notice").textContent = "";
  } catch (error) {
    report(error, action + " " + title(job));
  }
}

async function actOnSession(name, action) {
  if (action === "Cancel" && !confirm("Cancel every unfinished job of session " + name + "?")) return;
  try {
    const result = await api("POST", "/sessions/" + encodeURIComponent(name) + "/" + action.toLowerCase());
    $("notice").textContent = action + " session " + name + ": " + result.changed + " of " + result.matched + " jobs changed";
    // Without the event stream the changed jobs would show their old states until the next listing.
    if (!stream) await relist();
  } catch (error) {
    report(error, action + " session " + name);
  }
}

async function actOnWatch(watch, action) {
  try {
    placeWatch(await api("POST", "/watches/" + encodeURIComponent(watch.id) + "/" + WATCH_REQUEST[action]));
    $("notice").textContent = "";
  } catch (error) {
    report(error, action + " watch " + watch.destination);
  }
}

function report(error, what) {
  if (error instanceof Refused) return;
  show();
  $("notice").textContent = (what ? what + ": " : "") + error.message;
}

// --- token and start

function refuse() {
  if (token() !== null) $("token-error").textContent = "that token was refused";
  sessionStorage.removeItem(TOKEN_KEY);
  document.body.dataset.refused = "true";
  if (stream) stream.abort();
  if (fallbackTimer) { clearInterval(fallbackTimer); fallbackTimer = null; }
  jobs.clear();
  sessions.clear();
  watches.clear();
  for (const list of document.querySelectorAll(".jobs, #sessions, #watches")) list.replaceChildren();
  $("console").hidden = true;
  $("token-form").hidden = false;
  $("live").textContent = "token needed";
  $("token").focus();
}

function show() {
  delete document.body.dataset.refused;
  $("token-form").hidden = true;
  $("token-error").textContent = "";
  $("console").hidden = false;
}

// The stream decides: open, the page lists and follows it; refused, the page asks for a token;
// unavailable, the page lists on an interval until it opens.
function start() {
  delete document.body.dataset.refused;
  follow();
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  start();
});

$("add-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const body = { url: form.url.value.trim(), destination: form.destination.value };
  if (form.session.value.trim()) body.session = form.session.value.trim();
  try {
    const created = await api("POST", "/downloads", body);
    if (!jobs.has(created.id)) apply(created);
    $("add-error").textContent = "";
    form.url.value = "";
    form.destination.value = "";
  } catch (error) {
    if (!(error instanceof Refused)) $("add-error").textContent = error.message;
  }
});

start();
