"""The collector's OTLP/JSON receivers answer with the codec's own words: a malformed span
(``/v1/traces``) or log record (``/v1/logs``) is refused alone, with exactly the reason
and path ``tracejudge eval`` gives for the same bytes (tests/otlp/test_one_codec.py runs
the whole table; here it goes through real HTTP requests)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from tests.collector.collector_support import LoopThread, post
from tests.collector.logs_support import LogsSink
from tests.otlp.json_cases import (
    MALFORMED,
    RECORD_PATH,
    SPAN_PATH,
    body,
    logs_doc,
    record_doc,
    span_doc,
    traces_doc,
)
from tracejudge.collector import Collector

CASES = ["bad hex id", "int64 overflow", "lone surrogate", "enum beyond int32", "nested too deep"]


@pytest.fixture
def logs_sink(lt: LoopThread) -> Iterator[LogsSink]:
    """A real OTLP logs receiver standing in for the logs backend."""
    s = LogsSink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


def test_json_receivers_refuse_a_malformed_span_or_record_in_the_codecs_words(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink
) -> None:
    """200 with partial success: one span (record) rejected per request, the message the
    codec's reason at its path, the good one of the same request accepted."""
    c = collector_factory(forward_logs=logs_sink.http_url, decision_wait=30.0)
    for case in CASES:
        span_field, log_field, value, relative = MALFORMED[case]
        doc = traces_doc({**span_doc("bad"), span_field: value})
        status, _, raw = post(c.http_port, body(doc), "application/json")
        assert status == 200, raw
        answer = json.loads(raw)["partialSuccess"]
        assert answer == {
            "rejectedSpans": "1",
            "errorMessage": f"{SPAN_PATH}.{relative.format(field=span_field)}",
        }
        logs = logs_doc({**record_doc("bad"), log_field: value})
        status, _, raw = post(c.http_port, body(logs), "application/json", path="/v1/logs")
        assert status == 200, raw
        answer = json.loads(raw)["partialSuccess"]
        assert answer == {
            "rejectedLogRecords": "1",
            "errorMessage": f"{RECORD_PATH}.{relative.format(field=log_field)}",
        }
    assert c.stats.spans["rejected"] == len(CASES)
