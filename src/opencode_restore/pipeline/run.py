"""One restore, end to end: turn_parser -> turn_summarizer -> (evidence) -> synthesizer.

`restore_session` runs the stages over the session's journal; `restore_locked` is what the
entry points (CLI, API, MCP, hooks) call: the same under the journal's lock, so two
restores of one session take turns and the second reuses what the first saved.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ..config import Config
from ..errors import UsageError
from ..facts.turn import MAX_REQUEST_CHARS, cap_middle, compaction_text, turn_facts
from ..heap import give_back
from ..llm.base import Provider
from ..llm.registry import api_key
from ..llm.retry import RetryPolicy
from ..llm.settings import ProviderSettings, is_local_url
from ..llm.speed import SpeedLog
from ..llm.usage import PriceTable, UsageLedger
from ..llm.window import SOURCE_CONFIG, SOURCE_SERVER, discover_window
from ..model import Message, Session, Turn
from ..redact import redact_session
from .bodies import Bodies, drop_bodies
from .budget import ContextWindowError, TokenEstimator, Window, WindowTooSmall
from .context import StageContext
from .evidence.log_search import line_addressed
from .journal.data import Clock, StageRecord, TurnRecord
from .journal.identity import journal_key
from .journal.lock import journal_lock
from .journal.persist import persist
from .journal.store import JournalStore, journal_dir, turn_hash
from .restoration import (
    FALLBACK_WARNING,
    INTERRUPTED_WARNING,
    REPLACED_WARNING,
    WHOLE_SUMMARY,
    BranchSummaryRow,
    CommandRow,
    CompactionPoint,
    EvidenceItem,
    FailedTurnRow,
    FileRow,
    JournalInfo,
    Quote,
    ReferenceRow,
    Restoration,
    SessionInfo,
    UsageReport,
)
from .resume import Resume, open_journal, prepare, stage_keys
from .schemas import SessionSummary, TurnSummary
from .stages.branch_summarizer import summarize_branches
from .stages.evidence_gatherer import EvidenceOptions, gather_evidence
from .stages.synthesizer import clean_outputs, synthesize
from .stages.turn_parser import iter_turns
from .stages.turn_summarizer import TurnOutcome, summarize_turns
from .state import RestoreState

if TYPE_CHECKING:
    import httpx2

#: Characters of dropped message bodies after which freed memory is given back.
GIVE_BACK_CHARS = 4_000_000

#: Called after each turn with (turns done, turns total, the ledger so far, the speed of
#: the answers so far).
ProgressFn = Callable[[int, int, UsageLedger, SpeedLog], None]


@dataclass
class RestoreOptions:
    """Per-run options; None means the value from the config's ``[restore]`` section."""

    max_turns: int | None = None
    skip_evidence_search: bool | None = None
    max_searches: int | None = None
    workspace: str | None = None
    #: Ignore a saved journal and start from the first turn (the new one is still saved).
    fresh: bool = False
    #: The branch restored (its leaf or label): its journal is apart from the main line's.
    branch: str | None = None
    #: Where ``--debug-render`` prints every rendered request (cache breakpoints marked).
    debug_render: TextIO | None = None
    #: False when the caller has no use for the session after the restore (the CLI
    #: without ``--format html``): each turn's message bodies are dropped once the turn
    #: is summarized, so a long log's text is not all held to the end (bench/scale.py's
    #: RSS target; see ``bodies.drop_bodies``). The restoration is the same either way.
    keep_messages: bool = True


def _last_request(turns: list[Turn], ctx: StageContext) -> Quote | None:
    for turn in reversed(turns):
        for m in reversed(turn.messages):
            if m.is_human and m.text.strip():
                text = cap_middle(m.text.strip(), MAX_REQUEST_CHARS, "the request")
                return Quote(text=ctx.redact(text), citation=ctx.numbering.label_for(m.id))
    return None


#: Characters of what a compaction kept shown beside it.
COMPACTION_EXCERPT = 90


