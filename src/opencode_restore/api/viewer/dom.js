// Small DOM helpers. Log text only ever reaches the page through textContent.

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export function byId(id) {
  return document.getElementById(id);
}

// "2026-11-27T15:37:51.123Z" -> "2026-11-27 15:37" (local time); "" when unknown.
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

// The last part of a working folder: the project's name.
export function project(cwd) {
  if (!cwd) return "";
  const parts = String(cwd).split(/[\\/]+/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : String(cwd);
}

export function oneLine(text, n) {
  const s = String(text || "").replace(/\s+/g, " ").trim();
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// A search hit's snippet with its [start, end) highlights as <mark>, all as text nodes.
export function snippet(text, highlights) {
  const box = el("span", "snippet");
  const s = String(text || "");
  let at = 0;
  const spans = Array.isArray(highlights) ? highlights.slice() : [];
  spans.sort((a, b) => a[0] - b[0]);
  for (const [start, end] of spans) {
    if (!(start >= at && end > start && end <= s.length)) continue;
    if (start > at) box.appendChild(document.createTextNode(s.slice(at, start)));
    box.appendChild(el("mark", null, s.slice(start, end)));
    at = end;
  }
  if (at < s.length) box.appendChild(document.createTextNode(s.slice(at)));
  return box;
}

let noticeTimer = null;

// A one-line notice under the top bar; kind "error" stays until the next one.
export function notice(text, kind) {
  const n = byId("notice");
  clearTimeout(noticeTimer);
  n.textContent = text || "";
  n.className = kind || "";
  n.hidden = !text;
  if (text && kind !== "error") noticeTimer = setTimeout(() => { n.hidden = true; }, 6000);
}
