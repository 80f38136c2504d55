"""Flagger webhooks on a running collector, over real HTTP.

The collector judges real instrumented runs with the real engine (judged_support.py):
``stable`` 25 passes, ``canary`` 4 passes, 2 failures and 1 hard-gate policy failure.
Each request is the JSON body Flagger POSTs (``name``, ``namespace``, ``phase``,
``checksum``, ``metadata``); Flagger reads only the status: 200-202 is success.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.collector.judged_support import management, otlp_status
from tests.support.guards import IO_S
from tracejudge.collector import Collector
from tracejudge.collector.telemetry.flagger import FirstAsked, decide_hook

STABLE = {"agent": "support", "variant": "stable", "min_runs": "20", "threshold": "0.8"}
CANARY = {"agent": "support", "variant": "canary", "baseline": "stable", "min_runs": "5"}
UNKNOWN = {"agent": "nobody", "variant": "canary"}


def _hook(
    port: int, hook: str, body: Any, *, raw: bytes | None = None, method: str = "POST"
) -> tuple[int, dict[str, Any]]:
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/gate/flagger/{hook}",
        data=data if method == "POST" else None,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=IO_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        text = exc.read()
        return exc.code, json.loads(text) if text.startswith(b"{") else {"text": text.decode()}


def _payload(metadata: Any) -> dict[str, Any]:
    return {
        "name": "support-agent",
        "namespace": "prod",
        "phase": "Progressing",
        "checksum": "6d5c9f7b",
        "metadata": metadata,
    }


@pytest.mark.parametrize(
    ("metadata", "promotion", "rollback", "decision"),
    [
        (STABLE, 200, 409, "pass"),  # 25/25 passed: lower bound 0.87 clears 0.8
        (CANARY, 409, 200, "fail"),  # a hard-gate policy failure: roll back now
        (UNKNOWN, 409, 409, "inconclusive"),  # nothing to go on: neither promote nor roll back
    ],
)
def test_hooks_answer_in_flaggers_terms(
    judged: Collector, metadata: dict[str, str], promotion: int, rollback: int, decision: str
) -> None:
    """confirm-promotion succeeds only on a pass; rollback succeeds only on a fail (a 2xx
    from a rollback hook tells Flagger to roll back); both carry the gate's answer."""
    for hook in ("confirm-promotion", "confirm-traffic-increase"):
        status, body = _hook(management(judged), hook, _payload(metadata))
        assert (status, body["decision"], body["success"]) == (
            promotion, decision, promotion == 200
        )  # fmt: skip
    status, body = _hook(management(judged), "rollback", _payload(metadata))
    assert (status, body["decision"]) == (rollback, decision)
    assert body["canary"] == {
        "name": "support-agent", "namespace": "prod", "phase": "Progressing",
        "checksum": "6d5c9f7b",
    }  # fmt: skip
    assert body["hook"] == "rollback"
    if decision == "fail":
        assert body["hard_failures"] == 1
        assert "F-POLICY-UNAUTHORIZED_TOOL" in body["reason"]
    # Beside a management listener the OTLP port does not serve the hooks.
    assert otlp_status(judged, "/v1/gate/flagger/rollback", "POST") == 404


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"{not json", "body"),
        (b"[]", "body"),
        (json.dumps({"name": "x"}).encode(), "metadata"),
        (json.dumps(_payload(["agent"])).encode(), "metadata"),
        (json.dumps(_payload({"agent": "support", "variant": 2})).encode(), "metadata.variant"),
        (json.dumps({**_payload(STABLE), "name": 7}).encode(), "name"),
        (json.dumps(_payload({"variant": "canary"})).encode(), "metadata.agent"),
        (json.dumps(_payload({**CANARY, "window": "soon"})).encode(), "metadata.window"),
        (json.dumps(_payload({**CANARY, "colour": "red"})).encode(), "metadata.colour"),
        (json.dumps(_payload({**CANARY, "deadline": "later"})).encode(), "metadata.deadline"),
    ],
)
def test_bad_payloads_are_400_naming_the_field(judged: Collector, raw: bytes, field: str) -> None:
    """A 400 (above 202: a failed check, so no promotion and no rollback) naming the field."""
    for hook in ("confirm-promotion", "rollback"):
        status, body = _hook(management(judged), hook, None, raw=raw)
        assert (status, body["field"]) == (400, field), body
        assert body["error"].startswith(f"{field}: ")


def test_unknown_hooks_and_methods_are_refused(judged: Collector) -> None:
    assert _hook(management(judged), "pre-rollout", _payload(STABLE))[0] == 404
    assert _hook(management(judged), "confirm-promotion", None, method="GET")[0] == 405


def test_inconclusive_past_the_deadline_counts_as_a_fail() -> None:
    """Timed from the first call for the canary revision (namespace, name, checksum); a
    new revision starts its own clock."""
    t = [100.0]
    first = FirstAsked(now=lambda: t[0])
    rev1 = {"namespace": "prod", "name": "support", "checksum": "aaa"}
    rev2 = {**rev1, "checksum": "bbb"}
    waiting = {"decision": "inconclusive", "reason": "3 runs, fewer than min_runs=20"}
    assert first.elapsed(rev1) == 0.0
    t[0] = 700.0
    assert first.elapsed(rev2) == 0.0
    ok, answer = decide_hook("rollback", waiting, first.elapsed(rev1), 600.0)
    assert (ok, answer["decision"]) == (True, "fail")
    assert "past deadline 600s" in answer["reason"]
    assert decide_hook("confirm-promotion", waiting, first.elapsed(rev1), 600.0)[0] is False
    assert decide_hook("rollback", waiting, first.elapsed(rev2), 600.0) == (False, waiting)
    assert decide_hook("rollback", waiting, 1e9, None) == (False, waiting)  # no deadline
    passing = {"decision": "pass", "reason": "ok"}
    assert decide_hook("rollback", passing, 1e9, 600.0) == (False, passing)


def test_deadline_over_http(judged: Collector) -> None:
    """An unknown variant stays inconclusive: no rollback at the first call, a rollback
    once the deadline (1 ms here) has passed since it."""
    meta = {**UNKNOWN, "deadline": "1ms"}
    status, body = _hook(management(judged), "rollback", _payload(meta))
    assert (status, body["decision"]) == (409, "inconclusive")
    time.sleep(0.01)
    status, body = _hook(management(judged), "rollback", _payload(meta))
    assert (status, body["decision"]) == (200, "fail")
    assert "past deadline" in body["reason"]