def _compactions(turns: list[Turn], ctx: StageContext) -> list[CompactionPoint]:
    out = []
    for turn in turns:
        for m in turn.messages:
            if m.type == "compaction" and m.compaction is not None:
                excerpt = compaction_text(m.compaction.summary or "", COMPACTION_EXCERPT)
                out.append(
                    CompactionPoint(
                        citation=ctx.numbering.label_for(m.id),
                        turn=turn.number,
                        kind=m.compaction.kind,
                        tokens_before=m.compaction.tokens_before,
                        summary_excerpt=ctx.redact(excerpt),
                    )
                )
    return out


def _replaced(summaries: list[TurnSummary]) -> list[str]:
    """The warning naming the turns whose summary is wholly the rules' (the model's replies
    never fit the structure)."""
    numbers = [str(s.turn_number) for s in summaries if WHOLE_SUMMARY in s.stood_in]
    plural = "s" if len(numbers) > 1 else ""
    return [f"{REPLACED_WARNING}{plural} {', '.join(numbers)}"] if numbers else []


def _interrupted(turns: list[Turn]) -> list[str]:
    """The warning that the session was stopped before it answered its last request."""
    if not turns or not turns[-1].interrupted:
        return []
    return [f"{INTERRUPTED_WARNING} {turns[-1].number}, before its answer"]


def _label_of(turn: Turn, ctx: StageContext) -> dict[str, str]:
    return {m.id: lb for m in turn.messages if (lb := ctx.numbering.label_for(m.id))}


def _held_elsewhere(session: Session) -> set[int] | None:
    """The messages a span other than the active conversation holds (a branch, a
    sub-agent may share them), or None when bodies must be kept: a log whose lines are
    not its entries is searched by its messages' text in the evidence stage."""
    if not all(line_addressed(session, f) for f in session.files):
        return None
    root = session.timeline.root
    return {id(m) for span in root.walk() if span is not root for m in span.messages()}


def _parse(
    session: Session, bodies: Bodies | None, keep: set[int] | None
) -> tuple[list[Turn], list[str]]:
    """The turns and their hashes; a hollow session's bodies are put back for the parse
    and, unless they are all kept, emptied again as soon as the turn is hashed."""
    if bodies is None:
        turns = list(iter_turns(session))
        return turns, [turn_hash(t) for t in turns]
    turns, hashes = [], []
    for turn in iter_turns(session, fill=bodies.fill):
        hashes.append(turn_hash(turn))
        if keep is not None:
            drop_bodies(turn, keep)
        turns.append(turn)
    return turns, hashes


def _usage(ledger: UsageLedger) -> UsageReport:
    total = ledger.total()
    return UsageReport(
        calls=total.calls,
        offline_answers=total.offline,
        failed_calls=total.errors,
        input_tokens=total.usage.input,
        output_tokens=total.usage.output,
        cache_read_tokens=total.usage.cache_read,
        cache_write_tokens=total.usage.cache_write,
        cost_usd=total.cost,
    )


def _message_index(session: Session) -> dict[str, Message]:
    """Every message of the session by id (labels restored from a saved map carry no message)."""
    index: dict[str, Message] = {}
    for span in session.timeline.root.walk():
        for m in span.messages():
            index.setdefault(m.id, m)
    return index


def _references(text: str, ctx: StageContext, session: Session) -> list[ReferenceRow]:
    rows = []
    index: dict[str, Message] | None = None
    for ref in ctx.numbering.extract_references(text):
        msg = ref.message
        if msg is None:
            index = index if index is not None else _message_index(session)
            msg = index.get(ref.id)
        rows.append(
            ReferenceRow(
                label=ref.label,
                message_id=ref.id,
                file=session.files[ref.file_index] if ref.file_index < len(session.files) else None,
                file_index=ref.file_index,
                entry_index=ref.entry_index,
                timestamp=ref.timestamp,
                role=msg.role if msg else None,
                type=msg.type if msg else None,
            )
        )
    rows.sort(key=lambda r: int(r.label[1:]))
    return rows


