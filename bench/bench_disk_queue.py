"""Micro-benchmark of the disk queue's hot path: one accept -> decide -> deliver cycle.

Why: every accepted request with ``--queue-dir`` is written to the inbox before its 200,
moved to the outbox at its decision and deleted once delivered. Recovering from a full
volume (issue 18) added checks to that path (the reserve, the WAL's size); this says what
they cost. Each cycle: ``accept`` one 4 KiB fragment, ``commit_decisions`` it as one 4 KiB
payload with its decision, ``delete_outbox`` the payload, on the volume of ``--dir``.

Run: ``.venv/bin/python bench/bench_disk_queue.py [--cycles N] [--dir DIR]``; to compare
with another checkout, ``PYTHONPATH=<checkout>/src`` runs its store with the same script.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import tracejudge.collector.storage.store as store_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None, help="where the queue goes (a tmp dir)")
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(dir=args.dir)) / "q"
    opener = getattr(store_module, "open_for_serve", None)
    store = opener(where, None, 0o600)[0] if opener else store_module.DiskStore(where)
    data = os.urandom(4096)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.cycles):
        tid = os.urandom(16)
        store.accept([(tid, data)], [])
        ids = store.commit_decisions([tid], [("main", data, 4, 1)], [(tid, "pass", "{}")])
        store.delete_outbox(ids)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    wal = Path(f"{store.path}-wal")
    print(
        f"{args.cycles} cycles: {wall / args.cycles * 1e6:.0f} us wall, "
        f"{cpu / args.cycles * 1e6:.0f} us CPU per cycle; WAL {wal.stat().st_size} bytes"
    )
    store.close()


if __name__ == "__main__":
    main()
