"""Flagger webhooks on ``tracejudge serve``: the canary gate answered in Flagger's terms.

Flagger has no generic web metric provider; it POSTs ``{name, namespace, phase, checksum,
metadata}`` to a webhook and reads only the status code (200-202 success, anything else a
failed check; the body is shown in its events). What "success" means depends on the hook
type, so each type has its own path (Flagger's payload does not say which hook it is):

``POST /v1/gate/flagger/confirm-promotion`` (and ``confirm-traffic-increase``)
    200 when the gate **passes**; 409 when it fails or is inconclusive, so promotion waits
    (Flagger keeps running its metric checks and calls again next interval).
``POST /v1/gate/flagger/rollback``
    200 when the gate **fails** (a success here tells Flagger to roll back now); 409 when
    it passes or is inconclusive (no reason to roll back).

``metadata`` carries the ``GET /v1/gate`` parameters as strings (Flagger's metadata is a
string map): ``agent`` and ``variant`` required; ``baseline``, ``window``, ``min_runs``,
``threshold``, ``margin`` optional. A malformed payload or parameter is a 400 naming it,
which Flagger counts as a failed check: no promotion and no rollback on a typo's account.

``deadline`` (optional, a duration) bounds how long a canary may stay inconclusive: an
inconclusive answer that long after the first webhook call for the same canary revision
(``namespace``, ``name`` and ``checksum`` of the payload) counts as a fail, so a canary that
never gathers enough evidence is rolled back instead of waiting at its step forever. The
first call is remembered in memory (a restarted collector starts the clock again).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from tracejudge.gate.params import ParamError, parse_duration

GateAnswer = Callable[[Mapping[str, str]], dict[str, Any]]
"""As ``receivers.GateAnswer``: the ``/v1/gate`` answer for a query."""

NOT_NOW = 409
"""The status for "no": above 202, so Flagger treats it as a failed check."""
HOOK_SUCCESS: dict[str, str] = {
    "confirm-promotion": "pass",
    "confirm-traffic-increase": "pass",
    "rollback": "fail",
}
"""Each webhook type and the gate decision that is a success for it."""
PATH = "/v1/gate/flagger/{hook}"


class PayloadError(ValueError):
    """A webhook body that is not Flagger's payload; ``field`` names the bad part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def parse_payload(body: bytes) -> tuple[dict[str, str], dict[str, str]]:
    """(canary identity: name, namespace, phase, checksum; gate query from metadata)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError("body", f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise PayloadError("body", "expected a JSON object")
    canary: dict[str, str] = {}
    for key in ("name", "namespace", "phase", "checksum"):
        value = doc.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise PayloadError(key, f"expected a string, got {value!r}")
        canary[key] = value
    metadata = doc.get("metadata")
    if metadata is None:
        raise PayloadError("metadata", "required (agent and variant of the canary)")
    if not isinstance(metadata, dict):
        raise PayloadError("metadata", "expected an object of strings")
    query: dict[str, str] = {}
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise PayloadError(f"metadata.{key}", f"expected a string, got {value!r}")
        query[key] = value
    return canary, query


class FirstAsked:
    """When each canary revision was first asked about (for ``deadline``); bounded, the
    oldest revisions forgotten first."""

    def __init__(self, now: Callable[[], float] = time.monotonic, keep: int = 10_000) -> None:
        self.now = now
        self.keep = keep
        self._first: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    def elapsed(self, canary: Mapping[str, str]) -> float:
        """Seconds since the first call for this canary revision (0 on the first)."""
        key = (canary.get("namespace", ""), canary.get("name", ""), canary.get("checksum", ""))
        now = self.now()
        first = self._first.setdefault(key, now)
        if len(self._first) > self.keep:
            self._first.popitem(last=False)
        return now - first


def decide_hook(
    hook: str, answer: dict[str, Any], elapsed: float, deadline: float | None
) -> tuple[bool, dict[str, Any]]:
    """(success for ``hook``, the answer with the deadline applied)."""
    if answer["decision"] == "inconclusive" and deadline is not None and elapsed >= deadline:
        answer = {
            **answer,
            "decision": "fail",
            "reason": f"{answer['reason']}; still inconclusive {elapsed:.0f}s after the first "
            f"check of this canary revision, past deadline {deadline:g}s",
        }
    return answer["decision"] == HOOK_SUCCESS[hook], answer


def flagger_handler(
    gate: GateAnswer, hook: str, first_asked: FirstAsked
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one webhook type (``HOOK_SUCCESS``)."""
    if hook not in HOOK_SUCCESS:
        raise ValueError(f"not a Flagger hook type served here: {hook!r}")

    async def handle(request: web.Request) -> web.Response:
        try:
            canary, query = parse_payload(await request.read())
            deadline = None
            if "deadline" in query:
                try:
                    deadline = parse_duration(query.pop("deadline"))
                except ValueError as exc:
                    raise ParamError("deadline", str(exc)) from None
            answer = gate(query)
        except PayloadError as exc:
            return web.json_response({"error": str(exc), "field": exc.field}, status=400)
        except ParamError as exc:
            return web.json_response(
                {"error": f"metadata.{exc}", "field": f"metadata.{exc.name}"}, status=400
            )
        ok, answer = decide_hook(hook, answer, first_asked.elapsed(canary), deadline)
        body = {"hook": hook, "success": ok, "canary": canary, **answer}
        return web.json_response(body, status=200 if ok else NOT_NOW)

    return handle


def add_flagger_routes(
    app: web.Application, gate: GateAnswer, first_asked: FirstAsked | None = None
) -> None:
    """``POST /v1/gate/flagger/<hook>`` for each hook type in ``HOOK_SUCCESS``."""
    first = FirstAsked() if first_asked is None else first_asked
    for hook in HOOK_SUCCESS:
        app.router.add_post(PATH.format(hook=hook), flagger_handler(gate, hook, first))