def make_context(
    session: Session, config: Config, provider: Provider, ledger: UsageLedger | None = None
) -> StageContext:
    """The shared machinery for restoring ``session`` with ``provider``."""
    prices = PriceTable({k: v.model_dump() for k, v in config.prices.items()})
    policy = RetryPolicy(
        max_attempts=config.llm.max_attempts,
        retry_after_cap=config.llm.retry_max_wait,
        local=is_local_url(_base_url(provider) or config.llm.base_url),
        speed=SpeedLog(),
    )
    return StageContext(session, config, provider, ledger or UsageLedger(prices), policy)


def _base_url(provider: Provider) -> str | None:
    """The server a provider built from settings talks to (None: its vendor's API)."""
    settings = getattr(provider, "settings", None)
    return settings.base_url if isinstance(settings, ProviderSettings) else None


async def model_window(
    config: Config, provider: Provider, client: httpx2.AsyncClient | None = None
) -> tuple[int | None, str]:
    """The model's context window and where it came from: ``llm.context_window``, else
    what an OpenAI-compatible server at a ``base_url`` says (`llm.window.discover_window`,
    a few short requests), else (None, "")."""
    if config.llm.context_window is not None:
        return config.llm.context_window, SOURCE_CONFIG
    settings = getattr(provider, "settings", None)
    base_url = _base_url(provider)
    if provider.name != "openai" or not base_url or not isinstance(settings, ProviderSettings):
        return None, ""
    key = api_key("openai", settings)
    if client is not None:
        found = await discover_window(base_url, provider.model, client, api_key=key)
    else:
        # Here only: an offline restore never loads the HTTP stack (llm.retry says why).
        import httpx2

        async with httpx2.AsyncClient() as own:
            found = await discover_window(base_url, provider.model, own, api_key=key)
    return found, SOURCE_SERVER if found is not None else ""


def _usage_dict(prior: dict[str, Any], ledger: UsageLedger) -> dict[str, Any]:
    """The journal's usage over all runs: what earlier runs spent plus this run."""
    now = _usage(ledger).model_dump()
    out = dict(prior)
    for key, value in now.items():
        if key == "cost_usd":
            if value is not None or key not in out:
                out[key] = round((out.get(key) or 0.0) + (value or 0.0), 6)
        else:
            out[key] = int(out.get(key, 0)) + int(value or 0)
    return out


class _Run:
    """One restore over its journal: saves after each turn and each stage."""

    def __init__(
        self,
        resume: Resume,
        ctx: StageContext,
        state: RestoreState,
        store: JournalStore | None,
        keys: dict[str, str],
    ) -> None:
        self.resume = resume
        self.journal = resume.journal
        self.ctx = ctx
        self.state = state
        self.store = store if resume.save else None
        self.keys = keys
        self.prior_usage = dict(self.journal.usage)
        #: Every turn's parsed facts, in order (the synthesis reads them, not the turns).
        self.facts: list[dict[str, Any]] = []
        #: Messages whose bodies are never dropped; None keeps every body.
        self.keep: set[int] | None = None
        self.dropped = 0  # characters dropped since the heap was last given back

    def done(self, turn: Turn, facts: dict[str, Any]) -> None:
        """Keep ``turn``'s facts; drop its message bodies when they are not needed."""
        self.facts.append(facts)
        if self.keep is None:
            return
        self.dropped += drop_bodies(turn, self.keep)
        if self.dropped >= GIVE_BACK_CHARS:  # a trim walks the heap: not after every turn
            give_back()
            self.dropped = 0

    async def save(self, *, after_turn: bool = False) -> None:
        """Persist the journal with the numbering, state and usage as they are now.

        After a turn only what the turn added is saved (the store's change file) and the
        state is left out: it is replayed from the turn records on resume
        (``resume.replay``, no LLM call). Dumping everything after every turn made a
        long restore quadratic. After a stage, the whole artifact is written.
        """
        if self.store is None:
            return
        journal = self.journal
        journal.labels = self.ctx.numbering
        streamed = not self.store.in_memory  # a store in memory keeps what it is given
        journal.state = {} if after_turn else self.state.to_dict(streamed=streamed)
        journal.usage = _usage_dict(self.prior_usage, self.ctx.ledger)
        await persist(journal, self.store, snapshot=not after_turn)
        # Written: a second copy of every turn summary need not stay in memory (a stage
        # save is always a snapshot, which builds the state afresh).
        journal.state = {}

    async def on_turn(self, outcome: TurnOutcome) -> None:
        turn = outcome.turn
        await self.journal.add_turn(
            TurnRecord(
                number=turn.number,
                id=turn.messages[0].id if turn.messages else f"turn-{turn.number}",
                hash=self.resume.hashes[turn.number - 1],
                labels=outcome.labels,
                labels_end=outcome.labels_end,
                redactions=dict(self.ctx.redactor.by_kind),
                summary=outcome.summary.model_dump() if outcome.summary else None,
                error=outcome.error,
            )
        )
        await self.save(after_turn=True)
        self.done(turn, outcome.facts)

    def reused(self, name: str) -> dict[str, Any] | None:
        """The saved output of stage ``name`` when it may be reused."""
        if name in self.resume.reusable:
            return self.journal.stages[name].data
        return None

    async def finish(self, name: str, data: dict[str, Any]) -> None:
        """Record stage ``name`` as done and save."""
        data["redactions"] = dict(self.ctx.redactor.by_kind)
        self.journal.stages[name] = StageRecord(self.keys[name], len(self.ctx.numbering), data)
        await self.save()


