"""``tracejudge queue``: look into a ``serve --queue-dir`` disk queue, drain or drop the
payloads of targets serve no longer has (see ``tracejudge.collector.storage.drain``).

Exit status: 0 done, 1 the operation failed (the message says what is left queued),
2 bad usage (no queue there, an unknown or still-configured target, a bad URL).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from tracejudge.cli.errors import InputError
from tracejudge.collector.config import ConfigError, check_forward_url
from tracejudge.collector.storage.drain import (
    Moved,
    QueueCommandError,
    QueueUsageError,
    drain,
    drop,
    list_targets,
    open_queue,
)
from tracejudge.collector.storage.store import DiskStore

_QUEUE_DIR = click.option(
    "--queue-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The directory serve's --queue-dir names.",
)
_TARGETS = click.option(
    "--target",
    "targets",
    multiple=True,
    help="A removed target's name (repeatable); default: every removed target.",
)


@click.group("queue")
def queue_group() -> None:
    """Inspect a serve disk queue; drain or drop the rows of removed targets."""


def _open(queue_dir: Path) -> DiskStore:
    try:
        return open_queue(queue_dir)
    except QueueUsageError as exc:
        raise InputError(str(exc)) from exc


@queue_group.command("list")
@_QUEUE_DIR
def list_command(queue_dir: Path) -> None:
    """Targets with payloads queued (configured at serve's last start, or removed)."""
    store = _open(queue_dir)
    try:
        entries = list_targets(store)
    finally:
        store.close()
    if not entries:
        click.echo("nothing queued, no target recorded")
        return
    click.echo(f"{'TARGET':<20} {'STATUS':<10} {'PAYLOADS':>9} {'SPANS':>9}  URL")
    for e in entries:
        status = "configured" if e.configured else "removed"
        click.echo(f"{e.key:<20} {status:<10} {e.payloads:>9} {e.spans:>9}  {e.url or '-'}")


@queue_group.command("drain")
@_QUEUE_DIR
@_TARGETS
@click.option("--to", "url", required=True, help="Backend: http://host:port or grpc://host:port.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Per export call.")
@click.option(
    "--tries",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Tries per batch while the backend is unavailable (with backoff).",
)
def drain_command(
    queue_dir: Path, targets: tuple[str, ...], url: str, timeout: float, tries: int
) -> None:
    """Send removed targets' payloads to a backend; each batch leaves the queue once the
    backend acknowledged it."""
    try:
        check_forward_url(url)
    except ConfigError as exc:
        raise click.BadParameter(str(exc).removeprefix("forward: "), param_hint="--to") from None
    store = _open(queue_dir)
    try:
        moved = asyncio.run(drain(store, targets, url, timeout=timeout, attempts=tries))
    except QueueUsageError as exc:
        raise InputError(str(exc)) from exc
    except QueueCommandError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
    _report("delivered to " + url, moved)


@queue_group.command("drop")
@_QUEUE_DIR
@_TARGETS
def drop_command(queue_dir: Path, targets: tuple[str, ...]) -> None:
    """Discard removed targets' payloads (they are lost: drain them first if you can)."""
    store = _open(queue_dir)
    try:
        moved = drop(store, targets)
    except QueueUsageError as exc:
        raise InputError(str(exc)) from exc
    except QueueCommandError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
    _report("dropped", moved)


def _report(what: str, moved: list[Moved]) -> None:
    if not moved:
        click.echo("no removed target has payloads queued")
    for m in moved:
        click.echo(f"{m.key}: {m.payloads} payloads ({m.spans} spans) {what}")
