"""The patcher seam: one ``Patcher`` per client SDK, and the registry ``instrument()`` walks.

Why a Protocol and a registry of import paths: SDKs are optional and change their
internals between releases. ``instrument()`` must patch whatever is installed, skip what
is missing or has moved with ONE warning naming it, and keep the rest working. Patcher
modules are imported lazily by dotted path so importing tracejudge never imports an SDK,
and a new provider plugs in with ``register_patcher()`` without touching the pipeline.

Helpers here (``patch_method``/``restore``) keep the original functions so unpatching is
exact, and mark our wrappers so a second ``instrument()`` never wraps twice.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tracejudge.instrumentation._runtime import Runtime

if TYPE_CHECKING:
    from tracejudge.instrumentation._integration import Integration

logger = logging.getLogger("tracejudge.instrumentation")

WRAPPED_MARK = "__tracejudge_wrapped__"
"""Attribute set on every wrapper we install (value: the original function)."""


@runtime_checkable
class Patcher(Protocol):
    """Instrumentation of one client SDK.

    - ``name``: short, user-facing (``"openai"``); used in warnings.
    - ``available()``: True when the SDK is importable; must be cheap and must not
      import the SDK's heavy modules if it can avoid it.
    - ``patch(runtime)``: install wrappers that emit spans/metrics through ``runtime``.
      Raise ``AttributeError``/``ImportError``/``TypeError`` if the SDK's methods moved;
      ``instrument()`` then calls ``unpatch()`` and skips this patcher with one warning.
    - ``unpatch()``: restore every original; must be safe to call after a partial patch
      and when nothing was patched.
    """

    name: str

    def available(self) -> bool: ...

    def patch(self, runtime: Runtime) -> None: ...

    def unpatch(self) -> None: ...


def sdk_importable(module: str) -> bool:
    """True when ``module`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclass(slots=True)
class MethodPatches:
    """Bookkeeping of the methods one patcher replaced, so ``restore()`` is exact."""

    originals: list[tuple[type[Any], str, Any]] = field(default_factory=list)

    def patch_method(self, owner: type[Any], attr: str, make_wrapper: Callable[[Any], Any]) -> bool:
        """Replace ``owner.attr`` with ``make_wrapper(original)``.

        Raises ``AttributeError`` when the method is missing (the SDK moved it). Returns
        False, doing nothing, when it is already wrapped by us (idempotence).
        """
        original = owner.__dict__.get(attr)
        if original is None:
            original = getattr(owner, attr)  # raises AttributeError if it moved
        if getattr(original, WRAPPED_MARK, None) is not None:
            return False
        wrapper = make_wrapper(original)
        setattr(wrapper, WRAPPED_MARK, original)
        self.originals.append((owner, attr, owner.__dict__.get(attr)))
        setattr(owner, attr, wrapper)
        return True

    def restore(self) -> None:
        """Put every original back (in reverse order); forget them."""
        while self.originals:
            owner, attr, original = self.originals.pop()
            if original is None:
                with contextlib.suppress(AttributeError):
                    delattr(owner, attr)
            else:
                setattr(owner, attr, original)


def wrapped_by_other_instrumentor(func: Any, sdk_package: str) -> str | None:
    """Name the foreign instrumentor that already wraps ``func``, if any.

    The cheap check, done once at patch time: wrapt-based instrumentors
    (opentelemetry-instrumentation-openai-v2, OpenLLMetry, OpenInference) leave a
    ``wrapt`` proxy on the method; ``functools.wraps`` wrappers expose ``__wrapped__``
    and are foreign when their code lives outside the SDK package (the SDKs wrap their
    own methods too, e.g. OpenAI's ``required_args``).
    """
    if getattr(func, WRAPPED_MARK, None) is not None:
        return None
    cls_module = type(func).__module__ or ""
    if cls_module.startswith("wrapt"):
        wrapper = getattr(func, "_self_wrapper", None)
        return str(getattr(wrapper, "__module__", None) or cls_module)
    if getattr(func, "__wrapped__", None) is None:
        return None
    code = getattr(func, "__code__", None)
    filename = str(getattr(code, "co_filename", ""))
    if _inside_package(filename, sdk_package):
        return None
    return filename or "an unknown wrapper"


def _inside_package(filename: str, sdk_package: str) -> bool:
    """Whether ``filename`` is a file of the imported package ``sdk_package`` (under one of
    its ``__path__`` folders). A path that merely contains the package's name is not: an
    application in ``~/src/litellm/`` wrapping ``litellm.completion`` is another
    instrumentor. Without the package imported, a ``{sdk_package}/`` folder in the path."""
    package = sys.modules.get(sdk_package)
    folders = getattr(package, "__path__", None)
    if not filename or folders is None:
        return f"/{sdk_package.replace('.', '/')}/" in filename.replace("\\", "/")
    real = os.path.realpath(filename)
    return any(real.startswith(os.path.realpath(folder) + os.sep) for folder in folders)


# --- registry -------------------------------------------------------------------

PatcherFactory = Callable[[], Patcher]


@dataclass(frozen=True, slots=True)
class Registration:
    """One patcher ``instrument()`` applies.

    - ``name``: the patcher's name (warnings, ``active_patchers()``).
    - ``sdk_module``: the top-level module it instruments; the patch is deferred until
      the application imports it. None: applied at once.
    - ``factory``: builds the patcher (built-ins import their module lazily).
    - ``optional``: not a model SDK (a framework): left out of the one warning
      ``instrument()`` gives when no model SDK at all is installed.
    """

    name: str
    sdk_module: str | None
    factory: PatcherFactory
    optional: bool = False


@dataclass(frozen=True, slots=True)
class _Builtin:
    name: str
    module: str
    cls: str
    sdk_module: str | Callable[[], str]
    """The module whose import applies the patch, or a function naming it (read when
    ``instrument()`` runs; nothing is imported to decide)."""
    integration: bool = False


def mistral_sdk_module() -> str:
    """The module the mistralai SDK lives in: ``mistralai`` for 1.x; from 2.0 on,
    ``mistralai`` is a namespace package (no code runs when it is imported, so an import
    hook on it never fires) and the SDK is ``mistralai.client``."""
    try:
        version = importlib.metadata.version("mistralai")
    except importlib.metadata.PackageNotFoundError:
        return "mistralai"
    return "mistralai" if version.split(".", 1)[0] in ("0", "1") else "mistralai.client"


_BUILTIN: tuple[_Builtin, ...] = (
    _Builtin("openai", "tracejudge.instrumentation.openai", "OpenAIPatcher", "openai"),
    _Builtin("anthropic", "tracejudge.instrumentation.anthropic", "AnthropicPatcher", "anthropic"),
    _Builtin("gemini", "tracejudge.instrumentation.gemini", "GeminiPatcher", "google.genai"),
    _Builtin("bedrock", "tracejudge.instrumentation.bedrock", "BedrockPatcher", "botocore"),
    _Builtin("mistral", "tracejudge.instrumentation.mistral", "MistralPatcher", mistral_sdk_module),
    _Builtin("cohere", "tracejudge.instrumentation.cohere", "CoherePatcher", "cohere"),
    _Builtin("litellm", "tracejudge.instrumentation.litellm", "LiteLLMPatcher", "litellm"),
    _Builtin(
        "openai-agents",
        "tracejudge.instrumentation.openai_agents",
        "OpenAIAgentsIntegration",
        "agents",
        integration=True,
    ),
    _Builtin("mcp", "tracejudge.instrumentation.mcp", "MCPIntegration", "mcp", integration=True),
    _Builtin(
        "langchain",
        "tracejudge.instrumentation.langchain",
        "LangChainIntegration",
        "langchain_core",
        integration=True,
    ),
)
_extra: list[Registration] = []


def register_patcher(name: str, factory: PatcherFactory, *, sdk_module: str | None = None) -> None:
    """Add a patcher (by factory) that ``instrument()`` will apply after the built-ins.

    With ``sdk_module`` (the SDK's top-level module name), ``instrument()`` defers the
    patch until the application imports that module, as it does for the built-ins;
    without it the patcher is applied at once.
    """
    _extra[:] = [e for e in _extra if e.name != name]
    _extra.append(Registration(name, sdk_module, factory))


def register_integration(factory: Callable[[], Integration]) -> None:
    """Add a framework ``Integration`` (by factory; see ``_integration``): installed
    when the application imports the framework, with the version check and the
    warnings every integration gets."""
    integration = factory()
    from tracejudge.instrumentation._integration import IntegrationPatcher

    def patcher() -> Patcher:
        return IntegrationPatcher(factory())

    _extra[:] = [e for e in _extra if e.name != integration.name]
    _extra.append(Registration(integration.name, integration.module, patcher, optional=True))


def unregister_patcher(name: str) -> None:
    """Remove a patcher or integration added with ``register_*`` (tests, plugins)."""
    _extra[:] = [e for e in _extra if e.name != name]


def iter_patcher_factories() -> list[Registration]:
    """Built-ins (imported lazily by dotted path) then registered ones."""
    out = [
        Registration(
            b.name,
            b.sdk_module() if callable(b.sdk_module) else b.sdk_module,
            _lazy_factory(b),
            optional=b.integration,
        )
        for b in _BUILTIN
    ]
    out.extend(_extra)
    return out


def _lazy_factory(builtin: _Builtin) -> PatcherFactory:
    def factory() -> Patcher:
        mod = importlib.import_module(builtin.module)
        made = getattr(mod, builtin.cls)()
        if builtin.integration:
            from tracejudge.instrumentation._integration import IntegrationPatcher

            return IntegrationPatcher(made)
        patcher: Patcher = made
        return patcher

    return factory


_warned: set[str] = set()


def warn_once(name: str, message: str) -> None:
    """Log ``message`` as a warning once per patcher name per process."""
    if name in _warned:
        return
    _warned.add(name)
    logger.warning("tracejudge: %s", message)


def note_once(name: str, message: str) -> None:
    """Log ``message`` at debug level once per patcher name per process.

    For what is normal rather than wrong: an SDK that is not installed is one the
    application does not use, and an OpenAI-only application must not be told about
    Anthropic on every start.
    """
    if name in _warned:
        return
    _warned.add(name)
    logger.debug("tracejudge: %s", message)


def reset_warnings() -> None:
    """Forget which warnings were given (tests)."""
    _warned.clear()
