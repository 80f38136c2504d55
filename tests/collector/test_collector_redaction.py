"""No secret planted in a tool argument or result leaves the collector (issue 12, defect 8).

Explanations quote arguments and results, so ``gen_ai.evaluation.explanation`` on the
forwarded spans, the verdict JSON lines and the webhook carried ``customer_id='Bearer ...'``
and ``status='sk-proj-...'``, even under ``--drop-content``. The real engine judges with
the refund rules here; the backend and the webhook are real HTTP receivers.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from tests.collector.collector_support import LoopThread, Sink, attrs, post, wait_for
from tracejudge import semconv as sc
from tracejudge.collector import Collector, load_judge
from tracejudge.collector.processors.redact import drop_quoted
from tracejudge.redaction import DETECTORS, Redactor

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
BEARER = "Bearer abcdEFGH1234567890xyzSECRET"
SK = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX0001"
LIVE = "sk-live-ZYXWVUTSRQPONMLKJIHG9999"
SECRETS = (
    "abcdEFGH1234567890xyzSECRET",
    "ABCDEFGHIJKLMNOPQRSTUVWX0001",
    "ZYXWVUTSRQPONMLKJIHG9999",
)


def _agent_trace() -> tuple[bytes, bytes]:
    """A refund run whose lookup passes a bearer token as the customer id, whose refund
    call carries an API key and whose result status is one: (trace id, request body)."""
    tid, rid = os.urandom(16), os.urandom(8)
    rs = ResourceSpans()
    ss = rs.scope_spans.add()
    t0 = 1_700_000_000_000_000_000

    def span(parent: bytes, name: str, k: int, **values: str) -> Span:
        s = ss.spans.add(
            trace_id=tid,
            span_id=rid if not parent else os.urandom(8),
            parent_span_id=parent,
            name=name,
            start_time_unix_nano=t0 + k * 1_000_000,
            end_time_unix_nano=t0 + k * 1_000_000 + 500_000,
        )
        for key, v in values.items():
            s.attributes.add(key=key).value.string_value = v
        return s

    def tool(name: str, k: int, args: Any, result: Any) -> None:
        span(
            rid,
            f"execute_tool {name}",
            k,
            **{
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                sc.GEN_AI_TOOL_NAME: name,
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(args),
                sc.GEN_AI_TOOL_CALL_RESULT: json.dumps(result),
            },
        )

    span(
        b"",
        "invoke_agent refund",
        0,
        **{sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "refund"},
        **{sc.USER_ID: "u-42"},
    )
    tool("lookup_order", 1, {"customer_id": BEARER}, {"orders": [{"id": "o-1"}]})
    tool("check_policy", 2, {}, {"approved": True})
    refund_args = {"order_id": "o-1", "amount": 10, "api_key": LIVE, "idempotency_key": "k"}
    tool("refund_api.create", 3, refund_args, {"status": SK, "id": "re_abcdef12"})
    body = b"\x0a" + _varint(rs.ByteSize()) + rs.SerializeToString()
    return tid, body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


@pytest.fixture
def webhook(lt: LoopThread) -> Iterator[list[bytes]]:
    """A real HTTP endpoint recording every webhook body."""
    bodies: list[bytes] = []

    async def handle(request: web.Request) -> web.Response:
        bodies.append(await request.read())
        return web.Response(status=204)

    async def start() -> web.AppRunner:
        app = web.Application()
        app.router.add_post("/hook", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner

    runner = lt.run(start())
    bodies.append(str(runner.addresses[0][1]).encode())  # the port, first
    yield bodies
    lt.run(runner.cleanup())


def _everything_written(
    sink: Sink, tmp_path: Path, hooks: list[bytes], logs: str, *, sender_content: bool
) -> str:
    """All the collector wrote, as text. ``sender_content``: leave out the tool arguments
    and results of forwarded spans (the sender's own attributes, forwarded as sent when
    neither redact_attributes nor drop_content is on); the verdict attributes and
    evaluation events the collector added stay in."""
    spans = []
    for s in sink.spans():
        if sender_content:
            keep = [
                kv
                for kv in s.attributes
                if kv.key not in (sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT)
            ]
            del s.attributes[:]
            s.attributes.extend(keep)
        spans.append(s.SerializeToString())
    forwarded = b"".join(spans)
    return "\n".join(
        [
            forwarded.decode("utf-8", "replace"),
            (tmp_path / "verdicts.jsonl").read_text(),
            b"\n".join(hooks[1:]).decode(),
            logs,
        ]
    )


@pytest.mark.parametrize("mode", ["redact-attributes", "drop-content", "default"])
def test_no_planted_secret_leaves_the_collector(
    mode: str,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    webhook: list[bytes],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The rules still see the secrets (the identity and state rules fail, quoting them),
    but nothing the collector writes holds one: forwarded spans (with redact_attributes
    or drop_content), explanations and verdict attributes on them (always), the verdict
    JSON lines, the webhook bodies and the log lines (here a backend's 400 answer that
    echoes the payload). Under drop_content the quoted values are gone altogether."""
    extra: dict[str, Any] = {
        "redact-attributes": {"redact_attributes": True},
        "drop-content": {"drop_content": True},
        "default": {},
    }[mode]
    port = int(webhook[0])
    c = collector_factory(
        judge=load_judge(RULES),
        webhook=f"http://127.0.0.1:{port}/hook",
        decision_wait_after_root=0.1,
        **extra,
    )
    sink.fail_http = [400]
    sink.fail_body = f"bad attribute value {BEARER!r} in gen_ai.tool.call.arguments".encode()
    with caplog.at_level(logging.INFO, logger="tracejudge.collector"):
        _, refused = _agent_trace()
        assert post(c.http_port, refused)[0] == 200  # its forward is refused, echoed, logged
        wait_for(lambda: c.stats.spans["dropped"] == 4, what="the refused forward")
        _, body = _agent_trace()
        assert post(c.http_port, body)[0] == 200
        wait_for(lambda: len(sink.spans()) == 4, what="the forwarded trace")
        wait_for(lambda: len(webhook) == 3, what="both verdicts on the webhook")
    logs = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "refused 4 spans permanently" in logs
    root = next(s for s in sink.spans() if not s.parent_span_id)
    stamped = attrs(root)
    assert stamped[sc.TRACEJUDGE_VERDICT] == "fail"
    line = json.loads((tmp_path / "verdicts.jsonl").read_text().splitlines()[-1])
    codes = {f["code"] for f in line["findings"]}
    assert {"F-POLICY-IDENTITY_SCOPE", "F-OUTPUT-STATE_MISMATCH"} <= codes
    scope = next(f for f in line["findings"] if f["code"] == "F-POLICY-IDENTITY_SCOPE")
    tool_args = [
        attrs(s).get(sc.GEN_AI_TOOL_CALL_ARGUMENTS, "") for s in sink.spans() if s.parent_span_id
    ]
    if mode == "default":
        # Forwarded attributes are the sender's and stay as sent unless asked; everything
        # the collector itself wrote is clean.
        assert any(BEARER in a for a in tool_args)
        assert "[REDACTED]" in scope["explanation"]
    written = _everything_written(sink, tmp_path, webhook, logs, sender_content=mode == "default")
    assert "F-POLICY-IDENTITY_SCOPE" in written  # the stamped spans are in the text
    for secret in SECRETS:
        assert secret not in written, (mode, secret)
    if mode == "drop-content":
        assert not any(tool_args)
        assert scope["explanation"] == (
            "lookup_order customer_id='[content dropped]' is outside the run's user_id "
            "'[content dropped]'"
        )
        assert "u-42" not in json.dumps(line)
    if mode == "redact-attributes":
        assert any("[REDACTED]" in a for a in tool_args)
        assert any(attrs(s).get(sc.TRACEJUDGE_CONTENT_REDACTED) for s in sink.spans())
    assert c.decision is not None
    assert c.decision.scrubber.redacted > 0


