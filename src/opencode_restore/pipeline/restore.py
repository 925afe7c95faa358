"""The restore pipeline: turn_parser -> turn_summarizer -> (evidence) -> synthesizer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config import Config
from ..llm.base import Provider
from ..llm.retry import RetryPolicy
from ..llm.usage import PriceTable, UsageLedger
from ..model import Session, Turn
from .branches import summarize_branches
from .context import StageContext
from .evidence_gatherer import EvidenceOptions, gather_evidence
from .restoration import (
    CommandRow,
    CompactionPoint,
    EvidenceItem,
    FailedTurnRow,
    FileRow,
    Quote,
    ReferenceRow,
    Restoration,
    SessionInfo,
    UsageReport,
)
from .state import RestoreState
from .synthesizer import synthesize
from .turn_parser import parse_turns
from .turn_summarizer import summarize_turns

#: Called after each turn with (turns done, turns total, the ledger so far).
ProgressFn = Callable[[int, int, UsageLedger], None]


@dataclass
class RestoreOptions:
    """Per-run options; None means the value from the config's ``[restore]`` section."""

    max_turns: int | None = None
    skip_evidence_search: bool | None = None
    max_searches: int | None = None
    workspace: str | None = None


def _last_request(turns: list[Turn], ctx: StageContext) -> Quote | None:
    for turn in reversed(turns):
        for m in reversed(turn.messages):
            if m.is_human and m.text.strip():
                return Quote(
                    text=ctx.redact(m.text.strip()), citation=ctx.numbering.label_for(m.id)
                )
    return None


def _compactions(turns: list[Turn], ctx: StageContext) -> list[CompactionPoint]:
    out = []
    for turn in turns:
        for m in turn.messages:
            if m.type == "compaction" and m.compaction is not None:
                excerpt = " ".join((m.compaction.summary or "").split())[:300]
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


def _usage(ledger: UsageLedger) -> UsageReport:
    total = ledger.total()
    return UsageReport(
        calls=total.calls,
        failed_calls=total.errors,
        input_tokens=total.usage.input,
        output_tokens=total.usage.output,
        cache_read_tokens=total.usage.cache_read,
        cache_write_tokens=total.usage.cache_write,
        cost_usd=total.cost,
    )


def _references(text: str, ctx: StageContext, session: Session) -> list[ReferenceRow]:
    rows = []
    for ref in ctx.numbering.extract_references(text):
        msg = ref.message
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
        max_attempts=config.llm.max_attempts, retry_after_cap=config.llm.retry_max_wait
    )
    return StageContext(session, config, provider, ledger or UsageLedger(prices), policy)


async def restore_session(
    session: Session,
    config: Config,
    provider: Provider,
    *,
    options: RestoreOptions | None = None,
    progress: ProgressFn | None = None,
) -> Restoration:
    """Restore one session: summaries per turn, then the cited SESSION SUMMARY."""
    options = options or RestoreOptions()
    ctx = make_context(session, config, provider)
    turns = parse_turns(session)
    if options.max_turns is not None:
        turns = turns[: options.max_turns]
    state = RestoreState()
    await summarize_turns(
        turns,
        state,
        ctx,
        progress=(lambda i, n: progress(i, n, ctx.ledger)) if progress else None,
    )
    evidence: list[EvidenceItem] = []
    evidence_warnings: list[str] = []
    skip = options.skip_evidence_search
    if not (config.restore.skip_evidence_search if skip is None else skip):
        found = await gather_evidence(
            turns,
            state,
            ctx,
            EvidenceOptions(
                max_searches=options.max_searches or config.restore.max_searches,
                workspace=options.workspace or config.restore.workspace,
            ),
        )
        evidence, evidence_warnings = found.items, found.warnings
    summary, turn_summaries, stats, fallback = await synthesize(turns, state, ctx, evidence)
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
        + ([f"synthesis fell back to the offline summary: {fallback}"] if fallback else []),
    )
    restoration.branch_summaries = await summarize_branches(session, ctx)
    labels = [label for f in files for label in f.citations]
    labels += [c.citation for c in commands if c.citation]
    labels += [c.citation for c in restoration.compactions if c.citation]
    labels += [label for e in evidence for label in e.citations]
    if restoration.last_user_request and restoration.last_user_request.citation:
        labels.append(restoration.last_user_request.citation)
    cited_text = restoration.model_dump_json(include={"summary", "turns", "branch_summaries"})
    restoration.references = _references(
        cited_text + " " + " ".join(f"[{label}]" for label in labels), ctx, session
    )
    restoration.usage = _usage(ctx.ledger)
    return restoration
