"""Progress: one line per turn that did something (what was asked, what changed, what
was committed, what the agent reported at its end), and the state of version control at
the end of the session."""

from __future__ import annotations

import re
from typing import Any

from .text import clip, content_words, sentences
from .wording import cite, cites, order, short

#: A request is quoted by its first sentence, cut at a word past this length.
REQUEST_CHARS = 60

_COURTESY = re.compile(r"^(?:hi|hello|hey|thanks|thank you|ok|okay|great|good|cool)\b", re.I)
# Quotes around a whole prompt (some agents store it so) are not part of it.
_QUOTES = "\"'“”‘’`"


def request_line(text: str, limit: int = REQUEST_CHARS) -> str:
    """A request in a few words: its first sentence that is not a greeting or a thanks."""
    parts = sentences(text.strip().strip(_QUOTES)) or [""]
    first = next((p for p in parts if not _COURTESY.match(p) or len(p.split()) > 6), parts[0])
    return clip(first, limit)


#: Share of an account's words that the request holds when the account only echoes it.
ECHO = 0.6
#: Files named per action in a turn's line; the rest are counted (the files table has all).
TURN_FILES = 4


def short_names(paths: list[str]) -> dict[str, str]:
    """Each path by its file name, or by as many trailing parts as tell it apart from the
    others: a turn's line names files, the files table gives their whole paths."""
    parts = {p: [x for x in re.split(r"[/\\]", p) if x] or [p] for p in paths}
    out: dict[str, str] = {}
    for p, words in parts.items():
        for n in range(1, len(words) + 1):
            tail = words[-n:]
            if all(q == p or parts[q][-n:] != tail for q in parts):
                break
        out[p] = "/".join(tail) if len(tail) < len(words) else p
    return out


def _files(files: dict[str, str | None], names: dict[str, str]) -> str:
    shown = [
        f"`{names.get(p, p)}`{cites([label])}" for p, label in list(files.items())[:TURN_FILES]
    ]
    more = len(files) - TURN_FILES
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def changes(t: dict[str, Any]) -> str:
    """What a turn changed, by action. A file deleted and another created by the same call
    is a rename (``git mv``, a patch's move); a file deleted and made again under its own
    name by one call was replaced, which is an edit; a file the turn made and then removed
    was scratch, no change."""
    by_action: dict[str, dict[str, str | None]] = {}
    last: dict[str, str] = {}
    for a in t.get("artifacts", []):
        if a["action"] != "read":
            by_action.setdefault(a["action"], {}).setdefault(a["path"], a.get("label"))
            last[a["path"]] = a["action"]
    created, deleted = by_action.get("created", {}), by_action.get("deleted", {})
    edited = by_action.setdefault("edited", {})
    for path in list(created):
        if last.get(path) == "deleted" and path in deleted and created[path] != deleted[path]:
            del created[path], deleted[path]
            edited.pop(path, None)
    for path in list(created):
        if path in deleted and deleted[path] == created[path]:
            edited.setdefault(path, created.pop(path))
            del deleted[path]
    for path in created:  # a file made in this turn and then edited is just made
        edited.pop(path, None)
    renames = []
    for old, label in list(deleted.items()):
        new = next((p for p, lb in created.items() if label and lb == label and p != old), None)
        if new is not None:
            renames.append(f"`{old}` → `{new}`{cites([label])}")
            del deleted[old], created[new]
    names = short_names([a["path"] for a in t.get("artifacts", [])])
    parts = [f"{action} " + _files(files, names) for action, files in by_action.items() if files]
    return "; ".join(parts + (["renamed " + ", ".join(renames)] if renames else []))


# Words that date a statement: true when the agent said it, overtaken by later turns.
_DATED = re.compile(r"\b(?:still|not yet|yet to|so far|for now|currently|at the moment)\b", re.I)


def outcome(t: dict[str, Any], last: bool, fates: dict[str, str]) -> str:
    """What the agent said the turn came to (``turn.turn_facts``' ``outcome``), cited; for
    a turn before the last, a statement of a then-current state ("still a draft") is left
    out, as later turns overtook it; a commit it names says what became of it."""
    said = t.get("outcome")
    if not said or (not last and _DATED.search(said["text"])):
        return ""
    text = t.get("closing_account") or said["text"] if last else said["text"]
    own = content_words(text)
    if own and len(own & content_words(t.get("user_request") or "")) >= ECHO * len(own):
        return ""  # it says back what was asked: the request already says it
    for sha, fate in fates.items():
        text = re.sub(rf"(`?\b{sha[:7]}\w*`?)", rf"\1{fate}", text, count=1)
    return cite(text, said.get("label"))


def _vcs_line(t: dict[str, Any], history: dict[str, str]) -> str:
    """The turn's commits (with what became of them later), pushes and pull requests."""
    parts = []
    for e in t.get("vcs", []):
        label = cites([e.get("label")])
        if e["kind"] == "commit":
            verb = "amended the commit as" if e.get("amend") else "committed"
            fate = history.get(e["sha"], "")
            parts.append(f"{verb} `{e['sha']}` “{short(e['subject'], 90)}”{label}{fate}")
        elif e["kind"] == "push":
            parts.append(f"pushed{label}")
        elif e["kind"] == "pr_opened":
            parts.append(f"opened PR #{e['number']}{label}")
        elif e["kind"] == "pr_merged":
            parts.append(f"merged PR #{e['number']}{label}")
    return "; ".join(parts)


