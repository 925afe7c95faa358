// The viewer's entry: routes (#/ the list, #/?q= a search, #/s/ID[/M#] a session),
// the dark/light switch and the keyboard.

import { signIn } from "./api.js";
import { byId, notice } from "./dom.js";
import { setupList, showList } from "./list.js";
import { currentSessionId, leaveSession, showSession, step } from "./session.js";

function route() {
  const hash = window.location.hash.replace(/^#/, "") || "/";
  const m = /^\/s\/([^/]+)(?:\/([^/]+))?$/.exec(hash);
  if (m) {
    byId("list-view").hidden = true;
    byId("session-view").hidden = false;
    const id = decodeURIComponent(m[1]);
    const label = m[2] ? decodeURIComponent(m[2]) : null;
    showSession(id, label);
    return;
  }
  leaveSession();
  document.title = "opencode-restore";
  byId("session-view").hidden = true;
  byId("list-view").hidden = false;
  const q = new URLSearchParams(hash.split("?")[1] || "").get("q");
  showList(q ? q.trim() : "");
}

// ---- dark / light: the system's choice until the button picks one (remembered) ----
function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
function effectiveTheme() {
  return document.documentElement.dataset.theme
    || (window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}
function storedTheme() {
  try { return window.localStorage.getItem("theme"); } catch (e) { return null; }
}
byId("theme").addEventListener("click", () => {
  const next = effectiveTheme() === "dark" ? "light" : "dark";
  applyTheme(next);
  try { window.localStorage.setItem("theme", next); } catch (e) { /* private mode: not kept */ }
});
applyTheme(storedTheme());

// ---- search box ----
byId("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = byId("search").value.trim();
  window.location.hash = q ? `#/?q=${encodeURIComponent(q)}` : "#/";
});

// ---- keyboard: j/k move, Enter opens (a focused row is a link), / searches, Esc goes back ----
function rows() {
  return [...document.querySelectorAll("#list-view ol.rows a.row")].filter((a) => a.offsetParent !== null);
}
function moveRow(by) {
  const all = rows();
  if (!all.length) return;
  const at = all.indexOf(document.activeElement);
  const next = at < 0 ? (by > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + by, 0), all.length - 1);
  all[next].focus();
  all[next].scrollIntoView({ block: "nearest" });
}
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const typing = ev.target instanceof HTMLElement && ev.target.matches("input, select, textarea");
  if (ev.key === "Escape") {
    if (typing) ev.target.blur();
    else if (currentSessionId()) window.location.hash = "#/";
    return;
  }
  if (typing) return;
  const inSession = !byId("session-view").hidden;
  if (ev.key === "/") {
    ev.preventDefault();
    byId("search").focus();
    byId("search").select();
  } else if (ev.key === "j" || ev.key === "k") {
    ev.preventDefault();
    const by = ev.key === "j" ? 1 : -1;
    if (inSession) step(by);
    else moveRow(by);
  }
});

// ---- sign-in: the token from /#token=... (a fragment: never sent) or from the form ----
async function useToken(token) {
  try {
    await signIn(token);
  } catch (e) {
    notice(`Sign-in failed: ${e.message}`, "error");
    byId("signin").hidden = false;
    return false;
  }
  byId("signin").hidden = true;
  notice("");
  return true;
}
byId("signin").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = byId("token");
  if (await useToken(input.value.trim())) window.location.reload();
  input.value = "";
});

async function start() {
  setupList();
  const given = /^#token=(.+)$/.exec(window.location.hash);
  if (given) {
    // Out of the address bar and the history before anything else happens.
    window.history.replaceState(null, "", window.location.pathname + "#/");
    await useToken(decodeURIComponent(given[1]));
  }
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.ready = "1";
}
start();
