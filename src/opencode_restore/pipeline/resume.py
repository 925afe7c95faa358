"""Opening a restore on its journal: what can be reused and the state it implies.

A saved turn is reused when the turn at the same position has the same content hash; the
first turn that differs (or is new, or failed last time) and every turn after it are
summarized again: the turns after a failed one were summarized without its summary in
the state, so a retry that succeeds must redo them too. The
stages after the turns (evidence, synthesis, branch summaries) are reused only when the
log files, every turn and the stage's options are unchanged (their keys say so).

Reuse restores the ``[M#]`` numbering up to the last reused item, the redaction counts,
and the accumulated state (loaded when nothing was cut, else replayed from the records).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..facts import RULES_VERSION
from ..model import Session, Turn
from ..redact import REDACTION_EDITION
from ..timeline.numbering import Numbering
from .context import StageContext
from .journal.data import Clock, Journal
from .journal.identity import journal_key, saved_journal
from .journal.persist import SCHEMA, JournalFormatError, from_payload
from .journal.store import JournalStore, chain_hash, file_change, source_file, turn_hash
from .schemas import TurnSummary
from .state import RestoreState

#: The stages after the turns, in the order they run (each key builds on the one before).
STAGES = ("evidence", "synthesis", "branches")


def fingerprint(ctx: StageContext) -> str:
    """The settings a saved turn summary depends on (and the rules' edition, which wrote its
    facts); another value means start again."""
    r = ctx.config.restore
    return chain_hash(
        SCHEMA,
        f"rules {RULES_VERSION}",
        f"{ctx.provider.name}:{ctx.provider.model}",
        str(r.redact),
        REDACTION_EDITION if r.redact else "",
        str(r.max_tool_output_chars),
        str(r.max_turn_chars),
        ctx.config.prompts.dir or "",
    )


@dataclass
class Resume:
    """The journal to continue, how many turns it keeps, and what to tell the user."""

    journal: Journal
    kept: int = 0
    #: Shown in `restore --format json` as ``timeline.note``: its words are kept with the v1 schema.
    note: str = "new timeline"
    save: bool = True
    #: Saved turns were dropped (changed, or beyond ``--max-turns``): the saved state is stale.
    cut: bool = False
    reusable: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)


def _describe(saved: int, kept: int, total: int, changes: list[str], failed: bool) -> str:
    if failed:
        return (
            f"resumed at turn {kept + 1}: {kept} turns reused, "
            f"retrying turn {kept + 1}, which failed last time"
        )
    if kept == saved == total:
        return f"resumed: all {total} turns unchanged"
    if kept == saved:
        if "grew" in changes:
            why = "the log grew"
        elif any(c != "same" for c in changes):
            why = "the log changed"
        elif changes:
            why = "the last run stopped early"
        else:
            why = "new turns"
        return f"resumed at turn {kept + 1}: {kept} turns reused, {total - kept} to do ({why})"
    return f"resumed at turn {kept + 1}: it changed since the last run; {kept} turns reused"


def open_journal(
    session: Session,
    turns: list[Turn],
    ctx: StageContext,
    store: JournalStore | None,
    *,
    fresh: bool = False,
    limited: bool = False,
    branch: str | None = None,
    clock: Clock = time.time,
    hashes: list[str] | None = None,
) -> Resume:
    """The saved journal to continue (or a new one), cut at the first changed turn.

    ``limited`` says ``turns`` is a prefix chosen by ``--max-turns``: then a saved
    journal with more turns is used but not overwritten. ``branch`` names the branch
    restored (`journal_key`). ``hashes`` are the turns' ``turn_hash`` when the caller
    took them already (a hollow session's turns have their bodies only while they are
    parsed).
    """
    fp = fingerprint(ctx)
    hashes = hashes if hashes is not None else [turn_hash(t) for t in turns]
    key = journal_key(session, branch)
    new = Journal(session, fp, key=key, clock=clock)
    new.source_files = [f for p in session.files if (f := source_file(p)) is not None]
    if store is None:
        return Resume(new, note="not saved", save=False, hashes=hashes)
    if fresh:
        return Resume(new, note="fresh start (--fresh)", hashes=hashes)
    data = saved_journal(store, session, branch, adopt=True)
    if data is None:
        return Resume(new, hashes=hashes)
    try:
        journal = from_payload(data, session, key=key, clock=clock)
    except JournalFormatError as exc:
        return Resume(new, note=f"saved timeline not usable ({exc}); starting again", hashes=hashes)
    if journal.fingerprint != fp:
        return Resume(
            new, note="saved timeline used another model or settings; starting again", hashes=hashes
        )
    changes = [file_change(f) for f in journal.source_files]
    kept, failed = 0, False
    for record, turn, digest in zip(journal.turns, turns, hashes, strict=False):
        if record.number != turn.number or record.hash != digest:
            break
        if record.summary is None:
            failed = True
            break
        kept += 1
    saved = len(journal.turns)
    note = _describe(saved, kept, len(turns), changes, failed)
    save = not (limited and saved > len(turns) and kept == len(turns))
    if kept < saved:
        journal.keep_turns(kept)
    journal.source_files = new.source_files
    return Resume(journal, kept, note, save, cut=kept < saved, hashes=hashes)


def stage_keys(resume: Resume, options: dict[str, Any]) -> dict[str, str]:
    """One key per stage: files, turns and options it depends on."""
    journal = resume.journal
    base = chain_hash(
        journal.fingerprint, *(f.sha256 for f in journal.source_files), *resume.hashes
    )
    keys: dict[str, str] = {}
    previous = base
    for name in STAGES:
        previous = chain_hash(previous, name, repr(sorted(options.get(name, {}).items())))
        keys[name] = previous
    return keys


def prepare(
    resume: Resume, turns: list[Turn], ctx: StageContext, keys: dict[str, str]
) -> RestoreState:
    """Numbering, redaction counts and state as of the last reused turn or stage."""
    journal = resume.journal
    kept = resume.kept
    if kept == len(turns) == len(journal.turns):
        for name in STAGES:
            record = journal.stages.get(name)
            if record is None or record.key != keys[name]:
                break
            resume.reusable.append(name)
    for name in list(journal.stages):
        if name not in resume.reusable:
            del journal.stages[name]
    if "evidence" not in resume.reusable:
        journal.drop_evidence()
    if resume.reusable:
        last = journal.stages[resume.reusable[-1]]
        labels_end, redactions = last.labels_end, last.data.get("redactions", {})
    elif kept:
        labels_end, redactions = (
            journal.turns[kept - 1].labels_end,
            journal.turns[kept - 1].redactions,
        )
    else:
        labels_end, redactions = 0, {}
    labels = journal.numbering.get("labels", [])[:labels_end]
    ctx.numbering = Numbering.from_dict(
        {"version": 1, "labels": labels}, ctx.numbering.preprocessor
    )
    # The session itself was redacted before this (its secrets are counted already);
    # the saved counts add those the prompts of the reused work found.
    ctx.redactor.by_kind = Counter(ctx.redactor.by_kind | Counter(redactions))
    if kept == 0:
        return RestoreState()
    if not resume.cut and journal.state:
        try:
            return RestoreState.from_dict(journal.state)
        except ValueError:
            pass
    return replay(journal, turns, ctx.numbering)


def replay(journal: Journal, turns: list[Turn], numbering: Numbering) -> RestoreState:
    """The state the kept turns produced, rebuilt from their records (no LLM call)."""
    state = RestoreState()
    for record, turn in zip(journal.turns, turns, strict=False):
        label_of = {m.id: lab for m in turn.messages if (lab := numbering.label_for(m.id))}
        state.add_parsed_turn(turn, label_of)
        # open_journal keeps no failed turn, so every kept record has its summary.
        state.add_summary(TurnSummary.model_validate(record.summary))
    return state