def test_redactor_covers_every_secret_detector_of_the_rules() -> None:
    """One definition of a secret: whatever a ``secret`` detector of the sensitive_data
    rule matches, the shared Redactor (instrumentation and collector) replaces."""
    import re

    samples = [
        "sk-ant-ABCDEFGHIJKLMNOPQRSTUV",
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_" + "a" * 36,
        "xoxb-1234567890-abcdef",
        "AIza" + "B" * 35,
        "Bearer abcdefghijklmnopqrstu",
        "-----BEGIN RSA PRIVATE KEY-----",
    ]
    secret_patterns = [p for cat, p in DETECTORS.values() if cat == "secret"]
    for sample in samples:
        assert any(re.search(p, sample) for p in secret_patterns), sample
        text, count = Redactor().redact(f"x {sample} y")
        assert count >= 1, sample
        assert sample not in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a customer_id='x y' is bad", "a customer_id='[content dropped]' is bad"),
        ("the run's user_id 'u-1'", "the run's user_id '[content dropped]'"),
        ("call f({'k': 'v'})", "call f({'[content dropped]': '[content dropped]'})"),
        ("escaped 'it\\'s' here", "escaped '[content dropped]' here"),
        ("cut off 'abc...", "cut off '[content dropped]'"),
        ("no quotes 12 > 10", "no quotes 12 > 10"),
    ],
)
def test_drop_quoted_removes_values_not_prose(text: str, expected: str) -> None:
    """Quoted literals (what ``repr`` writes for a value) go; apostrophes in words stay."""
    assert drop_quoted(text) == expected


@pytest.mark.parametrize("drop_quoted_values", [False, True])
def test_a_scrubbed_finding_stays_undecided(drop_quoted_values: bool) -> None:
    """An undecided finding quotes what it could not decide (the user's words, a claim):
    scrubbing its explanation, of a secret or (``--drop-content``) of every quoted value,
    rebuilt the finding without its ``undecided`` flag, so the collector reported an
    undecided finding as a decided one (a warn or fail it is not). The flag, and every
    other field, now survive; only the explanation changes."""
    from tracejudge.collector.processors.redact import Scrubber
    from tracejudge.engine.verdict import Finding, Verdict

    finding = Finding(
        "F-UNDECIDED-PREDICATE",
        "warn",
        "policy",
        "transfer-only-when-out-of-scope",
        ("00f067aa0ba902b7",),
        f"user said 'please transfer me, my key is {SK}'",
        3,
        False,
        undecided=True,
    )
    verdict = Verdict("ab" * 16, "01" * 8, "pass", {}, primary=finding, findings=[finding])
    verdict = Scrubber(drop_quoted=drop_quoted_values).verdict(verdict)
    (scrubbed,) = verdict.findings
    assert scrubbed.explanation != finding.explanation
    assert SK not in scrubbed.explanation
    assert (scrubbed.undecided, scrubbed.to_dict()["undecided"]) == (True, True)
    assert scrubbed.code == finding.code
    assert scrubbed.span_ids == finding.span_ids
    assert (scrubbed.step_index, scrubbed.absent) == (finding.step_index, finding.absent)
    assert verdict.primary is scrubbed
