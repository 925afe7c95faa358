// The API, read from this same server (the page's CSP allows no other).

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function url(path, params) {
  const u = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
  }
  return u;
}

// GET a JSON answer; a non-2xx answer throws ApiError with the API's one-line detail.
export async function getJSON(path, params) {
  const r = await fetch(url(path, params), {
    headers: { Accept: "application/json" },
    credentials: "same-origin",
  });
  if (!r.ok) {
    let detail = `${r.status} ${r.statusText}`;
    try {
      const body = await r.json();
      if (typeof body.detail === "string") detail = body.detail;
      else if (Array.isArray(body.detail) && body.detail.length) detail = body.detail.map((d) => d.msg).join("; ");
    } catch (e) {
      // not JSON: keep the status line
    }
    throw new ApiError(r.status, detail);
  }
  return r.json();
}

// Trade the API token for the viewer's cookie (HttpOnly: this script never sees it again).
export async function signIn(token) {
  const r = await fetch("/viewer/sign-in", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: "{}",
    credentials: "same-origin",
  });
  if (!r.ok) throw new ApiError(r.status, r.status === 401 ? "wrong token" : `${r.status} ${r.statusText}`);
}

export function sessionPath(id) {
  return `/sessions/${encodeURIComponent(id)}`;
}
