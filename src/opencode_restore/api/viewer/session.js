// A session: its restoration (every [M#] a link to its message) and its thread, read
// through /sessions/{id}/messages: a first page at once, then the rest in slices, then
// polled with `since` so a live session's new messages appear without a reload.

import { ApiError, getJSON, sessionPath } from "./api.js";
import { byId, clear, el, notice, oneLine, project, when } from "./dom.js";
import { sessionHref } from "./list.js";
import { renderMarkdown } from "./markdown.js";

// A screenful and more: small, so the first answer (and the first paint) comes fast.
const FIRST_PAGE = 60;
const SLICE = 400;
// Longer texts show their start and a button for the rest: a 5,000-message log stays light.
const TEXT_CAP = 4000;
const POLL_FIRST_MS = 2000;
const POLL_MAX_MS = 30000;
const FOLDED = new Set(["tool_use", "tool_result", "thinking", "file_changes"]);

let current = null; // { id, generation, seen, lastTs, count, pending, loaded, timer }
let generation = 0;

export function currentSessionId() {
  return current ? current.id : null;
}

function textBlock(text) {
  const s = String(text || "");
  const pre = el("pre", "text", s.length > TEXT_CAP ? s.slice(0, TEXT_CAP) : s);
  if (s.length <= TEXT_CAP) return pre;
  const box = el("div");
  box.appendChild(pre);
  const more = el("button", "show-all", `Show all (${s.length - TEXT_CAP} more characters)`);
  more.type = "button";
  more.addEventListener("click", () => { pre.textContent = s; more.remove(); });
  box.appendChild(more);
  return box;
}

function toolSummary(m) {
  if (m.type === "tool_use") {
    const input = m.tool_input || {};
    const what = input.command || input.file_path || input.path || input.pattern || m.text;
    return `${m.tool_name || "tool"} · ${oneLine(what, 100)}`;
  }
  if (m.type === "tool_result") return `${m.is_error ? "error · " : ""}result${m.tool_name ? " of " + m.tool_name : ""} · ${oneLine(m.text, 100)}`;
  if (m.type === "thinking") return `thinking · ${oneLine(m.text, 100)}`;
  return `files changed · ${oneLine(m.text, 100)}`;
}

function messageElement(m) {
  if (m.type === "compaction") {
    const sep = el("div", "compaction");
    sep.dataset.id = m.id;
    sep.appendChild(el("span", "compaction-line", "context compacted" + (m.timestamp ? " · " + when(m.timestamp) : "")));
    if (m.text) {
      const d = el("details");
      d.appendChild(el("summary", null, "what the agent kept"));
      d.appendChild(textBlock(m.text));
      sep.appendChild(d);
    }
    return sep;
  }
  const box = el("article", `msg role-${m.role} type-${m.type}` + (m.is_error ? " error" : ""));
  box.dataset.id = m.id;
  box.tabIndex = -1;
  if (m.label) {
    box.id = "m-" + m.label;
    box.dataset.label = m.label;
  }
  const head = el("header");
  if (m.label) head.appendChild(el("span", "label", m.label));
  head.appendChild(el("span", "role", m.role));
  if (m.type !== "text") head.appendChild(el("span", "type", m.type));
  if (m.injected) head.appendChild(el("span", "type", `context (${m.injected})`));
  head.appendChild(el("time", "when", when(m.timestamp)));
  box.appendChild(head);
  if (FOLDED.has(m.type) || m.injected) {
    const d = el("details");
    d.appendChild(el("summary", null, m.injected ? oneLine(m.text, 120) : toolSummary(m)));
    if (m.tool_input) d.appendChild(el("pre", "input", JSON.stringify(m.tool_input, null, 2)));
    if (m.text && !(m.tool_input && m.type === "tool_use")) d.appendChild(textBlock(m.text));
    box.appendChild(d);
  } else {
    box.appendChild(textBlock(m.text));
  }
  if (m.context) {
    const d = el("details", "context");
    d.appendChild(el("summary", null, `context (${m.context.kind})`));
    d.appendChild(textBlock(m.context.text));
    box.appendChild(d);
  }
  return box;
}

function append(state, messages) {
  const frag = document.createDocumentFragment();
  let added = 0;
  for (const m of messages) {
    if (state.seen.has(m.id)) continue;
    state.seen.add(m.id);
    if (m.timestamp && (!state.lastTs || m.timestamp > state.lastTs)) state.lastTs = m.timestamp;
    frag.appendChild(messageElement(m));
    added++;
  }
  state.count += added;
  byId("messages").appendChild(frag);
  return added;
}

function frame() {
  return new Promise((resolve) => requestAnimationFrame(() => resolve()));
}

function info(state, extra) {
  byId("thread-info").textContent = `${state.count} messages` + (extra ? ` · ${extra}` : "");
}

function citeLink(state) {
  return (label) => {
    const a = el("a", "cite", label);
    a.href = sessionHref(state.id, label);
    a.dataset.cite = label;
    return a;
  };
}

async function loadSummary(state, session) {
  const box = byId("restoration");
  clear(box);
  const s = await session;
  if (!s || state.generation !== generation) return;
  if (!s.restored_at) {
    // Not asked for: a 404 would be an error in the browser's console.
    box.appendChild(el("p", "empty", `No restoration yet: opencode-restore restore ${s.id}`));
    return;
  }
  let r;
  try {
    r = await getJSON(sessionPath(state.id) + "/summary");
  } catch (e) {
    if (state.generation !== generation) return;
    const text = e instanceof ApiError && e.status === 404
      ? `No restoration yet: opencode-restore restore ${state.id}`
      : `Could not load the restoration: ${e.message}`;
    box.appendChild(el("p", "empty", text));
    return;
  }
  if (state.generation !== generation) return;
  box.appendChild(el("p", "meta", `Restored ${when(r.created_at)}` + (r.provider ? ` by ${r.provider}` : "")));
  const body = el("div", "markdown");
  renderMarkdown(body, r.markdown || "", { cite: citeLink(state), shift: 1 });
  box.appendChild(body);
}

