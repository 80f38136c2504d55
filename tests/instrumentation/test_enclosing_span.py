"""``should_skip_model_span``: a model call inside another instrumentation's model span
(or one of ours) starts no second span; inside any other span it does."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from tracejudge import semconv as sc
from tracejudge.instrumentation._context import should_skip_model_span


@pytest.mark.parametrize(
    ("attributes", "skip"),
    [
        ({}, False),
        ({"http.request.method": "POST", sc.GEN_AI_AGENT_NAME: "refunds"}, False),
        ({sc.GEN_AI_OPERATION_NAME: "invoke_agent"}, False),
        ({sc.GEN_AI_OPERATION_NAME: "chat"}, True),
        ({sc.GEN_AI_OPERATION_NAME: "embeddings"}, True),
        ({sc.FOREIGN_OPENINFERENCE_SPAN_KIND: "LLM"}, True),
        ({sc.FOREIGN_OPENINFERENCE_SPAN_KIND: "CHAIN"}, False),
        ({sc.FOREIGN_LLM_REQUEST_TYPE: "chat"}, True),
    ],
)
def test_only_an_enclosing_model_span_skips(attributes: dict[str, str], skip: bool) -> None:
    tracer = TracerProvider().get_tracer("t")
    assert should_skip_model_span() is False
    with tracer.start_as_current_span("outer", attributes=attributes):
        assert should_skip_model_span() is skip
    with trace.use_span(trace.INVALID_SPAN):
        assert should_skip_model_span() is False
