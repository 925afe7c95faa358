"""The model's context window: asked of the server, or read from an overflow error.

Local OpenAI-compatible servers run a model with a window set at start-up (2k-32k
tokens), which no Chat Completions reply states. Each server says it elsewhere:

- vLLM: ``GET /v1/models`` lists the model with ``max_model_len``;
- llama.cpp's ``llama-server``: ``GET /props`` has ``default_generation_settings.n_ctx``
  (the window of a slot); its ``/v1/models`` entry has ``meta.n_ctx_train``, the window
  the model was trained for, an upper bound only;
- ollama: ``GET /api/ps`` gives a loaded model's ``context_length``; ``POST /api/show``
  gives the ``num_ctx`` of its Modelfile ``parameters`` and the model's trained
  ``model_info["<arch>.context_length"]``. Without ``num_ctx`` ollama runs the model with
  its default window and silently drops what does not fit, so that default bounds it;
- llama-cpp-python states no window at all (its ``n_ctx`` is a server setting): there
  ``llm.context_window`` in the config, or the first overflow error, tells it.

A request too big for the window is answered with an error that usually names the
window: OpenAI's code ``context_length_exceeded``, llama-cpp-python's "Requested tokens
(N) exceed context window of W", vLLM's "This model's maximum context length is W
tokens", llama.cpp's ``exceed_context_size_error`` with ``n_ctx``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opencode_restore.llm.base import error_body

if TYPE_CHECKING:
    import httpx2

#: Seconds each discovery request may take: the server is asked before any real work.
DISCOVERY_TIMEOUT = 5.0
#: ollama's window for a model whose Modelfile sets no ``num_ctx`` (and no
#: OLLAMA_CONTEXT_LENGTH, which no endpoint reports): 4096 since 0.6, 2048 before.
OLLAMA_DEFAULT_WINDOW = 4096
#: Smaller numbers are not a window (a parse of something else).
MIN_WINDOW = 256

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
#: Messages that name the window; the first group is its size in tokens.
_WINDOW_PATTERNS = (
    re.compile(r"exceeds? (?:the )?context window of (\d+)", re.IGNORECASE),
    re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE),
    re.compile(r"context length of only (\d+) tokens", re.IGNORECASE),
    re.compile(r"context (?:size|window|length) \(?(\d+)\)?", re.IGNORECASE),
)
#: Messages that say a request overflowed without a number we can trust.
_OVERFLOW_WORDS = re.compile(
    r"context[ _](?:length|window|size)[ _]exceeded|exceeds? (?:the )?(?:available )?context"
    r"|maximum context length|larger than the max context size",
    re.IGNORECASE,
)
#: The prompt's tokens, when the message says them (vLLM's "you requested" counts the
#: completion too, so its "N in the messages" comes first).
_REQUESTED = (
    re.compile(r"(\d+) in the messages", re.IGNORECASE),
    re.compile(r"prompt contains at least (\d+) input tokens", re.IGNORECASE),
    re.compile(r"Requested tokens \((\d+)\)", re.IGNORECASE),
    re.compile(r"resulted in (\d+) tokens", re.IGNORECASE),
)


@dataclass(frozen=True, slots=True)
class Overflow:
    """A request the server refused as too long for the model's context window.

    ``window`` is the window in tokens when the error says it; ``requested`` the tokens
    of the prompt, when it says that.
    """

    message: str
    window: int | None = None
    requested: int | None = None


def _message(exc: BaseException, body: dict[str, Any]) -> str:
    message = body.get("message")
    return message if isinstance(message, str) else str(exc)


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def parse_overflow(exc: BaseException) -> Overflow | None:
    """The context overflow ``exc`` reports, or None when it is another error."""
    body = error_body(exc)
    message = _message(exc, body)
    code = body.get("code") if isinstance(body.get("code"), str) else body.get("type")
    coded = code in _OVERFLOW_CODES or getattr(exc, "code", None) in _OVERFLOW_CODES
    if not coded and not _OVERFLOW_WORDS.search(message):
        return None
    window = _int(body.get("n_ctx"))
    if window is None:
        for pattern in _WINDOW_PATTERNS:
            found = pattern.search(message)
            if found is not None:
                window = int(found.group(1))
                break
    requested = _int(body.get("n_prompt_tokens"))
    for pattern in _REQUESTED if requested is None else ():
        if (asked := pattern.search(message)) is not None:
            requested = int(asked.group(1))
            break
    if window is not None and window < MIN_WINDOW:
        window = None
    return Overflow(message, window, requested)


def server_root(base_url: str) -> str:
    """The server's root for its own endpoints: ``base_url`` without the ``/v1`` of its
    OpenAI-compatible routes (``http://127.0.0.1:8080/v1`` -> ``http://127.0.0.1:8080``)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def _json(client: httpx2.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    """The JSON answer to one bounded request, or None on any failure: a server that
    does not have the endpoint (404, 405, 501) or does not answer is simply not asked."""
    import httpx2  # the client's own, loaded already (not with this module: see llm.retry)

    try:
        response = await client.request(method, url, timeout=DISCOVERY_TIMEOUT, **kwargs)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx2.HTTPError, OSError, ValueError):
        return None


def _entry(listing: Any, model: str) -> dict[str, Any] | None:
    """``model``'s entry in a ``/v1/models`` listing (the only one when it is alone)."""
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") in (model, _tagged(model)):
            return entry
    return entries[0] if len(entries) == 1 else None


def _ollama_window(shown: Any) -> int | None:
    """The window of an ``/api/show`` answer: ``num_ctx`` when the Modelfile sets it, else
    the trained length within ollama's default window."""
    if not isinstance(shown, dict):
        return None
    parameters = shown.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            key, _, value = line.strip().partition(" ")
            if key == "num_ctx" and (n := _int(value.strip())) is not None:
                return n
    info = shown.get("model_info")
    if not isinstance(info, dict):
        return None
    trained = [
        n
        for key, value in info.items()
        if key.endswith(".context_length") and (n := _int(value)) is not None
    ]
    return min(min(trained), OLLAMA_DEFAULT_WINDOW) if trained else None


def _ollama_loaded(running: Any, model: str) -> int | None:
    """A loaded model's window in an ``/api/ps`` answer (ollama 0.12 and later say it)."""
    models = running.get("models") if isinstance(running, dict) else None
    if not isinstance(models, list):
        return None
    wanted = _tagged(model)
    for entry in models:
        if not isinstance(entry, dict):
            continue
        names = {_tagged(str(entry.get(key))) for key in ("name", "model") if entry.get(key)}
        if wanted in names:
            return _int(entry.get("context_length"))
    return None


def _tagged(model: str) -> str:
    """An ollama model name with its tag: ``smollm2`` is ``smollm2:latest``."""
    return model if ":" in model else f"{model}:latest"


def _usable(window: int | None) -> int | None:
    return window if window is not None and window >= MIN_WINDOW else None


async def discover_window(
    base_url: str,
    model: str,
    client: httpx2.AsyncClient,
    *,
    api_key: str | None = None,
) -> int | None:
    """The context window (tokens) the server at ``base_url`` runs ``model`` with, or None.

    Asks, in order and until one says it: ``/v1/models`` (vLLM's ``max_model_len``),
    llama.cpp's ``/props``, ollama's ``/api/ps`` and ``/api/show``; each is one request
    bounded by ``DISCOVERY_TIMEOUT``, and any failure only means "not this server" (a
    server without ``/v1/models`` is asked nothing else). A llama.cpp model's trained
    window (``meta.n_ctx_train``) is the answer of last resort.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    trained: int | None = None
    listing = await _json(client, "GET", f"{base_url.rstrip('/')}/models", headers=headers)
    if listing is None:
        # vLLM, llama.cpp, ollama, llama-cpp-python and LM Studio all list their models:
        # a server that does not is none of them, and is asked nothing more.
        return None
    entry = _entry(listing, model)
    if entry is not None:
        if (found := _usable(_int(entry.get("max_model_len")))) is not None:
            return found
        meta = entry.get("meta")
        if isinstance(meta, dict):
            trained = _usable(_int(meta.get("n_ctx_train")))
    props = await _json(client, "GET", f"{root}/props", headers=headers)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else props.get("n_ctx")
        if (found := _usable(_int(n_ctx))) is not None:
            return found
    if trained is not None:
        # A llama.cpp server (its /v1/models has meta): not ollama, whose routes it lacks.
        return trained
    running = await _json(client, "GET", f"{root}/api/ps", headers=headers)
    if (found := _usable(_ollama_loaded(running, model))) is not None:
        return found
    shown = await _json(client, "POST", f"{root}/api/show", headers=headers, json={"model": model})
    return _usable(_ollama_window(shown))


#: Where a window came from, as the error that names it says.
SOURCE_CONFIG = "set in llm.context_window"
SOURCE_SERVER = "as the server reports it"
SOURCE_ERROR = "as the server's overflow error said"
SOURCE_GUESS = "guessed after an overflow error that did not say it"
