"""The refund agent on LiteLLM (``litellm.completion`` with tool calls).

LiteLLM takes and returns OpenAI's chat shapes whatever the provider, so this is
``refund_agent``'s loop with LiteLLM's model call: same tools, world and run identity. The
model is ``anthropic/<model>``: LiteLLM speaks Anthropic's Messages API with its own HTTP code
(no SDK underneath), to the ``api_base`` given as the loop's client.
"""

from __future__ import annotations

from typing import Any

from tracejudge.demo.refund_agent import AgentResult, run_refund_agent
from tracejudge.demo.refund_tools import openai_tools

DEFAULT_MODEL = "anthropic/claude-haiku-4-5"


def complete_litellm(
    api_base: Any, model: str, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One ``litellm.completion`` call; the assistant message as a dict (arguments as JSON
    text, as the loop passes them to the tools)."""
    import litellm

    response = litellm.completion(
        model=model,
        messages=messages,
        tools=openai_tools(),
        api_base=api_base,
        api_key="unused",
        max_tokens=1024,
    )
    message = response.choices[0].message
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls or []
    ]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def run_refund_agent_litellm(
    api_base: str, *, variant_id: str, run_id: str, model: str = DEFAULT_MODEL, **options: Any
) -> AgentResult:
    """Run the refund agent once through LiteLLM against ``api_base``."""
    return run_refund_agent(
        api_base,
        variant_id=variant_id,
        run_id=run_id,
        model=model,
        complete=complete_litellm,
        **options,
    )
