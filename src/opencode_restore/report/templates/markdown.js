// A restoration's markdown (the subset its template writes: headings, lists, tables,
// quotes, fenced code, `code`, **bold**, _notes_), built as DOM nodes from text: no HTML
// is parsed. One file for both pages: the HTML report inlines it before its own script,
// the web viewer's server serves it as a module (report/html.py, api/routes/viewer.py).
//
// renderMarkdown(box, text, options) appends the nodes to box. options.cite(label) gives
// the node for a cited label ("M14": a link, or text for a label with no message);
// options.shift moves headings down (1: "#" is an <h2>, under a page's own <h1>).
function renderMarkdown(box, text, options) {
  "use strict";
  var cite = options.cite;
  var shift = options.shift || 0;
  var INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|\[([^[\]]*?\bM\d+\b[^[\]]*?)\]/g;
  var LABEL = /\bM\d+\b/g;

  function el(tag, cls, t) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (t !== undefined) e.textContent = t;
    return e;
  }
  // The template escapes markdown's punctuation in log text ("\\:"): shown without the backslash.
  function plain(t) {
    return document.createTextNode(t.replace(/\\([!-/:-@[-`{-~])/g, "$1"));
  }
  // The labels in group become cite(label) nodes; brackets puts the [ ] back around them.
  function citations(parent, group, brackets) {
    if (brackets) parent.appendChild(document.createTextNode("["));
    var last = 0, m;
    LABEL.lastIndex = 0;
    while ((m = LABEL.exec(group)) !== null) {
      if (m.index > last) parent.appendChild(plain(group.slice(last, m.index)));
      parent.appendChild(cite(m[0]));
      last = LABEL.lastIndex;
    }
    parent.appendChild(plain(group.slice(last)));
    if (brackets) parent.appendChild(document.createTextNode("]"));
  }
  // bare: labels outside brackets are citations too (a table's body cells list them so).
  function inline(parent, line, bare) {
    var last = 0, m;
    function rest(t) {
      if (bare) citations(parent, t, false);
      else parent.appendChild(plain(t));
    }
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(line)) !== null) {
      if (m.index > last) rest(line.slice(last, m.index));
      if (m[1]) parent.appendChild(el("code", null, m[1].slice(1, -1)));
      else if (m[2]) parent.appendChild(el("strong", null, m[2].slice(2, -2)));
      else citations(parent, m[3], true);
      last = INLINE.lastIndex;
    }
    if (last < line.length) rest(line.slice(last));
  }
  function cells(line) {
    return line.replace(/^\|/, "").replace(/\|\s*$/, "").split(/(?<!\\)\|/)
      .map(function (c) { return c.replace(/\\\|/g, "|").trim(); });
  }

  var list = null, table = null, para = null, fence = null;
  function close() { list = null; table = null; para = null; }
  String(text).split("\n").forEach(function (line) {
    if (fence) {
      if (/^```/.test(line)) fence = null;
      else fence.textContent += (fence.textContent ? "\n" : "") + line;
      return;
    }
    if (/^```/.test(line)) { close(); fence = el("pre", "code"); box.appendChild(fence); return; }
    var h = /^(#{1,4}) (.*)$/.exec(line);
    if (h) { close(); var he = el("h" + (h[1].length + shift)); inline(he, h[2]); box.appendChild(he); return; }
    if (/^\s*$/.test(line)) { close(); return; }
    if (/^---+\s*$/.test(line)) { close(); box.appendChild(el("hr")); return; }
    var item = /^\s*[-*] (.*)$/.exec(line);
    if (item) {
      if (!list) { close(); list = el("ul"); box.appendChild(list); }
      var li = el("li"); inline(li, item[1]); list.appendChild(li); return;
    }
    if (/^\|/.test(line)) {
      if (/^\|[-|\s:]+\|?\s*$/.test(line)) return;
      var header = !table;
      if (!table) { close(); table = el("table"); box.appendChild(table); }
      var tr = el("tr");
      cells(line).forEach(function (c) { var td = el(header ? "th" : "td"); inline(td, c, !header); tr.appendChild(td); });
      table.appendChild(tr); return;
    }
    if (/^>/.test(line)) {
      close(); var bq = el("blockquote"); inline(bq, line.replace(/^> ?/, "")); box.appendChild(bq); return;
    }
    if (!para) { close(); para = el("p"); box.appendChild(para); }
    else para.appendChild(document.createTextNode(" "));
    var it = /^_(.*)_$/.exec(line);
    if (it) { var em = el("em"); inline(em, it[1]); para.appendChild(em); }
    else inline(para, line);
  });
}
