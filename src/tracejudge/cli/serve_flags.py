"""``tracejudge serve``'s flags, generated from the settings they set (``collector.config``).

Each flag is a declared setting's: its name is the flat key with dashes (``--decision-wait``),
its type follows the setting's kind (a path, an integer, ``--x/--no-x`` for a boolean,
repeatable for a list), its help is the setting's meaning with its nested key and default.
``COMMON`` lists the settings that have a flag; every other setting is reachable with
``--set SECTION.KEY=VALUE`` or its ``TRACEJUDGE_*`` variable. A flag not passed is ``None``
(or an empty tuple), so it leaves the file's value in place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from tracejudge.collector.config import TABLE
from tracejudge.collector.config_kinds import Kind, Setting, format_value

F = TypeVar("F", bound=Callable[..., Any])

COMMON = (
    "rules",
    "baselines",
    "cases",
    "strict",
    "forward",
    "forward_logs",
    "evaluation_logs",
    "grader_traces",
    "output",
    "host",
    "grpc_port",
    "http_port",
    "management_port",
    "management_host",
    "auth_token_file",
    "auth_token_env",
    "insecure_no_auth",
    "tls_cert",
    "tls_key",
    "tls_client_ca",
    "forward_headers",
    "forward_ca_file",
    "forward_client_cert",
    "forward_client_key",
    "forward_insecure_skip_verify",
    "decision_wait_after_root",
    "decision_wait",
    "conversation_wait",
    "conversation_max_hold",
    "shadow_wait",
    "drop_content",
    "passthrough",
    "redact_attributes",
    "redact_patterns",
    "verdicts_jsonl",
    "verdict_lines",
    "webhook",
    "queue_dir",
    "dead_letter",
    "max_traces",
    "max_buffered_bytes",
    "max_spans_per_trace",
    "max_traces_per_request",
    "max_request_bytes",
    "max_queue_bytes",
    "max_disk_queue_bytes",
    "file_mode",
    "max_rule_cost",
    "max_judge_time",
    "max_judge_lag",
    "shutdown_timeout",
    "http_header_timeout",
    "http_body_timeout",
    "http_idle_timeout",
    "http_max_connections_per_client",
    "grpc_max_connection_age",
    "metrics_otlp_endpoint",
)
"""The settings with a flag of their own, in ``--help``'s order."""

_NAMES = {"forward_headers": "forward-header", "redact_patterns": "redact-pattern"}
"""Repeatable flags named for one item."""
_OFF = {"drop_content": "keep-content"}
"""A boolean whose off flag is not ``--no-...``."""
_METAVARS = {
    Kind.DURATION: "DURATION",
    Kind.SIZE: "SIZE",
    Kind.HEADERS: "NAME=VALUE",
    Kind.TARGETS: "[NAME=]URL",
    Kind.MODE: "MODE",
    Kind.URL: "URL",
    Kind.REGEXES: "REGEX",
    Kind.PATH_OR_STDOUT: "PATH|-",
}
_REPEATED = frozenset({Kind.TARGETS, Kind.HEADERS, Kind.REGEXES})


def _option(s: Setting) -> Callable[[F], F]:
    flag = "--" + _NAMES.get(s.name, s.name.replace("_", "-"))
    default = "none" if s.default in (None, [], {}) else format_value(s.kind, s.default)
    help = f"{s.help} [{s.path}; default {default}]"
    if s.kind is Kind.BOOL:
        off = "--" + _OFF.get(s.name, "no-" + s.name.replace("_", "-"))
        return click.option(f"{flag}/{off}", s.name, default=None, help=help)
    if s.kind in _REPEATED:
        help = f"{help} Repeatable."
        return click.option(flag, s.name, multiple=True, metavar=_METAVARS[s.kind], help=help)
    if s.kind is Kind.PATH:
        return click.option(flag, s.name, type=click.Path(path_type=Path), help=help)
    if s.kind is Kind.INT:
        return click.option(flag, s.name, type=int, help=help)
    return click.option(flag, s.name, metavar=_METAVARS.get(s.kind, "TEXT"), help=help)


def setting_flags(names: tuple[str, ...] = COMMON) -> Callable[[F], F]:
    """Decorate a click command with a flag per setting in ``names``, in that order."""

    def decorate(command: F) -> F:
        for name in reversed(names):
            command = _option(TABLE.by_name[name])(command)
        return command

    return decorate
