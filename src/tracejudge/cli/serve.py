"""``tracejudge serve``: run the judging OTLP collector.

Settings come from, lowest precedence first: their defaults, the YAML config file
(``--config``), ``TRACEJUDGE_<SECTION>_<KEY>`` environment variables, ``--set
SECTION.KEY=VALUE`` and the explicit flags (``config_sources``); the flags are generated
from the settings they set (``serve_flags``). Every value is checked
before anything starts, so a typo fails at launch with the key's name rather than later
with a lost trace.

A backend is optional: ``--output FILE`` keeps the judged traces as OTLP/JSON lines, and
with neither ``--forward`` nor ``--output`` nor ``--verdicts-jsonl`` the verdicts are
printed as JSON lines on stdout, so ``tracejudge serve --rules rules.yaml`` alone is a
working first try; otherwise each judged run gets one human line on stdout
(``--no-verdict-lines``: none). One line on stderr says where it listens and where things
go, verdicts included. Spans accepted and then lost (a backend down at shutdown, with no
``--queue-dir``) make the exit status 1.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import click

from tracejudge.cli.errors import InputError
from tracejudge.cli.serve_flags import setting_flags
from tracejudge.collector.collector import Collector
from tracejudge.collector.config import TABLE, ConfigError, config_from, load_config_file
from tracejudge.collector.config_kinds import Kind
from tracejudge.collector.config_sources import Item, Written, given, read_sources
from tracejudge.collector.security.credentials import is_reference

_NO_RULES = "judge.rules: a rules file is required (--rules, or judge.rules in --config)"


@click.command("serve")
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="YAML config file.")
@click.option(
    "sets",
    "--set",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Any setting (docs/configuration.md), VALUE as YAML (8, 2s, [a, b]); repeatable. "
    "Over the file and TRACEJUDGE_* variables, under the flags.",
)
@setting_flags()
@click.option("--health-port", type=int, hidden=True, help="Former name of --management-port.")
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def serve(config_file: Path | None, sets: tuple[str, ...], verbose: bool, **flags: Any) -> None:
    """Receive OTLP, judge each finished agent run, stamp verdicts, forward to backends."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        file_values = load_config_file(config_file) if config_file else {}
        flags = {k: (list(v) or None) if isinstance(v, tuple) else v for k, v in flags.items()}
        for item in flags["forward_headers"] or ():
            name, _, value = item.partition("=")
            if value and not is_reference(value):
                click.echo(
                    f"warning: --forward-header {name}: the value is visible to every user "
                    "in `ps`; pass env:VAR or file:PATH instead for a secret",
                    err=True,
                )
        items = read_sources(TABLE, file_values, flags, os.environ, sets)
        for label, name in _literal_headers(items):
            click.echo(
                f"warning: {label} {name}: the value is visible to every user in `ps`; "
                "pass env:VAR or file:PATH instead for a secret",
                err=True,
            )
        told = given(items)
        try:
            config = config_from(items)
        except ConfigError as exc:  # every problem at once, the missing rules file included
            missing = [] if "rules" in told else [_NO_RULES]
            raise ConfigError(*exc.problems, *missing) from exc
        if config.rules is None:
            raise ConfigError(_NO_RULES)
        if not config.forward and config.output is None and config.verdicts_jsonl is None:
            config.verdicts_jsonl = "-"  # no backend: the verdicts are the output
        if "verdict_lines" not in told:  # a human line per run, unless stdout has the JSON
            config.verdict_lines = config.verdicts_jsonl != "-"
        config.validate()
        collector = Collector(config)
    except (ConfigError, ValueError, OSError) as exc:
        raise InputError(str(exc)) from exc
    try:
        asyncio.run(collector.serve_forever(announce=_announce))
    except ConfigError as exc:  # a file it cannot write
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot start: {exc}") from exc
    lost = collector.stats.spans.get("dropped", 0)
    if lost:
        keep = (
            "--dead-letter FILE keeps batches a backend refuses"
            if config.queue_dir is not None
            else "--queue-dir DIR keeps undelivered spans on disk until the backend is back"
        )
        raise click.ClickException(f"{lost} accepted spans were lost; {keep}")


def _literal_headers(items: list[Item]) -> list[tuple[str, str]]:
    """``(label, header)`` for each literal header value given by ``--set`` (argv): as
    ``--forward-header``'s, it is visible in ``ps``."""
    out: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, Written) or not item.label.startswith("--set "):
            continue
        if TABLE.by_name[item.name].kind is Kind.HEADERS and isinstance(item.value, dict):
            literal = [
                k for k, v in item.value.items() if isinstance(v, str) and not is_reference(v)
            ]
            out += [(item.label, str(k)) for k in literal]
    return out


def _announce(line: str) -> None:
    """The start-up line, on stderr (stdout may carry the verdict lines), at every level."""
    click.echo(line, err=True)