def commit_fates(turns: list[dict[str, Any]]) -> dict[str, str]:
    """What happened later to each commit: reverted (a later ``Revert "subject"`` commit)
    or replaced by an amend; as a short clause to add after it."""
    commits = [e for t in turns for e in t.get("vcs", []) if e["kind"] == "commit"]
    fates: dict[str, str] = {}
    for i, c in enumerate(commits):
        for later in commits[i + 1 :]:
            subject = later["subject"]
            if subject.startswith("Revert") and (
                c["subject"] in subject or c["sha"][:7] in subject
            ):
                fates[c["sha"]] = f" (reverted by `{later['sha']}`)"
                break
            if later.get("amend") and later["branch"] == c["branch"]:
                fates[c["sha"]] = f" (replaced by the amended `{later['sha']}`)"
                break
    return fates


#: Tools named in the line of a turn whose only actions were tool calls.
TURN_TOOLS = 4


def _calls(t: dict[str, Any]) -> str:
    """A turn's tool calls when it changed nothing else: "called `web_browser_go` ×2"."""
    counts = list((t.get("tool_calls") or {}).items())
    if not counts:
        return ""
    shown = [f"`{name}`" + (f" ×{n}" if n > 1 else "") for name, n in counts[:TURN_TOOLS]]
    more = len(counts) - len(shown)
    return "called " + ", ".join(shown) + (f" and {more} more tools" if more > 0 else "")


def done(turns: list[dict[str, Any]], goal_label: str | None = None) -> list[str]:
    """One line per turn that did something: the request, what changed, the commits and
    pull requests, and the agent's own account. A turn that only read or answered keeps
    its account; a turn cut off says so and keeps what it changed. The request that is
    the goal (``goal_label`` cites it) is not quoted again."""
    fates = commit_fates(turns)
    out = []
    for t in turns:
        made = changes(t)
        if t.get("failed_artifacts") and not made and not t.get("vcs"):
            continue  # every change it tried failed (listed as errors)
        labels = t.get("user_labels") or [None]
        head = f"Turn {t.get('turn_number')}"
        if t.get("interrupted"):
            head += " (interrupted)"
        if t.get("interrupted") and t is turns[-1]:
            continue  # the last request, unfinished: in progress, not done
        did = "; ".join(x for x in (made, _vcs_line(t, fates)) if x) or _calls(t)
        asked = request_line(t.get("user_request") or "")
        if goal_label is not None and labels[0] == goal_label:
            asked = "the goal"
        # A question that changed nothing was a discussion: its request is not work done.
        asked = f"discussed “{asked}”" if asked.endswith("?") and not did else asked
        line = f"{head}: {cite(asked, labels[0])}"
        if did:
            line += f" → {did}"
        if t.get("rejected"):
            line += "; the user rejected " + ", ".join(
                f"{r['tool']}{' of `' + r['target'] + '`' if r['target'] else ''}"
                f"{cites([r.get('label')])}"
                for r in t["rejected"][:3]
            )
        said = outcome(t, t is turns[-1], fates)
        if said:
            line += f". Agent: {said}"
        out.append(line)
    return out


def _paths(paths: list[str], total: int) -> str:
    shown = ", ".join(f"`{p}`" for p in paths)
    return shown + (f" (and {total - len(paths)} more)" if total > len(paths) else "")


_NOT_PUSHED = "not pushed in this session (no push after it in the log)"


def end_state(turns: list[dict[str, Any]]) -> str:
    """Where version control stands at the end, as far as this log shows: the last commit
    and whether a push ran after it (a push made elsewhere is not seen), what the last
    ``git status`` listed as not committed (untracked files stay so through a commit that
    does not add everything), and the files changed after both."""
    events = [(e, order(e.get("label"))) for t in turns for e in t.get("vcs", [])]
    commits = [(e, at) for e, at in events if e["kind"] == "commit"]
    statuses = [(e, at) for e, at in events if e["kind"] == "status"]
    last, last_at = commits[-1] if commits else ({}, -1)
    parts = []
    if last:
        fates = commit_fates(turns)
        pushed = any(e["kind"] == "push" and at >= last_at for e, at in events)
        parts.append(
            f"Last commit `{last['sha']}` “{short(last['subject'], 90)}” on `{last['branch']}`"
            f"{cites([last.get('label')])}{fates.get(last['sha'], '')}; "
            + ("pushed after it" if pushed else _NOT_PUSHED)
        )
    seen_at = last_at
    if statuses:
        status, status_at = statuses[-1]
        changed = status.get("changed", []) if status_at > last_at else []
        untracked = [] if last.get("all") and status_at <= last_at else status.get("untracked", [])
        counts = status.get("counts") or [len(changed), len(untracked)]
        listed = []
        if changed:
            listed.append("changed " + _paths(changed, counts[0]))
        if untracked:
            listed.append("untracked " + _paths(untracked, counts[1]))
        if listed:
            parts.append(
                f"not committed at the last `git status`{cites([status.get('label')])}: "
                + "; ".join(listed)
            )
        seen_at = max(seen_at, status_at)
    if commits or statuses:
        # A turn cut off lists its changes as work in progress: not repeated here.
        answered = turns[:-1] if turns and turns[-1].get("interrupted") else turns
        later = {
            a["path"]: a.get("label")
            for t in answered
            for a in t.get("artifacts", [])
            if a["action"] != "read" and order(a.get("label")) > seen_at
        }
        if later:
            names = short_names(list(later))
            shown = [f"`{names[p]}`{cites([lb])}" for p, lb in list(later.items())[:TURN_FILES]]
            more = len(later) - len(shown)
            parts.append(
                "then changed, not committed in this log: "
                + ", ".join(shown)
                + (f" and {more} more" if more > 0 else "")
            )
    scores = [s for t in turns for s in t.get("scores", [])]
    if scores:
        parts.append(
            "scored "
            + ", ".join(
                f"`{s['value']}` by `{s['scorer']}`{cites([s.get('label')])}" for s in scores
            )
        )
    if not parts:
        return ""
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."
