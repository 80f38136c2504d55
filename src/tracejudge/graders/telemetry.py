"""Each grader model call traced as a GenAI ``chat`` span: ``TracedProvider``.

Why: a grader is a model call someone pays for and waits on, and its 429s and timeouts are
why an outcome is ``not_evaluated``; those belong in traces like any other model call,
under the same conventions. The span is the instrumentation's (``ModelCallTelemetry``:
name ``chat {model}``, kind CLIENT, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.request.temperature`` and ``.max_tokens``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens`` / ``.output_tokens``, and on failure status ERROR,
``error.type`` and the ``exception`` event), with the grader's identity
(``tracejudge.grader.provider``, ``.model``, ``.prompt_hash``, ``.rendering_version``) and
a link to each judged run's root span, with ``tracejudge.grader.judged_run`` saying which
(``run``; a pairwise call's two are ``baseline`` and ``candidate``): the call is a trace of
its own, not a span of the run.
A call a budget refused is no call and has no span.

Content: none by default. The instructions, the rendered evidence and the answer go on the
span only when message-content capture is on (``content=``, else the instrumentation's
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), under the keys the one content
declaration (``tracejudge.content``) names (``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages``), redacted and capped as captured
content always is.

Where the spans go: the tracer provider given, else the global one, so ``tracejudge eval``
sends them nowhere unless the program has one configured; ``tracejudge serve`` gives its own
(``collector/exporters/grader_spans.py``), only with ``grader_traces`` on.
"""

from __future__ import annotations

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanContext, TraceFlags, TracerProvider
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.graders.prompt import identity
from tracejudge.graders.providers import (
    Completion,
    JudgedRun,
    JudgeRequest,
    Provider,
    ProviderError,
)
from tracejudge.graders.spec import GraderSpec
from tracejudge.instrumentation import (
    CaptureMode,
    ModelCallTelemetry,
    Runtime,
    message,
    text_part,
)

__all__ = ["TracedProvider", "judge_runtime", "traced"]


def judge_runtime(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    content: str | bool | CaptureMode | None = None,
) -> Runtime:
    """Where grader calls' spans (and the GenAI client metrics) go, and whether they carry
    content: the providers given, else the global ones; ``content`` as ``instrument()``'s
    ``capture_content`` (None: the environment's capture mode, ``NO_CONTENT`` unless set)."""
    return Runtime(
        tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=content
    )


class TracedProvider:
    """``inner`` with each call a ``chat`` span (see the module docstring)."""

    def __init__(self, inner: Provider, spec: GraderSpec, runtime: Runtime) -> None:
        self.inner = inner
        self.runtime = runtime
        ident = identity(spec)
        self.provider_name = spec.provider
        attrs: dict[str, AttributeValue] = {
            sc.TRACEJUDGE_GRADER_PROVIDER: ident.provider,
            sc.TRACEJUDGE_GRADER_MODEL: ident.model,
            sc.TRACEJUDGE_GRADER_PROMPT_HASH: ident.prompt_hash,
            sc.TRACEJUDGE_GRADER_RENDERING_VERSION: ident.rendering_version,
        }
        output_type = getattr(inner, "output_type", None)
        if isinstance(output_type, str):
            attrs[sc.GEN_AI_OUTPUT_TYPE] = output_type
        self.attributes = attrs
        server = getattr(inner, "server", None)
        self.server: tuple[str | None, int | None] = (
            server if isinstance(server, tuple) else (None, None)
        )

    def complete(self, request: JudgeRequest) -> Completion:
        """The inner provider's reply, the call traced; its errors pass through unchanged,
        and a fault of the telemetry itself is logged, never raised (``Runtime.guard``)."""
        call = self._start(request)
        if call is None:
            return self.inner.complete(request)
        rt = self.runtime
        try:
            reply = self.inner.complete(request)
        except BaseException as exc:
            call.deactivate()
            with rt.guard:
                if isinstance(exc, ProviderError) and exc.__cause__ is not None:
                    call.fail(exc.__cause__)  # the SDK's error: error.type as instrumented
                elif isinstance(exc, Exception):
                    call.fail(exc)
                else:
                    call.abandon()  # interrupted: the caller stopped it, not a model error
            raise
        call.deactivate()
        with rt.guard:
            reason = reply.finish_reason
            call.set_response(
                response_id=reply.response_id,
                response_model=reply.model,
                finish_reasons=[reason] if reason else None,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
            )
            said = reply.text if reply.text is not None else reply.refusal
            if said is not None:
                answer = message("assistant", [text_part(said)], reason)
                call.set_output([answer], record_tool_calls=False)
            call.end()
        return reply

    def _start(self, request: JudgeRequest) -> ModelCallTelemetry | None:
        """The call's span, started and current; None when starting it failed (logged)."""
        rt = self.runtime
        attrs = dict(self.attributes)
        attrs[sc.GEN_AI_REQUEST_TEMPERATURE] = float(request.temperature)
        attrs[sc.GEN_AI_REQUEST_MAX_TOKENS] = request.max_tokens
        address, port = self.server
        call = None
        with rt.guard:
            call = ModelCallTelemetry(
                rt,
                sc.GenAiOperationNameValues.CHAT,
                self.provider_name,
                request.model,
                attrs,
                server_address=address,
                server_port=port,
            )
        if call is None:
            return None
        with rt.guard:  # the span stands without its links or content
            for judged in request.about:
                link = _run_context(judged)
                if link is not None:
                    call.span.add_link(link, {sc.TRACEJUDGE_GRADER_JUDGED_RUN: judged.role})
            if rt.capture_any:
                call.set_input(
                    [message("user", [text_part(request.user)])], [text_part(request.system)]
                )
        call.activate()  # an instrumented SDK below sees a model span and adds none
        return call


def traced(provider: Provider, spec: GraderSpec, runtime: Runtime | None) -> Provider:
    """``provider`` traced on ``runtime``; as it is when ``runtime`` is None."""
    return provider if runtime is None else TracedProvider(provider, spec, runtime)


def _run_context(judged: JudgedRun) -> SpanContext | None:
    """A judged run's root span as a link target; None when its ids are not valid."""
    try:
        trace_id, span_id = int(judged.trace_id, 16), int(judged.root_span_id, 16)
    except ValueError:
        return None
    if not (0 < trace_id < 2**128 and 0 < span_id < 2**64):
        return None
    return SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.DEFAULT)
    )