const BASE = { include_tools: true, include_thinking: true };

async function loadThread(state) {
  const path = sessionPath(state.id) + "/messages";
  const first = await getJSON(path, { ...BASE, labels: true, limit: FIRST_PAGE });
  if (state.generation !== generation) return;
  append(state, first.messages);
  info(state, first.messages.length < FIRST_PAGE ? "" : "loading…");
  document.body.dataset.firstPage = "1";
  // Marks for bench/viewer.py: the first page on screen, then the whole thread.
  requestAnimationFrame(() => performance.mark("viewer:first-page"));
  if (first.messages.length >= FIRST_PAGE) {
    const rest = await getJSON(path, { ...BASE, labels: true, offset: FIRST_PAGE });
    for (let at = 0; at < rest.messages.length; at += SLICE) {
      if (state.generation !== generation) return;
      append(state, rest.messages.slice(at, at + SLICE));
      await frame();
    }
  }
  if (state.generation !== generation) return;
  state.loaded = true;
  info(state);
  performance.mark("viewer:loaded");
}

// A second before the newest time seen: messages stamped alike still come (dropped if seen).
function sinceOf(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : new Date(d.getTime() - 1000).toISOString();
}

function schedule(state, delay) {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => poll(state, delay), delay);
}

async function poll(state, delay) {
  if (state.generation !== generation) return;
  if (document.hidden) { schedule(state, delay); return; }
  let added = 0;
  try {
    // Labelled: the server numbers a tail as a full read would, so new messages are citable.
    const ask = { ...BASE, labels: true };
    const params = state.lastTs ? { ...ask, since: sinceOf(state.lastTs) } : { ...ask, offset: state.count };
    const page = await getJSON(sessionPath(state.id) + "/messages", params);
    if (state.generation !== generation) return;
    added = append(state, page.messages);
  } catch (e) {
    if (state.generation !== generation) return;
    info(state, `live updates paused: ${e.message}`);
  }
  if (added) {
    info(state, `${added} new`);
    document.body.dataset.polled = String(state.count);
  }
  schedule(state, added ? POLL_FIRST_MS : Math.min(delay * 2, POLL_MAX_MS));
}

export function jump(label) {
  if (!current) return;
  const target = document.getElementById("m-" + label);
  if (!target) {
    if (current.loaded) notice(`${label} is not a message of this session's thread.`, "error");
    else current.pending = label;
    return;
  }
  const d = target.querySelector("details");
  if (d) d.open = true;
  select(target);
  target.classList.remove("flash");
  void target.offsetWidth; // restart the highlight when the same citation is followed twice
  target.classList.add("flash");
}

function select(target) {
  for (const old of document.querySelectorAll("#messages .current")) old.classList.remove("current");
  target.classList.add("current");
  target.scrollIntoView({ block: "center" });
  target.focus({ preventScroll: true });
}

// j/k: the next or previous message after the selected one.
export function step(by) {
  const all = document.querySelectorAll("#messages > .msg");
  if (!all.length) return;
  const at = [...all].findIndex((m) => m.classList.contains("current"));
  const next = at < 0 ? (by > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + by, 0), all.length - 1);
  select(all[next]);
}

export function leaveSession() {
  if (current) clearTimeout(current.timer);
  current = null;
  generation++;
}

export async function showSession(id, label) {
  if (current && current.id === id) {
    if (label) jump(label);
    return;
  }
  leaveSession();
  const state = { id, generation, seen: new Set(), lastTs: null, count: 0, pending: label, loaded: false, timer: null };
  current = state;
  clear(byId("messages"));
  clear(byId("restoration"));
  byId("thread-info").textContent = "loading…";
  delete document.body.dataset.firstPage;
  delete document.body.dataset.loaded;
  byId("session-title").textContent = id;
  byId("session-meta").textContent = "";
  const session = getJSON(sessionPath(id)).then((s) => {
    if (state.generation !== generation) return s;
    byId("session-title").textContent = oneLine(s.title || "(untitled)", 200);
    byId("session-meta").textContent = [s.agent, project(s.cwd), s.cwd || "", `updated ${when(s.updated_at)}`, s.id].filter(Boolean).join(" · ");
    document.title = `${oneLine(s.title || s.id, 60)} · opencode-restore`;
    return s;
  }, (e) => {
    if (state.generation === generation) notice(`Could not open session ${id}: ${e.message}`, "error");
    return null;
  });
  const summary = loadSummary(state, session);
  try {
    await loadThread(state);
  } catch (e) {
    if (state.generation !== generation) return;
    byId("thread-info").textContent = `Could not read the messages: ${e.message}`;
    if (e instanceof ApiError && e.status === 401) byId("signin").hidden = false;
    return;
  }
  // The header and the restoration come from their own requests: "loaded" waits for them
  // too, or a reader of the flag (the browser tests) can find the thread under the bare id.
  await Promise.all([session, summary]);
  if (state.generation !== generation) return;
  document.body.dataset.loaded = "1";
  if (state.pending) { const l = state.pending; state.pending = null; jump(l); }
  schedule(state, POLL_FIRST_MS);
}
