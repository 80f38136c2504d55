"""Agent runs with known verdicts, made by the real instrumentation and exported over OTLP.

The rules (``RULES``) are two real rules: a trajectory rule that the run must look the order
up (``lookup_order``) and a policy rule denying ``delete_account``. So a run of kind

- ``pass`` looks up the order and answers: verdict ``pass``;
- ``fail`` answers without looking anything up: ``fail`` (a trajectory finding, not a
  hard gate);
- ``policy`` looks up and deletes the account: ``fail`` with a hard-gate policy finding
  (``F-POLICY-UNAUTHORIZED_TOOL``), which fails the canary gate at once.

Used in-process (``emit``, with the caller's tracer provider) and as a script by the
end-to-end tests: ``python -m tests.support.verdict_runs VARIANT:KIND:N ...`` exports with
``tracejudge.instrument()``'s own OTLP exporter to ``OTEL_EXPORTER_OTLP_ENDPOINT``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal

import tracejudge

Kind = Literal["pass", "fail", "policy"]
AGENT = "support"
VERSION = "1.4.0"
POLICY_CODE = "F-POLICY-UNAUTHORIZED_TOOL"
RULES = """\
version: 1
tools:
  lookup_order: {kind: lookup}
  delete_account: {kind: mutate}
rules:
  - id: look-it-up
    layer: trajectory
    check: {type: required_steps, tools: [lookup_order]}
  - id: no-deletes
    layer: policy
    check: {type: tool_access, deny: [delete_account]}
"""


def run_once(variant: str, kind: Kind, case_id: str) -> None:
    """One agent run of ``kind`` (see the module docstring) as ``variant``."""
    with tracejudge.agent(AGENT, version=VERSION, variant_id=variant, case_id=case_id) as run:
        if kind != "fail":
            with tracejudge.tool("lookup_order", effect="read", arguments={"id": "A1"}) as t:
                t.set_result({"orders": [{"id": "A1", "amount": 20}]})
        if kind == "policy":
            with tracejudge.tool("delete_account", effect="write", arguments={"id": "A1"}) as t:
                t.set_result({"deleted": True})
        run.set_output("Your order A1 is on its way.")


def emit(batches: Sequence[tuple[str, Kind, int]]) -> int:
    """Run each (variant, kind, count) batch; returns the number of runs."""
    n = 0
    for variant, kind, count in batches:
        for _ in range(count):
            run_once(variant, kind, case_id=f"refund-{n % 3}" if n % 4 else f"billing-{n}")
            n += 1
    return n


def parse(args: Sequence[str]) -> list[tuple[str, Kind, int]]:
    """``VARIANT:KIND:N`` arguments."""
    out: list[tuple[str, Kind, int]] = []
    for arg in args:
        variant, kind, count = arg.split(":")
        if kind not in ("pass", "fail", "policy"):
            raise SystemExit(f"unknown kind {kind!r} in {arg!r}")
        out.append((variant, kind, int(count)))  # type: ignore[arg-type]
    return out


def main(argv: Sequence[str]) -> int:
    """Export the runs with the default OTLP exporter, then flush (uninstrument)."""
    tracejudge.instrument()
    try:
        n = emit(parse(argv))
    finally:
        tracejudge.uninstrument()
    print(f"runs: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
