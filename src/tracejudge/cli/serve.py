"""``tracejudge serve``: run the judging OTLP collector.

Settings come from, lowest precedence first: their defaults, the YAML config file
(``--config``), ``TRACEJUDGE_<SECTION>_<KEY>`` environment variables, ``--set
SECTION.KEY=VALUE`` and the explicit flags (``config_sources``). Every value is checked
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
from tracejudge.collector.collector import Collector
from tracejudge.collector.config import TABLE, ConfigError, config_from, load_config_file
from tracejudge.collector.config_sources import given, read_sources
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
@click.option("--rules", type=click.Path(path_type=Path), help="Rules file to judge runs with.")
@click.option(
    "--baselines",
    type=click.Path(path_type=Path),
    help="Baselines directory (as for `tracejudge eval`), for baseline rules.",
)
@click.option(
    "--cases",
    type=click.Path(path_type=Path),
    help="Cases file (as for `tracejudge eval`): judge runs against their case.",
)
@click.option(
    "--strict",
    is_flag=True,
    default=None,
    help="Undecided findings (a confirmation or claim a heuristic could not read) take "
    "their rule's severity, as for `tracejudge eval --strict`.",
)
@click.option(
    "--forward",
    multiple=True,
    help="Backend: [NAME=]http://host:port (OTLP/HTTP) or [NAME=]grpc://host:port (OTLP/gRPC). "
    "Repeatable; optional. Disk-queue rows follow the NAME (default: the protocol).",
)
@click.option(
    "--forward-logs",
    help="Logs backend for the OTLP log records serve receives (sent after their trace is "
    "judged): http://host:port (OTLP/HTTP) or grpc://host:port (OTLP/gRPC).",
)
@click.option(
    "--evaluation-logs/--no-evaluation-logs",
    default=None,
    help="Also send each rule outcome to --forward-logs as a gen_ai.evaluation.result log record.",
)
@click.option(
    "--grader-traces/--no-grader-traces",
    default=None,
    help="Send each grader model call's chat span (service tracejudge) to the --forward "
    "backends (default: off).",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the judged traces to this file as OTLP/JSON lines (tracejudge eval reads it).",
)
@click.option("--host", help="Listen address (default 127.0.0.1; 0.0.0.0 to expose).")
@click.option("--grpc-port", type=int, help="OTLP/gRPC port (default 4317; 0 = any free).")
@click.option("--http-port", type=int, help="OTLP/HTTP port (default 4318; 0 = any free).")
@click.option(
    "--management-port",
    type=int,
    help="Separate listener for /healthz, /metrics and /v1/gate (the OTLP/HTTP port then "
    "serves /v1/traces only).",
)
@click.option("--management-host", help="The management listener's address (default: --host).")
@click.option("--health-port", type=int, hidden=True, help="Former name of --management-port.")
@click.option(
    "--auth-token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Bearer tokens (one per line) every request must send as 'authorization: Bearer "
    "TOKEN' (/healthz aside).",
)
@click.option("--auth-token-env", metavar="NAME", help="Env variable holding a bearer token.")
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    default=None,
    help="Allow a non-loopback --host without tokens or client certificates.",
)
@click.option("--tls-cert", type=click.Path(path_type=Path), help="PEM certificate: TLS on.")
@click.option("--tls-key", type=click.Path(path_type=Path), help="PEM key for --tls-cert.")
@click.option(
    "--tls-client-ca",
    type=click.Path(path_type=Path),
    help="Require client certificates signed by this CA (mutual TLS).",
)
@click.option(
    "--forward-header",
    "forward_headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="Header for every backend; VALUE as env:VAR or file:PATH keeps it out of argv. "
    "Repeatable.",
)
@click.option(
    "--forward-ca-file",
    type=click.Path(path_type=Path),
    help="CA bundle to verify https:// and grpcs:// backends (default: system store).",
)
@click.option("--forward-client-cert", type=click.Path(path_type=Path), help="mTLS to backends.")
@click.option("--forward-client-key", type=click.Path(path_type=Path), help="Its key.")
@click.option(
    "--forward-insecure-skip-verify",
    is_flag=True,
    default=None,
    help="Do not verify https:// backends' certificates (testing only).",
)
@click.option("--decision-wait-after-root", help="Quiet time after the root span (default 2s).")
@click.option("--decision-wait", help="Longest wait after a trace's first span (default 30s).")
@click.option(
    "--conversation-wait",
    help="Judge traces sharing gen_ai.conversation.id as one run once the conversation is "
    "quiet this long (e.g. 30s; default 0: off, each trace alone).",
)
@click.option(
    "--conversation-max-hold", help="Longest a conversation is held before judging (10m)."
)
@click.option(
    "--shadow-wait",
    help="How long a shadow run waits for the stable run of its request before it is "
    "reported unpaired (default 5m).",
)
@click.option("--drop-content/--keep-content", default=None, help="Strip content after judging.")
@click.option(
    "--passthrough/--no-passthrough", default=None, help="Forward at once + verdict span."
)
@click.option(
    "--redact-attributes/--no-redact-attributes",
    default=None,
    help="Also redact secrets in forwarded span attributes.",
)
@click.option(
    "--redact-pattern",
    "redact_patterns",
    multiple=True,
    help="Extra regex to redact (repeatable), besides the built-in secret detectors.",
)
@click.option(
    "--verdicts-jsonl",
    help="Write verdicts as JSON lines to PATH, or - for stdout (the default when there is "
    "no --forward and no --output).",
)
@click.option(
    "--verdict-lines/--no-verdict-lines",
    default=None,
    help="One human line per judged run on stdout (default: on, unless the verdicts go "
    "to stdout as JSON lines).",
)
@click.option("--webhook", help="POST each verdict as JSON to this URL.")
@click.option("--queue-dir", type=click.Path(path_type=Path), help="Disk queue (SQLite WAL).")
@click.option(
    "--dead-letter",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append batches a backend refused for good here (OTLP/JSON lines); default: drop "
    "and count them.",
)
@click.option("--max-traces", type=int, help="Most traces buffered at once.")
@click.option("--max-buffered-bytes", help="Most span bytes buffered (e.g. 512MiB).")
@click.option(
    "--max-spans-per-trace",
    type=int,
    help="Judge a trace early at this many spans; one request may bring no more of a trace.",
)
@click.option(
    "--max-traces-per-request",
    type=int,
    help="Traces one request may bring (default 10000); the rest are refused.",
)
@click.option("--max-request-bytes", help="Largest request after decompression (default 4MiB).")
@click.option("--max-queue-bytes", help="Forward queue size per backend before back-pressure.")
@click.option(
    "--max-disk-queue-bytes",
    help="Cap on the --queue-dir database file (e.g. 1GiB; default: half the volume's free space).",
)
@click.option(
    "--file-mode",
    help="Mode of the files serve creates (default 0600; e.g. 0640 lets the group read them).",
)
@click.option(
    "--max-rule-cost", help="Refuse rules costing more per run at start (default 100ms; 0: off)."
)
@click.option(
    "--max-judge-time",
    help="CPU time judging one trace may take; past it the run's verdict is error and its "
    "spans are forwarded (default 10s; 0: off).",
)
@click.option("--max-judge-lag", help="Push back when judging is this far behind (default 5s).")
@click.option("--shutdown-timeout", help="How long SIGTERM may spend flushing (default 10s).")
@click.option("--http-header-timeout", help="Time to send a request head (default 10s).")
@click.option("--http-body-timeout", help="Time to send a request body (default 30s).")
@click.option("--http-idle-timeout", help="Idle keep-alive connection lifetime (default 60s).")
@click.option(
    "--http-max-connections-per-client", type=int, help="Connections per client (default 256)."
)
@click.option("--grpc-max-connection-age", help="GOAWAY gRPC connections this old (default never).")
@click.option("--metrics-otlp-endpoint", help="Export collector metrics over OTLP/HTTP here.")
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def serve(config_file: Path | None, sets: tuple[str, ...], verbose: bool, **flags: Any) -> None:
    """Receive OTLP, judge each finished agent run, stamp verdicts, forward to backends."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        file_values = load_config_file(config_file) if config_file else {}
        flags["forward"] = list(flags["forward"]) or None
        flags["redact_patterns"] = list(flags["redact_patterns"]) or None
        flags["forward_headers"] = list(flags["forward_headers"]) or None
        for item in flags["forward_headers"] or ():
            name, _, value = item.partition("=")
            if value and not is_reference(value):
                click.echo(
                    f"warning: --forward-header {name}: the value is visible to every user "
                    "in `ps`; pass env:VAR or file:PATH instead for a secret",
                    err=True,
                )
        items = read_sources(TABLE, file_values, flags, os.environ, sets)
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


def _announce(line: str) -> None:
    """The start-up line, on stderr (stdout may carry the verdict lines), at every level."""
    click.echo(line, err=True)
