"""What a grader is: a rubric of independent yes/no properties and how to ask a model.

Declared in a rules file as a ``type: grader`` check; ``GraderSpec.from_params`` reads the
check object (already valid against the rules schema) into a frozen record.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

When: TypeAlias = Literal["undecided", "always", "sampled"]
ProviderName: TypeAlias = Literal["openai", "anthropic"]
PROVIDERS: tuple[ProviderName, ...] = ("openai", "anthropic")
KEY_ENV: dict[ProviderName, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""Where each provider's key is read from when the grader names no ``api_key_env``."""


@dataclass(frozen=True, slots=True)
class Property:
    """One yes/no question with an observable anchor ("every claimed action is backed by a
    successful tool result"): the model answers yes, no or insufficient_evidence."""

    id: str
    question: str


@dataclass(frozen=True, slots=True)
class GraderSpec:
    """One grader: the rubric and the model that answers it."""

    properties: tuple[Property, ...]
    model: str
    provider: ProviderName = "openai"
    samples: int = 1
    """Answers asked per run; the majority decides each property."""
    temperature: float = 0.0
    when: When = "undecided"
    """``undecided``: only runs the deterministic checks left undecided; ``always``;
    ``sampled``: a ``fraction`` of runs, picked by a hash of the run (reproducible)."""
    fraction: float = 1.0
    base_url: str | None = None
    """An OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM, Azure); None: the SDK's
    default (which reads ``OPENAI_BASE_URL``)."""
    api_key_env: str | None = None
    """The environment variable holding the key (default ``KEY_ENV[provider]``)."""
    api_key_file: str | None = None
    """A file holding the key instead (relative paths from the rules file's directory)."""
    max_tokens: int = 1024
    timeout_s: float = 60.0
    instructions: str = ""
    """Extra context for the judge (the policy a property refers to), part of the prompt hash."""
    content: bool = True
    """False: the judge sees only the run's shape (roles, tools, statuses, span ids)."""
    redact: tuple[str, ...] = ()
    """Regular expressions redacted from the evidence besides the default detectors."""

    @property
    def key_env(self) -> str:
        """The environment variable the key is read from."""
        return self.api_key_env or KEY_ENV[self.provider]

    def rubric_hash(self) -> str:
        """A hash of what the judge is asked (properties and instructions), hex, 16 chars."""
        h = hashlib.sha256()
        for p in self.properties:
            h.update(f"{p.id}\x1f{p.question}\x1e".encode())
        h.update(self.instructions.encode())
        return h.hexdigest()[:16]

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> GraderSpec:
        """Read a ``type: grader`` check object (valid against the rules schema)."""
        props = tuple(
            Property(str(item["id"]), " ".join(str(item["question"]).split()))
            for item in p.get("properties") or ()
        )
        return cls(
            properties=props,
            model=str(p["model"]),
            provider=p.get("provider", "openai"),
            samples=int(p.get("samples", 1)),
            temperature=float(p.get("temperature", 0.0)),
            when=p.get("when", "undecided"),
            fraction=float(p.get("fraction", 1.0)),
            base_url=p.get("base_url"),
            api_key_env=p.get("api_key_env"),
            api_key_file=p.get("api_key_file"),
            max_tokens=int(p.get("max_tokens", 1024)),
            timeout_s=float(p.get("timeout_s", 60.0)),
            instructions=" ".join(str(p.get("instructions", "")).split()),
            content=bool(p.get("content", True)),
            redact=tuple(str(x) for x in p.get("redact") or ()),
        )


PARAMS_PROPERTIES: dict[str, Any] = {
    "model": {"type": "string", "minLength": 1},
    "provider": {"enum": list(PROVIDERS)},
    "properties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["id", "question"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"},
                "question": {"type": "string", "minLength": 1},
            },
        },
    },
    "samples": {"type": "integer", "minimum": 1, "maximum": 15},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    "when": {"enum": ["undecided", "always", "sampled"]},
    "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "base_url": {"type": "string", "pattern": "^https?://"},
    "api_key_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
    "api_key_file": {"type": "string", "minLength": 1},
    "max_tokens": {"type": "integer", "minimum": 16, "maximum": 65536},
    "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
    "instructions": {"type": "string"},
    "content": {"type": "boolean"},
    "redact": {"type": "array", "items": {"type": "string", "minLength": 1}},
}
"""The check object's parameters (the rules schema; ``properties`` may not be empty: the
factory says so with the file's line)."""
