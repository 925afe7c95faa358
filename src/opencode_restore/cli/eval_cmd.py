"""The `eval` command: restore recorded sessions and score them against a facts file."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
import orjson

from .. import event_loop
from ..config import Config, load_config
from ..diagnostics import WarningSink
from ..errors import UsageError
from ..evaluate.facts_file import Fact, FactsFile, load_facts
from ..evaluate.probes import ProbeResult, run_probes
from ..evaluate.score import RecordingScore, score_restoration
from ..llm.base import Provider
from ..llm.registry import close_provider, get_provider
from ..llm.settings import ProviderSettings
from ..model import Session
from ..pipeline.restoration import Restoration
from ..pipeline.run import RestoreOptions, restore_session
from ..pipeline.stages.turn_parser import parse_turns
from ..report.summary import summary_markdown
from ..sources import open_session
from .exits import friendly_errors
from .options import output_option, provider_options


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def table(scores: list[RecordingScore], probes: dict[str, list[ProbeResult]]) -> str:
    """The per-recording table, a total line, and what each recording missed."""
    head = f"{'recording':<14} {'kept':>9} {'cited':>9} {'contra':>6} {'tokens':>6} {'resolve':>7}"
    if probes:
        head += f" {'probes':>7}"
    out = [head, "-" * len(head)]
    for s in scores:
        n = len(s.facts)
        kept = sum(f.kept for f in s.facts)
        cited = sum(f.cited for f in s.facts)
        row = (
            f"{s.recording:<14} {kept:>3}/{n:<2} {_pct(s.kept):>3} {cited:>3}/{n:<2} "
            f"{_pct(s.cited):>3} {len(s.contradictions):>6} {s.tokens:>6} {_pct(s.resolved):>7}"
        )
        if probes:
            p = probes.get(s.recording, [])
            row += f" {sum(r.passed for r in p):>3}/{len(p):<3}"
        out.append(row)
    total = sum(len(s.facts) for s in scores)
    kept = sum(f.kept for s in scores for f in s.facts)
    cited = sum(f.cited for s in scores for f in s.facts)
    if len(scores) > 1 and total:
        out.append(
            f"{'all':<14} {kept:>3}/{total:<2} {_pct(kept / total):>3} {cited:>3}/{total:<2} "
            f"{_pct(cited / total):>3} {sum(len(s.contradictions) for s in scores):>6} "
            f"{max(s.tokens for s in scores):>6} "
            f"{_pct(min(s.resolved for s in scores)):>7}"
        )
    for s in scores:
        lost = [f.id for f in s.facts if not f.kept]
        uncited = [f.id for f in s.facts if f.kept and not f.cited]
        for what, ids in (("not kept", lost), ("kept, not cited", uncited)):
            if ids:
                out.append(f"{s.recording}: {what}: {', '.join(ids)}")
        out += [f"{s.recording}: contradiction: {c}" for c in s.contradictions]
        out += [f"{s.recording}: superseded: {c}" for c in s.superseded]
    return "\n".join(out) + "\n"


def _as_json(scores: list[RecordingScore], probes: dict[str, list[ProbeResult]]) -> str:
    data: list[dict[str, Any]] = []
    for s in scores:
        item = asdict(s) | {"kept": s.kept, "cited": s.cited, "resolved": s.resolved}
        if s.recording in probes:
            item["probes"] = [asdict(p) for p in probes[s.recording]]
        data.append(item)
    return orjson.dumps({"recordings": data}, option=orjson.OPT_INDENT_2).decode() + "\n"


async def _restore(session: Session, config: Config, provider: Provider) -> Restoration:
    try:
        return await restore_session(session, config, provider, options=RestoreOptions())
    finally:
        await close_provider(provider)  # SDK pools close in the loop that opened them


async def _probe(judge: Provider, summary: str, facts: list[Fact]) -> list[ProbeResult]:
    try:
        return await run_probes(judge, summary, facts)
    finally:
        await close_provider(judge)


def evaluate(
    facts: FactsFile,
    recordings: list[str],
    *,
    model: str | None,
    base_url: str | None,
    config_path: Path | None,
    judge: str | None,
) -> tuple[list[RecordingScore], dict[str, list[ProbeResult]]]:
    """Restore each recording with the configured provider (no saved timeline) and score it."""
    config = load_config(config_path, overrides={"llm": {"model": model, "base_url": base_url}})
    config.restore.resume = False
    scores: list[RecordingScore] = []
    probes: dict[str, list[ProbeResult]] = {}
    for name in recordings:
        log = facts.log_path(name)
        session = open_session([log], WarningSink(), None)
        provider = get_provider(config.llm.model, ProviderSettings.from_config(config))
        restoration = event_loop.run(_restore, session, config, provider)
        scores.append(score_restoration(restoration, facts, name, parse_turns(session), log))
        if judge is not None:
            judge_provider = get_provider(judge, ProviderSettings.from_config(config))
            text = summary_markdown(restoration)
            probes[name] = event_loop.run(_probe, judge_provider, text, facts.facts)
    return scores, probes


@click.command("eval")
@click.argument("facts_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-r",
    "--recording",
    "recordings",
    multiple=True,
    help="Score only this recording of the facts file (repeatable; default all).",
)
@provider_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option(
    "--min-kept", type=click.FloatRange(0, 100), default=None, help="Percent; exit 1 below."
)
@click.option(
    "--min-cited", type=click.FloatRange(0, 100), default=None, help="Percent; exit 1 below."
)
@click.option("--probes", is_flag=True, help="Also ask probe questions of a judge model.")
@click.option("--judge", default=None, help="The judge for --probes, provider:model.")
@output_option()
@friendly_errors
def eval_command(
    facts_file: Path,
    recordings: tuple[str, ...],
    model: str | None,
    base_url: str | None,
    config_path: Path | None,
    fmt: str,
    min_kept: float | None,
    min_cited: float | None,
    probes: bool,
    judge: str | None,
    output: Path | None,
) -> None:
    """Restore the recordings of FACTS_FILE and score each summary against its facts.

    Per fact: kept (one of its strings is in the summary text) and cited correctly (that
    line cites one of the fact's messages). Also contradictions, the summary's size in
    tokens without the references appendix, and the share of citations that resolve.
    """
    if probes and judge is None:
        raise UsageError("--probes needs --judge provider:model")
    facts = load_facts(facts_file)
    names = list(recordings) or list(facts.recordings)
    unknown = [n for n in names if n not in facts.recordings]
    if unknown:
        known = ", ".join(facts.recordings)
        raise UsageError(f"{facts_file}: no recording {unknown[0]!r} (it has: {known})")
    scores, probe_results = evaluate(
        facts,
        names,
        model=model,
        base_url=base_url,
        config_path=config_path,
        judge=judge if probes else None,
    )
    text = _as_json(scores, probe_results) if fmt == "json" else table(scores, probe_results)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    total = sum(len(s.facts) for s in scores) or 1
    kept = 100 * sum(f.kept for s in scores for f in s.facts) / total
    cited = 100 * sum(f.cited for s in scores for f in s.facts) / total
    if (min_kept is not None and kept < min_kept) or (min_cited is not None and cited < min_cited):
        sys.exit(1)
