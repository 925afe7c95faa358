(function () {
  "use strict";
  // Everything from the log is put in the page with textContent: never as markup.
  var DATA = JSON.parse(document.getElementById("session-data").textContent);
  var nodes = DATA.nodes;
  var N = nodes.length;
  var PAGE = 150;          // messages rendered around the point of interest
  var TREE_PAGE = 400;     // sidebar items rendered per page

  // ---- the tree (nodes come parents first; p is the parent's position) ----
  var children = new Array(N);
  var byId = new Map();
  var msgNode = new Map();
  var i, j;
  for (i = 0; i < N; i++) {
    children[i] = [];
    byId.set(nodes[i].id, i);
    for (j = 0; j < nodes[i].b.length; j++) msgNode.set(nodes[i].b[j].m, i);
  }
  for (i = 0; i < N; i++) if (nodes[i].p >= 0) children[nodes[i].p].push(i);
  var size = new Int32Array(N), latest = new Int32Array(N), indent = new Int32Array(N);
  for (i = 0; i < N; i++) { size[i] = 1; latest[i] = i; }
  // Parents come first, so a reverse sweep sees every subtree finished before its root.
  for (i = N - 1; i >= 0; i--) {
    var p = nodes[i].p;
    if (p >= 0) {
      size[p] += size[i];
      if (nodes[latest[i]].o > nodes[latest[p]].o) latest[p] = latest[i];
    }
  }
  for (i = 0; i < N; i++) {
    var par = nodes[i].p;
    indent[i] = par < 0 ? 0 : indent[par] + (children[par].length > 1 ? 1 : 0);
  }
  var leafIndex = byId.has(DATA.leaf) ? byId.get(DATA.leaf) : N - 1;

  function pathTo(k) {
    var out = [];
    while (k >= 0) { out.push(k); k = nodes[k].p; }
    return out.reverse();
  }

  // ---- small DOM helpers ----
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function $(id) { return document.getElementById(id); }
  function oneLine(s, n) {
    s = String(s || "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }
  var toastTimer = null;
  function toast(text) {
    var t = $("toast");
    t.textContent = text; t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.hidden = true; }, 2500);
  }

  // ---- header and facts ----
  $("title").textContent = DATA.title || DATA.session;
  var facts = [DATA.agent, "session " + DATA.session, N + " entries"];
  if (DATA.cwd) facts.push("cwd " + DATA.cwd);
  if (DATA.started) facts.push("started " + DATA.started);
  if (DATA.summarized_by || DATA.provider) facts.push("summarized by " + (DATA.summarized_by || DATA.provider));
  if (DATA.redacted) facts.push(DATA.redacted + " secrets redacted");
  $("facts").textContent = facts.join(" · ");

  // ---- the main pane: a window [lo, hi) of the shown path ----
  var view = { path: [], pos: new Map(), lo: 0, hi: 0, end: -1 };
  var rendered = new Map();   // message id -> element
  var highlighted = null;

  function blockElement(b) {
    var box = el("div", "msg r-" + b.r + (b.s ? " synthetic" : "") + (b.e ? " error" : ""));
    box.dataset.mid = b.m;
    var head = el("div", "head");
    head.appendChild(el("span", "role", b.t === "tool_use" ? b.r + " · tool call" : b.t === "file_changes" ? b.r + " · files changed" : b.t === "tool_result" ? "tool result" : b.t === "thinking" ? b.r + " · thinking" : b.r));
    if (b.n) head.appendChild(el("span", "tool", b.n));
    if (b.e) head.appendChild(el("span", "err", "error"));
    if (b.ts) head.appendChild(el("span", "ts", b.ts.replace("T", " ").slice(0, 19)));
    head.appendChild(el("span", "mid", b.m));
    box.appendChild(head);
    if (b.t === "tool_use" || b.t === "tool_result" || b.t === "thinking") {
      var det = el("details");
      det.appendChild(el("summary", null, (b.n ? b.n + ": " : "") + oneLine(b.x, 140)));
      det.appendChild(el("pre", null, b.x));
      box.appendChild(det);
    } else {
      box.appendChild(el("div", "body", b.x));
    }
    rendered.set(b.m, box);
    return box;
  }

  function entryElement(k) {
    var n = nodes[k];
    var wrap = el("div", "entry k-" + n.k);
    wrap.dataset.node = n.id;
    if (n.k === "compaction") {
      var b0 = n.b[0] || { x: n.x || "", m: n.id, r: "system", t: "compaction" };
      var sep = el("div", "compaction", "context compacted" + (b0.tb ? " · " + b0.tb + " tokens before" : ""));
      wrap.appendChild(sep);
      var box = el("div", "msg r-system compaction-box");
      box.dataset.mid = b0.m;
      var det = el("details");
      det.appendChild(el("summary", null, "summary the agent continued from"));
      det.appendChild(el("pre", null, b0.x));
      box.appendChild(det);
      rendered.set(b0.m, box);
      wrap.appendChild(box);
      return wrap;
    }
    for (var q = 0; q < n.b.length; q++) {
      var be = blockElement(n.b[q]);
      if (n.k === "branch_summary") be.classList.add("branch-summary");
      wrap.appendChild(be);
    }
    if (!n.b.length) wrap.appendChild(el("div", "note", n.x || n.k));
    if (n.l) wrap.insertBefore(el("span", "chip", n.l), wrap.firstChild);
    if (n.sa) for (q = 0; q < n.sa.length; q++) wrap.appendChild(el("div", "note", "sub-agent " + n.sa[q].name + " · " + n.sa[q].n + " messages (not shown)"));
    if (children[k].length > 1) wrap.appendChild(el("div", "note", "◆ " + children[k].length + " branches continue from here (see the tree)"));
    return wrap;
  }

  function renderWindow() {
    var box = $("messages");
    box.textContent = "";
    rendered.clear();
    var frag = document.createDocumentFragment();
    for (var q = view.lo; q < view.hi; q++) {
      var e = entryElement(view.path[q]);
      if (view.path[q] === view.end && view.end !== leafIndex) e.classList.add("selected-end");
      frag.appendChild(e);
    }
    box.appendChild(frag);
    var early = $("show-earlier"), late = $("show-later");
    early.hidden = view.lo === 0;
    early.textContent = "Show " + Math.min(PAGE, view.lo) + " earlier entries (" + view.lo + " hidden)";
    late.hidden = view.hi >= view.path.length;
    late.textContent = "Show " + Math.min(PAGE, view.path.length - view.hi) + " later entries";
    var endNode = nodes[view.end];
    $("path-info").textContent = (view.end === leafIndex ? "Active branch" : "Path to " + endNode.id + (endNode.l ? " (" + endNode.l + ")" : "")) +
      ": " + view.path.length + " entries from the root" + (view.end === leafIndex ? "" : " · not the session's leaf");
  }

  function showPath(end, focus) {
    view.path = pathTo(end);
    view.end = end;
    view.pos = new Map();
    for (var q = 0; q < view.path.length; q++) view.pos.set(view.path[q], q);
    var at = focus !== undefined && view.pos.has(focus) ? view.pos.get(focus) : view.path.length - 1;
    view.lo = Math.max(0, at - Math.floor(PAGE / 2));
    view.hi = Math.min(view.path.length, Math.max(at + Math.ceil(PAGE / 2), view.lo + PAGE));
    if (focus === undefined) { view.hi = view.path.length; view.lo = Math.max(0, view.hi - PAGE); }
    renderWindow();
    markPath();
  }

  $("show-earlier").addEventListener("click", function () {
    var keep = $("messages").firstChild;
    var keepId = keep ? keep.dataset.node : null;
    view.lo = Math.max(0, view.lo - PAGE);
    renderWindow();
    var kids = $("messages").children;
    for (var q = 0; q < kids.length; q++) if (kids[q].dataset.node === keepId) { kids[q].scrollIntoView(); break; }
  });
  $("show-later").addEventListener("click", function () {
    view.hi = Math.min(view.path.length, view.hi + PAGE);
    renderWindow();
  });

  // Scroll to a message (by message id) and highlight it, switching branch if needed.
  function jump(mid, label) {
    var k = msgNode.get(mid);
    if (k === undefined) { toast((label || mid) + " is not in this report"); return false; }
    if (!view.pos.has(k)) showPath(latest[k], k);
    else if (view.pos.get(k) < view.lo || view.pos.get(k) >= view.hi) showPath(view.end, k);
    var target = rendered.get(mid);
    if (!target) { toast((label || mid) + " could not be shown"); return false; }
    if (highlighted) highlighted.classList.remove("hl");
    highlighted = target;
    target.classList.add("hl");
    var det = target.querySelector("details");
    if (det) det.open = true;
    target.scrollIntoView({ block: "center" });
    selectInTree(k);
    return true;
  }

  // ---- the sidebar tree ----
  var treeItems = [];        // node positions shown in the sidebar, depth-first
  var treeLi = new Map();    // node position -> li (rendered ones)
  var treeShown = 0;
  var folded = new Set();
  var selected = -1;

  function isHuman(b) { return b.r === "user" && b.t === "text" && !b.s; }
  function milestone(k) {
    var n = nodes[k];
    if (n.p < 0 || n.l || n.k === "compaction" || n.k === "branch_summary") return true;
    if (!children[k].length || children[k].length > 1 || children[n.p].length > 1) return true;
    if (k === leafIndex) return true;
    for (var q = 0; q < n.b.length; q++) if (isHuman(n.b[q])) return true;
    return false;
  }
  for (i = 0; i < N; i++) if (milestone(i)) treeItems.push(i);

  function preview(k) {
    var n = nodes[k];
    if (n.k === "compaction") return "compaction" + (n.b[0] && n.b[0].tb ? " (" + n.b[0].tb + " tokens)" : "");
    for (var q = 0; q < n.b.length; q++) if (n.b[q].t === "text" || n.b[q].t === "summary") return (n.k === "branch_summary" ? "branch summary: " : "") + oneLine(n.b[q].x, 90);
    if (n.b.length) return (n.b[0].n ? n.b[0].n + ": " : "") + oneLine(n.b[0].x, 80);
    return n.x || n.k;
  }
  function glyph(k) {
    var n = nodes[k];
    if (n.k === "compaction") return "✂";
    if (n.k === "branch_summary") return "⎇";
    if (children[k].length > 1) return "◆";
    if (!children[k].length) return "◉";
    var b = n.b[0];
    return b ? (isHuman(b) ? "›" : b.r === "assistant" ? "·" : "∙") : "○";
  }

  function hiddenByFold(k) {
    var q = nodes[k].p;
    while (q >= 0) { if (folded.has(q)) return true; q = nodes[q].p; }
    return false;
  }

  function treeItem(k) {
    var n = nodes[k];
    var li = el("li", "k-" + n.k);
    li.setAttribute("role", "treeitem");
    li.dataset.node = n.id;
    li.style.paddingLeft = 8 + Math.min(indent[k], 14) * 14 + "px";
    if (nodes[k].p >= 0 && children[nodes[k].p].length > 1 && size[k] > 1) {
      var fold = el("button", "fold", folded.has(k) ? "▸" : "▾");
      fold.type = "button";
      fold.title = "Fold this branch";
      fold.addEventListener("click", function (ev) { ev.stopPropagation(); toggleFold(k, fold); });
      li.appendChild(fold);
    } else {
      li.appendChild(el("span", "glyph", glyph(k)));
    }
    li.appendChild(el("span", "preview", preview(k)));
    if (n.l) li.appendChild(el("span", "chip", n.l));
    if (k === leafIndex) li.appendChild(el("span", "chip leaf", "leaf"));
    li.title = n.id;
    li.addEventListener("click", function () { pick(k); });
    if (hiddenByFold(k)) li.hidden = true;
    return li;
  }

  function renderTreePage() {
    var ol = $("tree");
    var frag = document.createDocumentFragment();
    var stop = Math.min(treeItems.length, treeShown + TREE_PAGE);
    for (var q = treeShown; q < stop; q++) {
      var li = treeItem(treeItems[q]);
      treeLi.set(treeItems[q], li);
      frag.appendChild(li);
    }
    ol.appendChild(frag);
    treeShown = stop;
    var more = $("tree-more");
    more.hidden = treeShown >= treeItems.length;
    more.textContent = "Show more (" + (treeItems.length - treeShown) + ")";
    markPath();
  }
  $("tree-more").addEventListener("click", renderTreePage);

  function toggleFold(k, button) {
    if (folded.has(k)) folded.delete(k); else folded.add(k);
    button.textContent = folded.has(k) ? "▸" : "▾";
    treeLi.forEach(function (li, q) { if (q > k && q < k + size[k]) li.hidden = hiddenByFold(q); });
  }

  function markPath() {
    var on = view.pos;
    treeLi.forEach(function (li, q) {
      li.classList.toggle("on-path", on.has(q));
      li.classList.toggle("selected", q === selected);
    });
  }

  function selectInTree(k) {
    selected = k;
    markPath();
  }

  function ensureTreeRendered(k) {
    var idx = treeItems.indexOf(k);
    while (idx >= treeShown && treeShown < treeItems.length) renderTreePage();
    return treeLi.get(k);
  }

  function pick(k) {
    selected = k;
    showPath(k);
    var last = $("messages").lastChild;
    if (last) last.scrollIntoView({ block: "end" });
    if (window.matchMedia("(max-width: 800px)").matches) setTree(false);
  }

  $("reset-leaf").addEventListener("click", function () {
    selected = leafIndex;
    showPath(leafIndex);
    var li = ensureTreeRendered(leafIndex);
    if (li) li.scrollIntoView({ block: "nearest" });
    var last = $("messages").lastChild;
    if (last) last.scrollIntoView({ block: "end" });
  });

  function setTree(open) {
    var narrow = window.matchMedia("(max-width: 800px)").matches;
    document.body.classList.toggle("tree-open", open && narrow);
    document.body.classList.toggle("tree-closed", !open);
    $("toggle-tree").setAttribute("aria-expanded", String(open));
  }
  function treeIsOpen() {
    var narrow = window.matchMedia("(max-width: 800px)").matches;
    return narrow ? document.body.classList.contains("tree-open") : !document.body.classList.contains("tree-closed");
  }
  $("toggle-tree").addEventListener("click", function () { setTree(!treeIsOpen()); });

  var branchPoints = 0, compactions = 0, labels = 0;
  for (i = 0; i < N; i++) {
    if (children[i].length > 1) branchPoints++;
    if (nodes[i].k === "compaction") compactions++;
    if (nodes[i].l) labels++;
  }
  $("tree-head").textContent = N + " entries · " + branchPoints + " branch points · " + compactions + " compactions · " + labels + " labels";

  // ---- the summary: markdown.js (inlined before this script), citations as links ----
  function citeLink(label) {
    var mid = DATA.refs[label];
    if (mid === undefined) return document.createTextNode(label);
    var a = el("a", "cite", label);
    a.href = "#";
    a.dataset.cite = label;
    a.dataset.mid = mid;
    a.addEventListener("click", function (ev) { ev.preventDefault(); jump(this.dataset.mid, this.dataset.cite); });
    return a;
  }
  if (DATA.summary) {
    var sum = $("summary");
    renderMarkdown(sum, DATA.summary, { cite: citeLink });
    sum.hidden = false;
  }
  if (DATA.warnings && DATA.warnings.length) {
    var w = el("details", "note");
    w.appendChild(el("summary", null, DATA.warnings.length + " read warnings"));
    w.appendChild(el("pre", null, DATA.warnings.join("\n")));
    $("facts").appendChild(w);
  }

  // ---- start ----
  if (window.matchMedia("(max-width: 800px)").matches) setTree(false);
  renderTreePage();
  if (N) { selected = leafIndex; showPath(leafIndex); }
  else $("path-info").textContent = "This session has no entries.";
  window.__report = { jump: jump, pick: function (id) { if (byId.has(id)) pick(byId.get(id)); }, nodes: N };
  document.body.dataset.ready = "1";
})();
