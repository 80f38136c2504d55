"""No test bounds wall-clock time or sleeps in place of an event (issue 20, issue 24).

On a shared machine (a load average of 20 or more on two cores) every fixed number of
seconds in a test is a coin toss: ``make test`` failed twice in a row on a different
timing assertion each time. So the test sources are scanned for the three ways such a
bound comes back:

- reading a clock (``time.monotonic()``, ``time.perf_counter()``, ``time.time()``, the
  loop's ``loop.time()``): to assert a duration, a test drives the code's ``Clock`` by
  hand (``ManualClock``) or compares against the same run's own measurement;
- sleeping (``time.sleep``, ``asyncio.sleep`` other than ``sleep(0)``): a test waits on the
  event itself (``tests/support/guards.py``: ``wait_for``, ``eventually``, ``until``);
- a literal timeout under a minute (``timeout=5``, ``timeout: float = 10.0``,
  ``.wait(5)``, ``.join(5)``): timeouts are deadlock guards, named in guards.py.

Each exception is listed below with its reason, matched by file and line text (not line
number, so edits elsewhere do not break it); an entry that no longer matches anything fails
too, so the list cannot rot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CLOCK = re.compile(
    r"\btime\.(monotonic|perf_counter|time|process_time)\(\)|\bloop\.time\(\)"
    r"|from time import|import time as"
)
SLEEP = re.compile(r"\b(time|asyncio)\.sleep\((?!0\))|threading\.Timer\(")
TIMEOUT = re.compile(
    r"(?<![\w.])timeout\s*(?:=|:\s*float\s*=)\s*(\d+(?:\.\d+)?)\b"
    r"|\.(?:wait|join|result)\((\d+(?:\.\d+)?)\)"
)
GUARD_FLOOR = 60.0
"""A literal timeout at or above this is a deadlock guard by its size."""


@dataclass(frozen=True)
class Allowed:
    """An exception: lines of ``path`` (relative to tests/) containing ``text``."""

    path: str
    text: str
    reason: str


ALLOWED = (
    Allowed(
        "collector/test_collector_fairness.py",
        "time.process_time()",
        "CPU time of judging a small and a large trace in the same run: their ratio (linear "
        "growth), never a bound in seconds",
    ),
    # --- the poll loops themselves: the one place a test reads the clock to stop waiting
    Allowed("support/guards.py", "time.monotonic()", "the guards' own deadline"),
    Allowed("support/guards.py", "time.sleep(POLL_S)", "the poll interval of eventually"),
    Allowed("support/guards.py", "asyncio.sleep(POLL_S)", "the poll interval of until"),
    Allowed(
        "e2e/backends.py",
        "time.monotonic()",
        "wait_until and Jaeger's _poll: polls that also watch the backend process (guard "
        "bounds: callers pass WAIT_S)",
    ),
    Allowed("e2e/backends.py", "time.sleep(interval)", "wait_until's poll interval"),
    Allowed("e2e/backends.py", "time.sleep(0.1)", "Jaeger's _poll interval"),
    Allowed(
        "e2e/backends.py",
        "time.sleep(1.0)",
        "a backend with no port to probe: a moment to see it did not exit on its config "
        "(a later exit still fails the test that uses it)",
    ),
    Allowed("e2e/prometheus.py", "time.monotonic()", "Prometheus' wait_for poll (WAIT_S)"),
    Allowed("e2e/prometheus.py", "time.sleep(0.25)", "Prometheus' wait_for poll interval"),
    Allowed(
        "e2e/backends.py",
        "http_get(url, timeout=2.0)",
        "a readiness probe inside wait_until: a slow answer is retried, not failed",
    ),
    Allowed(
        "e2e/backends.py",
        "create_connection((LOOPBACK, port), timeout=1.0)",
        "a readiness probe inside wait_until: a slow connect is retried, not failed",
    ),
    # --- measurements compared within the same run, never with a fixed number
    Allowed(
        "support/overhead.py",
        "time.perf_counter()",
        "per-call overhead, compared with the same run's bare call",
    ),
    Allowed(
        "engine/test_rules_loading.py",
        "time.perf_counter()",
        "RE2 on a catastrophic pattern against the same run's harmless one (best of three)",
    ),
    Allowed(
        "instrumentation/test_replay_server.py",
        "time.perf_counter()",
        "reused against fresh connections of the same run (medians, 3x margin)",
    ),
    Allowed(
        "collector/collector_support.py",
        "time.monotonic()",
        "the sink records when each request came (the retry tests' lower bounds: a busy "
        "machine only makes them later)",
    ),
    # --- time that must pass, as the thing under test (lower bounds; load only adds)
    Allowed(
        "collector/collector_support.py",
        "asyncio.sleep(self.delay)",
        "a slow backend (Sink.delay), simulated",
    ),
    Allowed(
        "collector/test_collector_judging.py",
        "time.sleep(self.wait)",
        "WaitingJudge: a judge that waits instead of computing (what is measured is its CPU)",
    ),
    Allowed(
        "collector/test_collector_flagger.py",
        "time.sleep(0.01)",
        "a 1 ms deadline must have passed (a lower bound: load only adds to it)",
    ),
    Allowed(
        "demo/test_recording.py",
        "time.sleep(0.002)",
        "spans with a real duration, which the recording normalises away",
    ),
    Allowed(
        "collector/test_collector_disk.py",
        "time.sleep(0.01)",
        "paces the senders while the disk fills (no bound: refusals are counted)",
    ),
    Allowed(
        "collector/test_collector_disk.py",
        "time.sleep(0.005)",
        "paces the senders while the queue fills (no bound: refusals are counted)",
    ),
    # --- timeouts that are settings under test, not waits of the test
    Allowed(
        "",
        ".stop(timeout=",
        "Collector.stop's drain budget: how long shutdown tries to deliver before it keeps "
        "(or loses) the rest, which is what those tests check",
    ),
    Allowed(
        "collector/test_collector_auth.py",
        "credentials=anonymous, timeout=1)",
        "the refused exporter's own retry budget (its export is meant to fail)",
    ),
)


def _sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p != Path(__file__).resolve())


def _allowed(rel: str, line: str) -> Allowed | None:
    for a in ALLOWED:
        if (not a.path or a.path == rel) and a.text in line:
            return a
    return None


def _findings(rel: str, line: str) -> list[str]:
    found = [f"reads the clock ({m.group(0)})" for m in CLOCK.finditer(line)]
    found += [f"sleeps ({m.group(0)}...)" for m in SLEEP.finditer(line)]
    for m in TIMEOUT.finditer(line):
        seconds = float(m.group(1) or m.group(2))
        if seconds < GUARD_FLOOR:
            found.append(f"a literal {seconds:g} s timeout (use a guard from guards.py)")
    return found


def test_no_test_bounds_wall_clock_time_or_sleeps_for_an_event() -> None:
    """Every clock reading, sleep and short literal timeout in tests/ is an allowed one."""
    problems: list[str] = []
    used: set[Allowed] = set()
    for path in _sources():
        rel = path.relative_to(TESTS).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            found = _findings(rel, code)
            if not found:
                continue
            allowed = _allowed(rel, code)
            if allowed is not None:
                used.add(allowed)
                continue
            problems += [f"tests/{rel}:{n}: {what}: {line.strip()}" for what in found]
    assert problems == [], "\n".join(
        ["wall-clock bounds or sleeps in tests (see this module's docstring):", *problems]
    )
    stale = [f"{a.path or '*'}: {a.text!r}" for a in ALLOWED if a not in used]
    assert stale == [], f"allow-list entries that match nothing any more: {stale}"


def test_the_scan_finds_each_kind_of_bound() -> None:
    """The patterns catch what they are for (else the test above could not fail)."""
    assert _findings("x.py", "    started = time.monotonic()")
    assert _findings("x.py", "    assert time.perf_counter() - t0 < 0.5")
    assert _findings("x.py", "    time.sleep(0.15)")
    assert _findings("x.py", "    await asyncio.sleep(0.2)")
    assert _findings("x.py", "    wait_for(cond, timeout=0.8, what='x')")
    assert _findings("x.py", "def _wait_ready(port: int, timeout: float = 20.0) -> None:")
    assert _findings("x.py", "    assert judge.entered.wait(10)")
    assert _findings("x.py", "        feeder.join(5)")
    assert _findings("x.py", "from time import sleep, monotonic")
    assert _findings("x.py", "    threading.Timer(0.3, judge.gate.set).start()")
    assert not _findings("x.py", "    await asyncio.sleep(0)")
    assert not _findings("x.py", "    done = subprocess.run(cmd, timeout=PROCESS_S)")
    assert not _findings("x.py", "    worker.join(60)")
    assert not _findings("x.py", "    c = collector_factory(http_header_timeout=0.3)")
    assert _allowed("collector/test_collector_faults.py", "lt.run(c.stop(timeout=0.5))")
    assert _allowed("collector/test_collector_faults.py", "time.sleep(1)") is None
