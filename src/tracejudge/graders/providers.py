"""Model access: the ``Provider`` seam and its two implementations over the official SDKs.

``OpenAIProvider`` speaks OpenAI Chat Completions through the ``openai`` SDK to OpenAI or
any compatible endpoint (``base_url``: a local vLLM, Ollama or LiteLLM proxy, Azure's
OpenAI-compatible route); ``AnthropicProvider`` speaks Messages through ``anthropic``.
Both are built with ``max_retries=0``: a 429 or a timeout is the sample's outcome
(``not_evaluated``, with the reason), not a hidden wait. Keys come from the environment
(``provider_for`` takes the mapping, so nothing reads ``os.environ`` behind the caller)
or a file, and are never logged, stamped or written to the cache.

Each provider says what a call's telemetry needs (``graders/telemetry.py``): the server it
talks to, the output format it asks for, and from each response the model, the response id
and the tokens the API reports (which ``tracejudge serve``'s token budget counts too).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tracejudge import semconv as sc
from tracejudge.graders.spec import GraderSpec
from tracejudge.instrumentation._shapes import server_of

Server = tuple[str | None, int | None]
"""``server.address`` and ``server.port`` of a provider's endpoint (None when unknown)."""


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """A run a judge call is about: its trace id and root span id (hex), and its role
    (``run`` for a single-run grader; ``baseline`` or ``candidate`` in a pairwise call)."""

    trace_id: str
    root_span_id: str
    role: str = "run"


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One question to a judge model."""

    model: str
    system: str
    user: str
    temperature: float
    max_tokens: int
    about: tuple[JudgedRun, ...] = ()
    """The runs the call judges (one; or a pairwise comparison's baseline and candidate):
    what the call's span links to. Never sent to the model."""


@dataclass(frozen=True, slots=True)
class Completion:
    """What the model sent back: text, or a refusal; and what the API reported about it."""

    text: str | None
    refusal: str | None = None
    finish_reason: str | None = None
    model: str | None = None
    """The model that answered, as the response names it."""
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    """Tokens as the API reports them (None when it reports none)."""

    @property
    def tokens(self) -> int:
        """Input and output tokens together (0 for what the API did not report)."""
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class ProviderError(Exception):
    """The call brought no answer. ``reason`` is short and stable: ``rate_limited``,
    ``timeout``, ``connection``, ``http_<status>``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class GraderConfigError(Exception):
    """A grader cannot be set up (no key, unknown provider): said before any run is judged."""


class Provider(Protocol):
    """Asks a model one question; raises ``ProviderError`` when no answer came."""

    def complete(self, request: JudgeRequest) -> Completion:
        """The model's reply to ``request``."""


def _status_reason(status: int) -> str:
    return "rate_limited" if status == 429 else f"http_{status}"


class OpenAIProvider:
    """Chat Completions through the official ``openai`` SDK (JSON-object mode)."""

    output_type: str | None = sc.GenAiOutputTypeValues.JSON
    """``gen_ai.output.type``: the request asks for a JSON object."""

    def __init__(self, api_key: str, base_url: str | None, timeout_s: float) -> None:
        import openai

        self._openai = openai
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )
        self.server: Server = server_of(self._client.chat.completions)

    def complete(self, request: JudgeRequest) -> Completion:
        """One completion; SDK errors become ``ProviderError``."""
        openai = self._openai
        try:
            resp = self._client.chat.completions.create(
                model=request.model,
                messages=[
                    {"role": "system", "content": request.system},
                    {"role": "user", "content": request.user},
                ],
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                response_format={"type": "json_object"},
            )
        except openai.APITimeoutError as exc:
            raise ProviderError("timeout") from exc
        except openai.APIConnectionError as exc:
            raise ProviderError("connection", type(exc).__name__) from exc
        except openai.APIStatusError as exc:
            raise ProviderError(_status_reason(exc.status_code), _message(exc.body)) from exc
        usage = resp.usage
        ids = (resp.model or None, resp.id or None)
        used = (usage.prompt_tokens, usage.completion_tokens) if usage else (None, None)
        if not resp.choices:
            return Completion(None, None, None, *ids, *used)
        choice = resp.choices[0]
        msg = choice.message
        return Completion(msg.content, msg.refusal, choice.finish_reason, *ids, *used)


