"""The tree commands: ``migrate``, ``export-branch``, ``report`` and ``tree``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..atomic import write_output
from ..command_sink import command_sink
from ..errors import UsageError
from ..sources import get_reader, open_session, resolve
from ..sources.base import TreeReader
from .exits import friendly_errors
from .options import agent_option, output_option, refuse_input_as_output
from .targets import input_options

leaf_option = click.option(
    "--leaf", default=None, help="Follow the branch ending at this entry (or message) id."
)
label_option = click.option(
    "--label", default=None, help="Follow the branch through the entry with this label."
)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_option()
@click.option("--in-place", is_flag=True, help="Rewrite FILE itself (a backup is kept).")
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="No warnings on stderr.")
@friendly_errors
def migrate(file: Path, output: Path | None, in_place: bool, force: bool, quiet: bool) -> None:
    """Migrate a pi session FILE (v1/v2) to the current format version.

    Writes FILE's migrated copy (default <stem>.v3.jsonl beside it); with --in-place,
    rewrites FILE after copying it to FILE.bak. A current file is left alone.
    """
    refuse_input_as_output(output, file)
    pi = get_reader("pi")
    assert isinstance(pi, TreeReader)
    result = pi.migrate_file(file, output, in_place=in_place, force=force, sink=command_sink(quiet))
    if result.written is None:
        click.echo(f"{file}: already version {result.from_version}; nothing written")
        return
    note = f"{file}: v{result.from_version} -> v{result.to_version}, {result.entries} entries"
    note += f", written to {result.written}"
    if result.backup is not None:
        note += f" (backup {result.backup})"
    click.echo(note)


@click.command("export-branch")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--leaf", required=True, help="The entry id the branch ends at.")
@output_option("New file.", required=True)
@agent_option
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@friendly_errors
def export_branch(file: Path, leaf: str, output: Path, agent: str | None, force: bool) -> None:
    """Write the path from the root to entry --leaf of FILE as a new session file."""
    from ..tree.export import export_branch as run

    refuse_input_as_output(output, file)
    reader = resolve([file], agent)
    written = run(file, reader.name, leaf, output, force=force)
    click.echo(f"{output}: {written} entries on the path to {leaf}")


@click.command()
@input_options
@leaf_option
@label_option
@output_option()
@click.option("--no-redact", is_flag=True, help="Keep secrets in the page (redacted by default).")
@click.option("-q", "--quiet", is_flag=True, help="No warnings on stderr.")
@friendly_errors
def report(
    paths: tuple[Path, ...],
    agent: str | None,
    session_id: str | None,
    leaf: str | None,
    label: str | None,
    output: Path | None,
    no_redact: bool,
    quiet: bool,
) -> None:
    """Write a session (its files, its id, or --latest) as a self-contained HTML page.

    The raw session, with its tree, branches and compactions, and no summary
    (`restore --format html` adds the SESSION SUMMARY).
    """
    from ..report.html import session_html
    from ..tree import select_branch, tree_of

    session = open_session(list(paths), command_sink(quiet), agent, session_id)
    tree = tree_of(session)
    session = select_branch(session, leaf, label, tree=tree)
    page = session_html(session, tree=tree, redact=not no_redact)
    if output is None:
        sys.stdout.write(page)
        return
    write_output(output, page, session.files)
    if not quiet:
        click.echo(
            f"{output}: {len(tree)} entries, {len(tree.branch_points())} branch points", err=True
        )


@click.command()
@input_options
@friendly_errors
def tree(paths: tuple[Path, ...], agent: str | None, session_id: str | None) -> None:
    """Print a session's tree: entries by depth, labels, branch points, the leaf.

    The session is its files (oldest first), its id (or a unique prefix), or --latest.
    """
    from ..tree import tree_of

    session = open_session(list(paths), command_sink(), agent, session_id)
    t = tree_of(session)
    if not len(t):
        raise UsageError("the session has no entries")
    indent: dict[str, int] = {}
    for node, _depth in t.iter_dfs():
        parent = t.nodes.get(node.parent_id or "")
        if parent is not None and node not in parent.children:
            parent = None  # a root made to break a parent loop
        # Indent at forks only: a linear session stays flush left however long it is.
        indent[node.id] = 0 if parent is None else indent[parent.id] + (len(parent.children) > 1)
        text = next((m.text for m in node.messages if m.text.strip()), "")
        preview = " ".join(text.split())[:70]
        marks = [f"[{node.label}]"] if node.label else []
        if node.id == t.leaf_id:
            marks.append("<- leaf")
        if len(node.children) > 1:
            marks.append(f"({len(node.children)} branches)")
        line = f"{'  ' * indent[node.id]}{node.id} {node.kind} {preview} {' '.join(marks)}"
        click.echo(line.rstrip())
