"""The `eval` command: restore recorded sessions and score them against facts files."""

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
from ..evaluate.model_use import model_use, spans
from ..evaluate.probes import ProbeResult, run_probes
from ..evaluate.score import RecordingScore, Scoring, score_restoration
from ..llm.base import Provider
from ..llm.registry import close_provider, get_provider
from ..llm.settings import ProviderSettings
from ..llm.usage import UsageLedger
from ..model import Session
from ..pipeline.restoration import Restoration
from ..pipeline.run import RestoreOptions, restore_session
from ..pipeline.stages.turn_parser import parse_turns
from ..report.summary import render_restoration, summary_markdown
from ..sources import open_session
from .exits import friendly_errors
from .options import output_option, provider_options


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _row_name(scores: list[RecordingScore]) -> int:
    return max([14, *(len(s.recording) for s in scores)])


def table(scores: list[RecordingScore], probes: dict[str, list[ProbeResult]]) -> str:
    """The per-recording table, a total line, and what each recording missed.

    With ``fields`` scoring (the real devset's facts files) the table also has each
    session's agent and its ``must_not`` hits, and the sentences that hit are listed.
    """
    w = _row_name(scores)
    real = any(s.scoring == "fields" for s in scores)
    asked = any(_asked(s) for s in scores)
    agent_w = max([5, *(len(s.agent) for s in scores)]) if real else 0
    head = f"{'recording':<{w}}"
    if real:
        head += f" {'agent':<{agent_w}}"
    head += f" {'kept':>10} {'cited':>10}"
    if real:
        head += f" {'must_not':>8}"
    head += f" {'contra':>6} {'tokens':>6} {'resolve':>7}"
    if asked:
        head += f" {'failed':>7}"
    if probes:
        head += f" {'probes':>7}"
    out = [head, "-" * len(head)]
    for s in scores:
        n = len(s.facts)
        kept = sum(f.kept for f in s.facts)
        cited = sum(f.cited for f in s.facts)
        row = f"{s.recording:<{w}}"
        if real:
            row += f" {s.agent:<{agent_w}}"
        row += f" {kept:>3}/{n:<2} {_pct(s.kept):>4} {cited:>3}/{n:<2} {_pct(s.cited):>4}"
        if real:
            row += f" {_ratio(len(s.must_not_hit_ids), s.must_not_items):>8}"
        row += f" {len(s.contradictions):>6} {s.tokens:>6} {_pct(s.resolved):>7}"
        if asked:
            row += f" {_failed(s):>7}"
        if probes:
            p = probes.get(s.recording, [])
            row += f" {sum(r.passed for r in p):>3}/{len(p):<3}"
        out.append(row)
    total = sum(len(s.facts) for s in scores)
    kept = sum(f.kept for s in scores for f in s.facts)
    cited = sum(f.cited for s in scores for f in s.facts)
    hits = sum(len(s.must_not_hit_ids) for s in scores)
    items = sum(s.must_not_items for s in scores)
    if len(scores) > 1 and total:
        row = f"{'all':<{w}}"
        if real:
            row += f" {'':<{agent_w}}"
        row += (
            f" {kept:>3}/{total:<2} {_pct(kept / total):>4} {cited:>3}/{total:<2} "
            f"{_pct(cited / total):>4}"
        )
        if real:
            row += f" {_ratio(hits, items):>8}"
        row += (
            f" {sum(len(s.contradictions) for s in scores):>6} "
            f"{max(s.tokens for s in scores):>6} "
            f"{_pct(min(s.resolved for s in scores)):>7}"
        )
        if asked:
            uses = [s.model for s in scores if s.model is not None and not s.model.offline]
            failed = _ratio(sum(len(u.failed_turns) for u in uses), sum(u.turns for u in uses))
            row += f" {failed:>7}"
        out.append(row)
    for s in scores:
        lost = [f.id for f in s.facts if not f.kept]
        uncited = [f.id for f in s.facts if f.kept and not f.cited]
        for what, ids in (("not kept", lost), ("kept, not cited", uncited)):
            if ids:
                out.append(f"{s.recording}: {what}: {', '.join(ids)}")
        out += [f"{s.recording}: contradiction: {c}" for c in s.contradictions]
        out += [f"{s.recording}: superseded: {c}" for c in s.superseded]
        out += [
            f"{s.recording}: must_not {h.id} ({h.field}): {h.sentence[:160]}"
            for h in s.must_not_hits
        ]
        out += _model_lines(s)
    if real:
        out.append(
            f"overall: facts kept {kept}/{total}, cited correctly {cited}/{total}, "
            f"must_not hits {hits}/{items}"
        )
    return "\n".join(out) + "\n"