class AnthropicProvider:
    """Messages through the official ``anthropic`` SDK."""

    output_type: str | None = None
    """The Messages request asks for no output format."""

    def __init__(self, api_key: str, base_url: str | None, timeout_s: float) -> None:
        import anthropic

        self._anthropic = anthropic
        # The SDK's own span (2.x, on by default, to the global tracer provider) is off: the
        # call's span is the grader's (graders/telemetry.py), one span per call.
        own_spans: dict[str, Any] = {}
        if "open_telemetry" in inspect.signature(anthropic.Anthropic).parameters:
            own_spans["open_telemetry"] = False
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0, **own_spans
        )
        self.server: Server = server_of(self._client.messages)

    def complete(self, request: JudgeRequest) -> Completion:
        """One message; SDK errors become ``ProviderError``."""
        anthropic = self._anthropic
        try:
            resp = self._client.messages.create(
                model=request.model,
                system=request.system,
                messages=[{"role": "user", "content": request.user}],
                max_tokens=request.max_tokens,
                # this SDK release no longer types ``temperature``; the API still reads it
                extra_body={"temperature": request.temperature},
            )
        except anthropic.APITimeoutError as exc:
            raise ProviderError("timeout") from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderError("connection", type(exc).__name__) from exc
        except anthropic.APIStatusError as exc:
            raise ProviderError(_status_reason(exc.status_code), _message(exc.body)) from exc
        text = "".join(getattr(b, "text", "") for b in resp.content if b.type == "text")
        stop = resp.stop_reason
        u = resp.usage
        # the conventions' input tokens for Anthropic: input + cache read + cache write
        cache = (getattr(u, "cache_read_input_tokens", 0) or 0) + (
            getattr(u, "cache_creation_input_tokens", 0) or 0
        )
        seen = (resp.model or None, resp.id or None, u.input_tokens + cache, u.output_tokens)
        if stop == "refusal":
            return Completion(None, text or "refused", stop, *seen)
        return Completion(text or None, None, stop, *seen)


def _message(body: Any) -> str:
    """The error message of an API error body, short (never the request: no key in it)."""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return str(err["message"])[:200]
    return ""


def _key(spec: GraderSpec, env: Mapping[str, str], base_dir: Path | None) -> str:
    if spec.api_key_file is not None:
        path = Path(spec.api_key_file)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            key = path.read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8"
            raise GraderConfigError(f"cannot read api_key_file {str(path)!r}: {why}") from exc
        if not key:
            raise GraderConfigError(f"api_key_file {str(path)!r} is empty")
        return key
    key = env.get(spec.key_env, "").strip()
    if not key:
        raise GraderConfigError(
            f"grader model {spec.model!r} ({spec.provider}) needs a key: "
            f"set the environment variable {spec.key_env}"
        )
    return key


def provider_for(
    spec: GraderSpec, env: Mapping[str, str], base_dir: Path | None = None
) -> Provider:
    """The provider ``spec`` names, its key from ``api_key_file`` (relative to
    ``base_dir``, the rules file's directory) or else ``env[spec.key_env]``.

    ``GraderConfigError`` when the key is missing, empty or unreadable (the message names
    the variable or file, never a value)."""
    key = _key(spec, env, base_dir)
    if spec.provider == "openai":
        base = spec.base_url or env.get("OPENAI_BASE_URL") or None
        return OpenAIProvider(key, base, spec.timeout_s)
    if spec.provider == "anthropic":
        base = spec.base_url or env.get("ANTHROPIC_BASE_URL") or None
        return AnthropicProvider(key, base, spec.timeout_s)
    raise GraderConfigError(f"unknown grader provider {spec.provider!r}")
