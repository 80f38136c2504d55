"""Small translation helpers shared by the OpenAI chat, responses and embeddings code.

Why separate: the request-parameter tables are used on every call; keeping them here
(precomputed, allocation-light) keeps the per-call overhead of the patch small and the
endpoint modules short. The "dict or SDK object" accessor and the server address are the
providers' shared ones (``instrumentation._shapes``), re-exported for the endpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._shapes import get as get
from tracejudge.instrumentation._shapes import parse_arguments as parse_arguments
from tracejudge.instrumentation._shapes import server_of as server_of

PROVIDER: Final = "openai"


# kwarg -> (attribute key, kind) for plain numeric/string request parameters.
_NUMBER: Final = 0
_INT: Final = 1
_STR: Final = 2

CHAT_PARAMS: Final[dict[str, tuple[str, int]]] = {
    "max_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, _INT),
    "max_completion_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, _INT),
    "temperature": (semconv.GEN_AI_REQUEST_TEMPERATURE, _NUMBER),
    "top_p": (semconv.GEN_AI_REQUEST_TOP_P, _NUMBER),
    "frequency_penalty": (semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY, _NUMBER),
    "presence_penalty": (semconv.GEN_AI_REQUEST_PRESENCE_PENALTY, _NUMBER),
    "seed": (semconv.GEN_AI_REQUEST_SEED, _INT),
    "reasoning_effort": (semconv.GEN_AI_REQUEST_REASONING_LEVEL, _STR),
    "service_tier": (semconv.OPENAI_REQUEST_SERVICE_TIER, _STR),
}

RESPONSES_PARAMS: Final[dict[str, tuple[str, int]]] = {
    "max_output_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, _INT),
    "temperature": (semconv.GEN_AI_REQUEST_TEMPERATURE, _NUMBER),
    "top_p": (semconv.GEN_AI_REQUEST_TOP_P, _NUMBER),
    "previous_response_id": (semconv.GEN_AI_REQUEST_PREVIOUS_RESPONSE_ID, _STR),
    "service_tier": (semconv.OPENAI_REQUEST_SERVICE_TIER, _STR),
    "conversation": (semconv.GEN_AI_CONVERSATION_ID, _STR),
}


def request_attributes(
    kwargs: Mapping[str, Any], table: dict[str, tuple[str, int]]
) -> dict[str, AttributeValue]:
    """Request attributes from keyword arguments; SDK ``omit``/``NOT_GIVEN`` are skipped
    because they are none of int/float/str. Iterates the (few) given keyword arguments
    and looks each up in the table, rather than probing every known parameter."""
    attrs: dict[str, AttributeValue] = {}
    for kwarg, value in kwargs.items():
        spec = table.get(kwarg)
        if spec is None or value is None:
            continue
        key, kind = spec
        if kind == _STR:
            if isinstance(value, str):
                attrs[key] = value
        elif isinstance(value, bool):
            continue
        elif kind == _INT:
            if isinstance(value, int):
                attrs[key] = value
        elif isinstance(value, (int, float)):
            attrs[key] = float(value)
    return attrs


def usage_extra(
    usage: Any, cached_path: tuple[str, str], reasoning_path: tuple[str, str]
) -> dict[str, AttributeValue]:
    """Cache-read and reasoning token subsets whenever the usage object (an SDK model)
    reports them, zero included: a reported 0 is a measurement (nothing was cached, no
    reasoning tokens), and both attributes are Recommended; only an absent count is left
    out."""
    extra: dict[str, AttributeValue] = {}
    cached = get(getattr(usage, cached_path[0], None), cached_path[1])  # an object or a dict
    if isinstance(cached, int) and not isinstance(cached, bool):
        extra[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cached
    reasoning = get(getattr(usage, reasoning_path[0], None), reasoning_path[1])
    if isinstance(reasoning, int) and not isinstance(reasoning, bool):
        extra[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = reasoning
    return extra