async def _evidence(
    run: _Run, turns: list[Turn], options: RestoreOptions, config: Config, window: Window
) -> tuple[list[EvidenceItem], list[str]]:
    saved = run.reused("evidence")
    if saved is not None:
        return [EvidenceItem.model_validate(i) for i in saved["items"]], list(saved["warnings"])
    items: list[EvidenceItem] = []
    warnings: list[str] = []
    skip = options.skip_evidence_search
    if not (config.restore.skip_evidence_search if skip is None else skip):
        found = await gather_evidence(
            turns,
            run.state,
            run.ctx,
            EvidenceOptions(
                max_searches=options.max_searches or config.restore.max_searches,
                workspace=options.workspace or config.restore.workspace,
            ),
            window,
        )
        items, warnings = found.items, found.warnings
    journal = run.journal
    for number, item in enumerate(items, start=1):
        source = {"id": f"S{number}", **item.model_dump()}
        journal.sources_pool.append(source)
        cites = f" [{', '.join(item.citations)}]" if item.citations else ""
        await journal.contribute(
            "evidence",
            f"[EVIDENCE S{number}] {item.tool} {item.query!r}{cites}\n{item.result}",
            meta={"source": f"S{number}"},
        )
    await run.finish("evidence", {"items": [i.model_dump() for i in items], "warnings": warnings})
    return items, warnings


async def _synthesis(
    run: _Run, turns: list[Turn], window: Window, evidence: list[EvidenceItem]
) -> tuple[SessionSummary, str | None]:
    saved = run.reused("synthesis")
    if saved is not None:
        run.facts.clear()
        return SessionSummary.model_validate(saved["summary"]), saved["fallback"]
    summary, fallback = await synthesize(turns, run.state, run.ctx, window, evidence, run.facts)
    # The synthesis was their last reader: not held through the branches' snapshot.
    run.facts.clear()
    await run.finish("synthesis", {"summary": summary.model_dump(), "fallback": fallback})
    return summary, fallback


async def _branches(run: _Run, session: Session) -> list[BranchSummaryRow]:
    saved = run.reused("branches")
    if saved is not None:
        return [BranchSummaryRow.model_validate(r) for r in saved["rows"]]
    rows = await summarize_branches(session, run.ctx)
    await run.finish("branches", {"rows": [r.model_dump(mode="json") for r in rows]})
    return rows