def _ratio(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def _asked(s: RecordingScore) -> bool:
    """True when a model (not the offline rules) restored the recording."""
    return s.model is not None and not s.model.offline


def _failed(s: RecordingScore) -> str:
    """The recording's failed turns of all its turns (blank for the offline rules)."""
    if s.model is None or s.model.offline:
        return ""
    return _ratio(len(s.model.failed_turns), s.model.turns)


def _model_lines(s: RecordingScore) -> list[str]:
    """Where the offline rules stood in for the model in this recording."""
    use = s.model
    if use is None or use.offline:
        return []
    out = []
    if use.failed_turns:
        turns = spans(use.failed_turns)
        out.append(f"{s.recording}: failed turns (the rules' turn lines stand in): {turns}")
    if use.fallbacks:
        out.append(f"{s.recording}: offline fallback: {', '.join(use.fallbacks)}")
    if use.stood_in:
        said = ", ".join(use.stood_in)
        out.append(
            f"{s.recording}: the rules stand in where the model's text stated nothing: {said}"
        )
    if use.nothing:
        out.append(f"{s.recording}: the model contributed nothing: {'; '.join(use.nothing)}")
    return out


def model_report(scores: list[RecordingScore]) -> list[str]:
    """The stderr lines of a model's eval: why calls failed (one line per distinct
    reason, with its count), the HTTP requests sent (retries included) and the tokens the
    server spent. Nothing for the offline rules."""
    uses = [s.model for s in scores if s.model is not None and not s.model.offline]
    if not uses:
        return []
    reasons: dict[str, int] = {}
    for use in uses:
        for why, count in use.reasons.items():
            reasons[why] = reasons.get(why, 0) + count
    out = [f"eval: {count} × {why}" for why, count in reasons.items()]
    out.append(
        f"eval: {sum(u.requests for u in uses)} HTTP requests (retries included); the server "
        f"spent {sum(u.input_tokens for u in uses)} input and "
        f"{sum(u.output_tokens for u in uses)} output tokens"
    )
    return out


def _as_json(scores: list[RecordingScore], probes: dict[str, list[ProbeResult]]) -> str:
    data: list[dict[str, Any]] = []
    for s in scores:
        item = asdict(s) | {"kept": s.kept, "cited": s.cited, "resolved": s.resolved}
        item["must_not_hit_ids"] = s.must_not_hit_ids
        if s.model is not None:
            item["model"]["contributed_nothing"] = s.model.nothing
        if s.recording in probes:
            item["probes"] = [asdict(p) for p in probes[s.recording]]
        data.append(item)
    return orjson.dumps({"recordings": data}, option=orjson.OPT_INDENT_2).decode() + "\n"


async def _restore(
    session: Session, config: Config, provider: Provider
) -> tuple[Restoration, UsageLedger | None]:
    """The restoration and the run's usage ledger.

    The ledger counts the HTTP requests (retries included), which the restoration does not
    keep; a restore hands it only to its progress callback.
    """
    ledgers: list[UsageLedger] = []

    def progress(done: int, total: int, ledger: UsageLedger, *_: object) -> None:
        if not ledgers:
            ledgers.append(ledger)

    try:
        restoration = await restore_session(
            session, config, provider, options=RestoreOptions(), progress=progress
        )
    finally:
        await close_provider(provider)  # SDK pools close in the loop that opened them
    return restoration, ledgers[0] if ledgers else None


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
    scoring: Scoring = "auto",
    keep: Path | None = None,
) -> tuple[list[RecordingScore], dict[str, list[ProbeResult]]]:
    """Restore each recording with the configured provider (no saved timeline) and score it.

    ``keep``: a folder that gets each restoration as ``<recording>.json`` (what
    ``restore --format json`` prints), so another scorer can read the very same summary.
    """
    config = load_config(config_path, overrides={"llm": {"model": model, "base_url": base_url}})
    config.restore.resume = False
    scores: list[RecordingScore] = []
    probes: dict[str, list[ProbeResult]] = {}
    for name in recordings:
        log = facts.log_path(name)
        session = open_session([log], WarningSink(), None)
        provider = get_provider(config.llm.model, ProviderSettings.from_config(config))
        restoration, ledger = event_loop.run(_restore, session, config, provider)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{name}.json").write_text(
                render_restoration(restoration, "json") + "\n", encoding="utf-8"
            )
        turns = parse_turns(session)
        score = score_restoration(restoration, facts, name, turns, log, scoring)
        score.model = model_use(restoration, ledger)
        scores.append(score)
        if judge is not None:
            judge_provider = get_provider(judge, ProviderSettings.from_config(config))
            text = summary_markdown(restoration)
            probes[name] = event_loop.run(_probe, judge_provider, text, facts.facts)
    return scores, probes


def facts_paths(args: tuple[Path, ...]) -> list[Path]:
    """The facts files named: a folder stands for its ``facts*.json`` files, by name."""
    out: list[Path] = []
    for arg in args:
        if arg.is_dir():
            found = sorted(arg.glob("facts*.json"))
            if not found:
                raise UsageError(f"{arg}: no facts*.json file in this folder")
            out += found
        else:
            out.append(arg)
    return out


