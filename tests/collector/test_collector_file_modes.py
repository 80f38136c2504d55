"""Files the collector creates are its own (issue 18, item 9).

The disk queue holds raw span content until it is judged, ``--output`` and the dead-letter
file hold judged spans, verdict lines quote explanations: all were created 0644 under the
usual umask 022, readable by every user of the machine. Now each is created with
``file_mode`` (0600 by default); the umask still takes bits away, and an operator who wants
a group to read them asks with ``file_mode: 0640``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.collector.collector_support import Sink, make_request, make_span, new_ids, post, wait_for
from tracejudge.collector import Collector
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.storage.store import DiskStore


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process umask for the test (restored after)."""
    old = os.umask(0o022)

    def set_to(mask: int) -> None:
        os.umask(mask)

    yield set_to
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _every_file(
    collector_factory: Callable[..., Collector], sink: Sink, where: Path, file_mode: int = 0o600
) -> dict[str, int]:
    """Run a collector that creates each kind of file under ``where`` (the backend refuses
    the first batch for the dead-letter file; one queue row cannot be replayed, for the
    quarantine) and return each path's mode, read while it runs."""
    qdir = where / "q"
    store = DiskStore(qdir, file_mode=file_mode)  # the queue's own code creates it
    tid, _ = new_ids()
    store.add_inbox([(tid, b"\x0a\xff\xff\xff")])  # a truncated fragment: quarantined
    store.close()
    sink.fail_http = [400]
    out, dead, verdicts = where / "out.jsonl", where / "dead.jsonl", where / "verdicts.jsonl"
    c = collector_factory(
        queue_dir=qdir,
        output=out,
        dead_letter=dead,
        verdicts_jsonl=str(verdicts),
        decision_wait_after_root=0.05,
        file_mode=file_mode,
    )
    tid, rid = new_ids()
    assert post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())[0] == 200
    wait_for(
        lambda: all(p.exists() and p.stat().st_size for p in (out, dead, verdicts)),
        what="output, dead-letter and verdict lines written",
    )
    paths = [qdir, *qdir.iterdir(), *(qdir / "quarantine").iterdir(), out, dead, verdicts]
    return {str(p.relative_to(where)): _mode(p) for p in paths}


def test_every_file_the_collector_creates_is_private_whatever_the_umask(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    umask: Callable[[int], None],
) -> None:
    """Under umask 022 (which used to give 0644): the queue database, its -wal and -shm,
    the reserve, quarantined rows, ``--output``, the dead-letter file and the verdict
    lines are 0600, the directories the collector made 0700."""
    modes = _every_file(collector_factory, sink, tmp_path)
    expected = {name: 0o600 for name in modes}
    expected.update({"q": 0o700, "q/quarantine": 0o700})
    assert {"q/queue.sqlite3-wal", "q/queue.sqlite3-shm", "q/queue.reserve"} <= set(modes)
    assert any(name.startswith("q/quarantine/inbox-") for name in modes)
    assert {n: oct(m) for n, m in modes.items()} == {n: oct(m) for n, m in expected.items()}


def test_an_operator_widens_the_mode_by_asking_and_the_umask_still_applies(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    umask: Callable[[int], None],
) -> None:
    """``file_mode: 0640`` under umask 022 gives the group read (directories 0750); under
    umask 077 the umask wins (0600)."""
    wide = tmp_path / "wide"
    wide.mkdir()
    modes = _every_file(collector_factory, sink, wide, file_mode=0o640)
    assert {m for n, m in modes.items() if n not in ("q", "q/quarantine")} == {0o640}
    assert (modes["q"], modes["q/quarantine"]) == (0o750, 0o750)
    umask(0o077)
    strict = tmp_path / "strict"
    strict.mkdir()
    modes = _every_file(collector_factory, sink, strict, file_mode=0o640)
    assert {m for n, m in modes.items() if n not in ("q", "q/quarantine")} == {0o600}


@pytest.mark.parametrize(
    ("value", "mode"), [("0640", 0o640), ("600", 0o600), (0o640, 0o640), ("0o600", 0o600)]
)
def test_file_mode_is_read_as_octal(value: object, mode: int) -> None:
    """From a flag or quoted YAML (``"0640"``), or the number YAML reads from ``0640``."""
    assert build_config({}, {"file_mode": value}).file_mode == mode


@pytest.mark.parametrize("value", ["0644x", "0460", "0700", 640, "rw-------"])
def test_a_file_mode_the_collector_cannot_use_or_that_executes_is_refused(value: object) -> None:
    """The owner must read and write, nobody execute; the message names the key."""
    with pytest.raises(ConfigError, match="file_mode"):
        build_config({}, {"file_mode": value})