def _journal_info(run: _Run, store: JournalStore | None) -> JournalInfo:
    journal = run.journal
    ranges = [b for b in journal.blocks if b.kind == "range.summary"]
    return JournalInfo(
        path=str(store.path_for(journal.key)) if run.store is not None and store else None,
        note=run.resume.note,
        turns_reused=run.resume.kept,
        stages_reused=list(run.resume.reusable),
        compacted_through_turn=int(ranges[-1].meta["last_turn"]) if ranges else None,
    )


async def restore_session(
    session: Session,
    config: Config,
    provider: Provider,
    *,
    options: RestoreOptions | None = None,
    progress: ProgressFn | None = None,
    store: JournalStore | None = None,
    clock: Clock = time.time,
) -> Restoration:
    """Restore one session: summaries per turn, then the cited SESSION SUMMARY.

    With a ``store`` the journal is saved after every turn and stage, and a
    saved one is continued: finished turns and stages are not asked again.
    """
    ctx = make_context(session, config, provider)
    ctx.context_window, ctx.window_source = await model_window(config, provider)
    try:
        restoration = await _run_stages(
            session, ctx, options or RestoreOptions(), progress=progress, store=store, clock=clock
        )
    except WindowTooSmall as exc:
        raise ContextWindowError(str(exc)) from None
    # The journal, the state and the turns are let go by now: the references (tens of
    # thousands of rows on a long log) are built without them beside (bench/scale.py).
    restoration.references = _references(_cited_text(restoration), ctx, session)
    return restoration


def _cited_text(restoration: Restoration) -> str:
    """Every text and citation of ``restoration`` whose labels the references list."""
    labels = [label for f in restoration.files for label in f.citations]
    labels += [c.citation for c in restoration.commands if c.citation]
    labels += [c.citation for c in restoration.compactions if c.citation]
    labels += [label for e in restoration.evidence for label in e.citations]
    if restoration.last_user_request and restoration.last_user_request.citation:
        labels.append(restoration.last_user_request.citation)
    cited_text = restoration.model_dump_json(include={"summary", "turns", "branch_summaries"})
    return cited_text + " " + " ".join(f"[{label}]" for label in labels)