def load_all(paths: list[Path]) -> list[FactsFile]:
    """Each facts file read; a recording name may occur in one file only."""
    files = [load_facts(p) for p in paths]
    seen: dict[str, Path] = {}
    for path, facts in zip(paths, files, strict=True):
        for name in facts.recordings:
            if name in seen:
                raise UsageError(f"{path}: recording {name!r} is also in {seen[name]}")
            seen[name] = path
    return files


@click.command("eval")
@click.argument(
    "facts_files",
    metavar="FACTS_FILE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "-r",
    "--recording",
    "recordings",
    multiple=True,
    help="Score only this recording of the facts files (repeatable; default all).",
)
@provider_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option(
    "--scoring",
    type=click.Choice(["auto", "markdown", "fields"]),
    default="auto",
    show_default=True,
    help="Where facts are looked for: the summary markdown's lines, or the summary's fields "
    "cut into sentences (the real devset's check.py). auto: fields for a facts file with "
    "must_not.",
)
@click.option(
    "--min-kept", type=click.FloatRange(0, 100), default=None, help="Percent; exit 1 below."
)
@click.option(
    "--min-cited", type=click.FloatRange(0, 100), default=None, help="Percent; exit 1 below."
)
@click.option(
    "--max-must-not",
    type=click.IntRange(0),
    default=None,
    help="must_not items hit in all; exit 1 above.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write each restoration here as RECORDING.json (what restore --format json prints).",
)
@click.option("--probes", is_flag=True, help="Also ask probe questions of a judge model.")
@click.option("--judge", default=None, help="The judge for --probes, provider:model.")
@output_option()
@friendly_errors
def eval_command(
    facts_files: tuple[Path, ...],
    recordings: tuple[str, ...],
    model: str | None,
    base_url: str | None,
    config_path: Path | None,
    fmt: str,
    scoring: Scoring,
    min_kept: float | None,
    min_cited: float | None,
    max_must_not: int | None,
    keep: Path | None,
    probes: bool,
    judge: str | None,
    output: Path | None,
) -> None:
    """Restore the recordings of each FACTS_FILE and score each summary against its facts.

    A FACTS_FILE may be a folder: its facts*.json files (the real devset's layout). Per
    fact: kept (one of its strings is in the summary text) and cited correctly (that
    sentence cites one of the fact's messages); the must_not claims the summary makes (facts
    files that have them). Also contradictions, the summary's size in tokens without the
    references appendix, and the share of citations that resolve.

    With a model, each recording also shows its failed turns, where the offline rules
    stood in for a failed call (the synthesis, a branch summary), and the fields the model
    answered with text that states nothing ("M19", "N/A", blank), where the rules' value
    stands in (answered, so no failure); stderr says why calls failed (one line per
    distinct reason, with its count), how many HTTP requests were sent (retries included)
    and the tokens the server spent. Exit 1 when the model contributed nothing to a
    recording (every one of its turns failed, or its synthesis fell back to the offline
    summary): that score is the offline rules', not the model's. Exit 1 also under
    --min-kept or --min-cited, or over --max-must-not.
    """
    if probes and judge is None:
        raise UsageError("--probes needs --judge provider:model")
    paths = facts_paths(facts_files)
    files = load_all(paths)
    known = [n for f in files for n in f.recordings]
    unknown = [n for n in recordings if n not in known]
    if unknown:
        where = paths[0] if len(paths) == 1 else "the facts files"
        raise UsageError(f"{where}: no recording {unknown[0]!r} (it has: {', '.join(known)})")
    scores: list[RecordingScore] = []
    probe_results: dict[str, list[ProbeResult]] = {}
    for facts in files:
        names = [n for n in facts.recordings if not recordings or n in recordings]
        if not names:
            continue
        got, got_probes = evaluate(
            facts,
            names,
            model=model,
            base_url=base_url,
            config_path=config_path,
            judge=judge if probes else None,
            scoring=scoring,
            keep=keep,
        )
        scores += got
        probe_results |= got_probes
    text = _as_json(scores, probe_results) if fmt == "json" else table(scores, probe_results)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for line in model_report(scores):
        click.echo(line, err=True)
    empty = [(s.recording, s.model.nothing) for s in scores if s.model and s.model.nothing]
    for recording, why in empty:
        click.echo(
            f"eval: {recording}: the model contributed nothing ({'; '.join(why)}): "
            "its score is the offline rules'",
            err=True,
        )
    total = sum(len(s.facts) for s in scores) or 1
    kept = 100 * sum(f.kept for s in scores for f in s.facts) / total
    cited = 100 * sum(f.cited for s in scores for f in s.facts) / total
    hits = sum(len(s.must_not_hit_ids) for s in scores)
    if (
        empty
        or (min_kept is not None and kept < min_kept)
        or (min_cited is not None and cited < min_cited)
        or (max_must_not is not None and hits > max_must_not)
    ):
        sys.exit(1)
