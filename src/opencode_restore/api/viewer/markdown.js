// A restoration's markdown (the subset its template writes: headings, lists, tables,
// quotes, `code`, **bold**, _notes_), built as DOM nodes from text: no HTML is parsed.
// Every [M#] becomes a link made by citeLink(label).

import { el } from "./dom.js";

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|\[([^[\]]*?\bM\d+\b[^[\]]*?)\]/g;
const LABEL = /\bM\d+\b/g;

// The template escapes markdown's punctuation in log text ("\\:"): shown without the backslash.
function text(t) {
  return document.createTextNode(t.replace(/\\([!-/:-@[-`{-~])/g, "$1"));
}

function citations(parent, group, citeLink) {
  parent.appendChild(document.createTextNode("["));
  let last = 0;
  for (const m of group.matchAll(LABEL)) {
    if (m.index > last) parent.appendChild(document.createTextNode(group.slice(last, m.index)));
    parent.appendChild(citeLink(m[0]));
    last = m.index + m[0].length;
  }
  parent.appendChild(document.createTextNode(group.slice(last) + "]"));
}

function inline(parent, line, citeLink) {
  let last = 0;
  for (const m of line.matchAll(INLINE)) {
    if (m.index > last) parent.appendChild(text(line.slice(last, m.index)));
    if (m[1]) parent.appendChild(el("code", null, m[1].slice(1, -1)));
    else if (m[2]) parent.appendChild(el("strong", null, m[2].slice(2, -2)));
    else citations(parent, m[3], citeLink);
    last = m.index + m[0].length;
  }
  if (last < line.length) parent.appendChild(text(line.slice(last)));
}

function cells(line) {
  return line
    .replace(/^\|/, "")
    .replace(/\|\s*$/, "")
    .split(/(?<!\\)\|/)
    .map((c) => c.replace(/\\\|/g, "|").trim());
}

export function renderMarkdown(box, text, citeLink) {
  let list = null;
  let table = null;
  let para = null;
  let fence = null;
  const close = () => { list = null; table = null; para = null; };
  for (const line of String(text).split("\n")) {
    if (fence) {
      if (/^```/.test(line)) fence = null;
      else fence.textContent += (fence.textContent ? "\n" : "") + line;
      continue;
    }
    if (/^```/.test(line)) { close(); fence = el("pre", "code"); box.appendChild(fence); continue; }
    const h = /^(#{1,4}) (.*)$/.exec(line);
    if (h) { close(); const he = el("h" + (h[1].length + 1)); inline(he, h[2], citeLink); box.appendChild(he); continue; }
    if (/^\s*$/.test(line)) { close(); continue; }
    if (/^---+\s*$/.test(line)) { close(); box.appendChild(el("hr")); continue; }
    const item = /^\s*[-*] (.*)$/.exec(line);
    if (item) {
      if (!list) { close(); list = el("ul"); box.appendChild(list); }
      const li = el("li"); inline(li, item[1], citeLink); list.appendChild(li); continue;
    }
    if (/^\|/.test(line)) {
      if (/^\|[-|\s:]+\|?\s*$/.test(line)) continue;
      const header = !table;
      if (!table) { close(); table = el("table"); box.appendChild(table); }
      const tr = el("tr");
      for (const c of cells(line)) { const td = el(header ? "th" : "td"); inline(td, c, citeLink); tr.appendChild(td); }
      table.appendChild(tr); continue;
    }
    if (/^>/.test(line)) {
      close(); const bq = el("blockquote"); inline(bq, line.replace(/^> ?/, ""), citeLink); box.appendChild(bq); continue;
    }
    if (!para) { close(); para = el("p"); box.appendChild(para); }
    else para.appendChild(document.createTextNode(" "));
    const it = /^_(.*)_$/.exec(line);
    if (it) { const em = el("em"); inline(em, it[1], citeLink); para.appendChild(em); }
    else inline(para, line, citeLink);
  }
}