async def _run_stages(
    session: Session,
    ctx: StageContext,
    options: RestoreOptions,
    *,
    progress: ProgressFn | None,
    store: JournalStore | None,
    clock: Clock,
) -> Restoration:
    """The stages over the session's journal: the restoration without its references."""
    config = ctx.config
    provider = ctx.provider
    if config.restore.redact:
        # Once, on the decoded strings, before any of them is parsed into a turn,
        # rendered, saved in the journal or sent: everything below sees no secret.
        redact_session(session, ctx.redactor.redact, cap=True)
    keep = None if options.keep_messages else _held_elsewhere(session)
    bodies = None
    if session.bodies is not None:
        bodies = Bodies(session, ctx.redactor.redact if config.restore.redact else None)
    turns, hashes = _parse(session, bodies, keep)
    if options.max_turns is None and len(turns) > config.restore.max_session_turns:
        where = session.files[0] if session.files else session.id
        raise UsageError(
            f"{where}: the session has {len(turns):,} turns, more than "
            f"restore.max_session_turns ({config.restore.max_session_turns:,}); "
            "restore its first N with --max-turns N, or raise the limit in the config"
        )
    limited = options.max_turns is not None and len(turns) > options.max_turns
    if options.max_turns is not None:
        turns, hashes = turns[: options.max_turns], hashes[: options.max_turns]
    resume = open_journal(
        session,
        turns,
        ctx,
        store,
        fresh=options.fresh,
        limited=limited,
        branch=options.branch,
        clock=clock,
        hashes=hashes,
    )
    keys = stage_keys(
        resume,
        {
            "evidence": {
                "skip": options.skip_evidence_search
                if options.skip_evidence_search is not None
                else config.restore.skip_evidence_search,
                "max": options.max_searches or config.restore.max_searches,
                "workspace": options.workspace or config.restore.workspace,
            }
        },
    )
    state = prepare(resume, turns, ctx, keys)
    debug = options.debug_render
    window = Window(
        resume.journal,
        ctx,
        TokenEstimator(resume.journal.token_factor),
        debug=(lambda text: print(text, file=debug, flush=True)) if debug is not None else None,
    )
    run = _Run(resume, ctx, state, store, keys)
    run.keep = keep
    fill = None
    if bodies is not None:
        bodies.rewind()
        fill = bodies.fill_turn
    for turn in turns[: resume.kept]:
        if fill is not None:
            fill(turn)
        run.done(turn, turn_facts(turn, _label_of(turn, ctx)))
    speed = ctx.policy.speed or SpeedLog()
    if progress is not None:
        progress(resume.kept, len(turns), ctx.ledger, speed)
    await summarize_turns(
        turns[resume.kept :],
        state,
        ctx,
        window,
        progress=(lambda i, n: progress(resume.kept + i, len(turns), ctx.ledger, speed))
        if progress
        else None,
        on_turn=run.on_turn,
        before=fill,
    )
    if bodies is not None:
        bodies.rewind()
    evidence, evidence_warnings = await _evidence(run, turns, options, config, window)
    raw_summary, fallback = await _synthesis(run, turns, window, evidence)
    # The window's last use: with its cycles broken, the journal and the turns' working
    # state are freed as soon as this returns, before the references and the save.
    window.close()
    summary, turn_summaries, stats = clean_outputs(raw_summary, state, ctx.numbering)
    files = [
        FileRow(
            path=r.path, actions=list(r.actions), turns=r.turns, citations=r.labels, notes=r.notes
        )
        for r in state.artifacts.values()
    ]
    commands = [
        CommandRow(
            command=ctx.redact(c.command),
            turn=c.turn,
            citation=c.label,
            exit_code=c.exit_code,
            is_error=c.is_error,
        )
        for c in state.commands
    ]
    restoration = Restoration(
        session=SessionInfo(
            id=session.id,
            agent=session.agent,
            files=session.files,
            cwd=session.cwd,
            title=session.title,
            model=session.model,
            started_at=session.started_at,
        ),
        provider=f"{provider.name}:{provider.model}",
        summary=summary,
        files=files,
        commands=commands,
        last_user_request=_last_request(turns, ctx),
        compactions=_compactions(turns, ctx),
        turns=turn_summaries,
        turn_count=len(turns),
        failed_turns=[FailedTurnRow(turn=f.turn, error=f.error) for f in state.failed_turns],
        evidence=evidence,
        citations=stats,
        redactions=ctx.redactor.count,
        warnings=[str(w) for w in session.warnings]
        + evidence_warnings
        + ([f"{FALLBACK_WARNING}: {fallback}"] if fallback else [])
        + _replaced(turn_summaries)
        + _interrupted(turns),
    )
    restoration.branch_summaries = await _branches(run, session)
    restoration.usage = _usage(ctx.ledger)
    restoration.timeline = _journal_info(run, store)
    return restoration


def journal_store(config: Config) -> JournalStore | None:
    """Where restores keep their journals; None when ``[restore] resume`` is off."""
    return JournalStore(journal_dir(config.data_dir)) if config.restore.resume else None


async def restore_locked(
    session: Session,
    config: Config,
    provider: Provider,
    *,
    store: JournalStore | None,
    options: RestoreOptions | None = None,
    progress: ProgressFn | None = None,
    on_wait: Callable[[str], object] | None = None,
) -> Restoration:
    """`restore_session` under the lock of the session's journal (nothing to lock without one).

    ``on_wait`` is called once with the journal's key if another restore holds it.
    """
    options = options or RestoreOptions()
    if store is None:
        return await restore_session(session, config, provider, options=options, progress=progress)
    key = journal_key(session, options.branch)
    waiting = (lambda: on_wait(key)) if on_wait is not None else None
    async with journal_lock(store, key, on_wait=waiting):
        return await restore_session(
            session, config, provider, options=options, progress=progress, store=store
        )
