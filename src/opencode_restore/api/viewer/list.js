// The sessions list (filtered by agent, project and time) and the search over every session.

import { ApiError, getJSON } from "./api.js";
import { byId, clear, el, notice, oneLine, project, snippet, when } from "./dom.js";

const PAGE = 100;
const HITS = 50;
const agents = new Set();
let offset = 0;
let loaded = [];
let total = 0;
let generation = 0;
let searches = 0;

function filters() {
  return {
    agent: byId("f-agent").value,
    since: byId("f-since").value,
    cwd: byId("f-project").value.trim(),
  };
}

export function sessionHref(id, label) {
  return `#/s/${encodeURIComponent(id)}` + (label ? `/${encodeURIComponent(label)}` : "");
}

function sessionRow(s) {
  const a = el("a", "row");
  a.href = sessionHref(s.id);
  a.dataset.session = s.id;
  a.appendChild(el("span", "agent", s.agent));
  a.appendChild(el("span", "project", project(s.cwd) || "—"));
  a.appendChild(el("span", "title", oneLine(s.title || "(untitled)", 140)));
  a.appendChild(el("time", "when", when(s.updated_at)));
  a.appendChild(el("span", "sid", s.id.slice(0, 8)));
  const li = el("li");
  li.appendChild(a);
  return li;
}

function renderSessions() {
  const list = byId("session-list");
  clear(list);
  for (const s of loaded) list.appendChild(sessionRow(s));
  byId("sessions-head").textContent = `Sessions: ${loaded.length} of ${total}`;
  byId("more").hidden = loaded.length >= total;
}

function renderAgents() {
  const select = byId("f-agent");
  const have = new Set([...select.options].map((o) => o.value));
  for (const a of [...agents].sort()) {
    if (!have.has(a)) select.appendChild(el("option", null, a)).value = a;
  }
}

async function loadSessions(more) {
  const mine = ++generation;
  const f = filters();
  if (!more) { offset = 0; loaded = []; }
  let page;
  try {
    page = await getJSON("/sessions", { agent: f.agent, cwd: f.cwd, since: f.since, limit: PAGE, offset });
  } catch (e) {
    if (mine === generation) failed(e);
    return;
  }
  if (mine !== generation) return;
  loaded = loaded.concat(page.sessions);
  total = page.total;
  offset += page.sessions.length;
  for (const s of page.sessions) agents.add(s.agent);
  renderAgents();
  renderSessions();
}

function failed(e) {
  if (e instanceof ApiError && e.status === 401) {
    byId("signin").hidden = false;
    notice("Sign in with the API token to read sessions.", "error");
    return;
  }
  notice(`Could not load sessions: ${e.message}`, "error");
}

function hitRow(h) {
  const a = el("a", "row hit");
  a.href = sessionHref(h.session_id, h.label);
  a.dataset.session = h.session_id;
  a.appendChild(el("span", "agent", h.agent));
  a.appendChild(el("span", "project", project(h.cwd) || "—"));
  a.appendChild(el("time", "when", when(h.time)));
  a.appendChild(el("span", "label", h.label ? `[${h.label}]` : h.kind || ""));
  a.appendChild(snippet(h.snippet, h.highlights));
  a.appendChild(el("span", "sid", String(h.session_id).slice(0, 8)));
  const li = el("li");
  li.appendChild(a);
  return li;
}

export async function search(query) {
  const box = byId("hits");
  const list = byId("hit-list");
  const head = byId("hits-head");
  if (!query) { box.hidden = true; return; }
  const f = filters();
  const mine = ++searches;
  let answer;
  try {
    answer = await getJSON("/search", { q: query, agent: f.agent, cwd: f.cwd, since: f.since, limit: HITS });
  } catch (e) {
    box.hidden = true;
    if (e instanceof ApiError && e.status === 404) {
      notice("Search is not available: this server has no /search route (a newer opencode-restore has it).", "error");
    } else if (e instanceof ApiError && e.status === 401) {
      failed(e);
    } else {
      notice(`Search failed: ${e.message}`, "error");
    }
    return;
  }
  if (mine !== searches) return; // a later search (or filter) is under way
  clear(list);
  const hits = answer.hits || [];
  for (const h of hits) list.appendChild(hitRow(h));
  head.textContent = hits.length ? `${hits.length} hits for “${query}”` : `No hits for “${query}”`;
  box.hidden = false;
}

export function showList(query) {
  byId("search").value = query || "";
  if (!loaded.length) loadSessions(false);
  search(query);
}

export function setupList() {
  byId("f-agent").addEventListener("change", () => { loadSessions(false); rerunSearch(); });
  byId("f-since").addEventListener("change", () => { loadSessions(false); rerunSearch(); });
  // Each keystroke asks the server again; an older answer arriving late is dropped (generation).
  byId("f-project").addEventListener("input", () => { loadSessions(false); rerunSearch(); });
  byId("filters").addEventListener("submit", (ev) => ev.preventDefault());
  byId("more").addEventListener("click", () => loadSessions(true));
}

function rerunSearch() {
  const q = byId("search").value.trim();
  if (q) search(q);
}
