"""Run a callback when the application imports a module: a small post-import hook.

Why: importing a client SDK is expensive (``anthropic`` alone takes over a second), and
``instrument()`` used to import every installed SDK to patch it, so apps that never touch
Anthropic paid for it at start-up. Now an SDK that is already imported is patched at
once, and one that is installed but not imported yet is patched the moment the
application imports it: a ``MetaPathFinder`` placed first on ``sys.meta_path`` answers
only for the watched top-level names, asks the other finders for the real spec, and
wraps its loader so the callback runs right after the module's code has executed.

Guarantees the rest of tracejudge relies on:

- Cost for every other import: one set lookup in ``find_spec``.
- The module sees its real loader (``__loader__``/``__spec__.loader`` are put back
  before its code runs), so ``importlib.resources`` and friends behave as without us.
- A callback that raises is logged, never raised: the application's import succeeds.
- ``cancel_all()`` removes the finder from ``sys.meta_path``; an import already past
  ``find_spec`` then runs no callback (the callback is looked up when the module has
  loaded, not when the loader was wrapped).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

logger = logging.getLogger("tracejudge.instrumentation")

ImportCallback = Callable[[ModuleType], None]


class _HookedLoader(importlib.abc.Loader):
    """Delegates to the real loader; calls back once the module has executed."""

    def __init__(self, loader: importlib.abc.Loader, hooks: ImportHooks) -> None:
        self._loader = loader
        self._hooks = hooks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._hooks._loaded(module)

    def __getattr__(self, name: str) -> Any:
        # get_data, is_package, get_resource_reader...: whatever the real loader offers.
        return getattr(self._loader, name)


class ImportHooks:
    """Callbacks to run once, right after a watched top-level module is imported.

    ``when_imported(name, callback)`` registers (replacing an earlier callback for the
    same name); ``cancel_all()`` forgets every pending callback and removes the finder;
    ``pending()`` names what is still waiting. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, ImportCallback] = {}
        self._finder: _Finder | None = None

    def when_imported(self, name: str, callback: ImportCallback) -> None:
        """Call ``callback(module)`` once ``name`` has been imported: a top-level module,
        or a submodule (``google.genai``: its top level, ``google``, is a namespace other
        packages share, so the SDK is the submodule; the finder sees its dotted name)."""
        with self._lock:
            self._pending[name] = callback
            if self._finder is None:
                self._finder = _Finder(self)
                sys.meta_path.insert(0, self._finder)

    def cancel_all(self) -> None:
        """Forget every pending callback and take the finder off ``sys.meta_path``."""
        with self._lock:
            self._pending.clear()
            self._remove_finder()

    def pending(self) -> tuple[str, ...]:
        """The watched module names whose callback has not run yet."""
        with self._lock:
            return tuple(sorted(self._pending))

    def watched(self, name: str) -> bool:
        """Whether ``name`` is waiting for its import (the finder's hot-path check)."""
        return name in self._pending

    def _remove_finder(self) -> None:
        finder, self._finder = self._finder, None
        if finder is not None:
            # ValueError: the application rebuilt sys.meta_path; nothing left to remove.
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)

    def _loaded(self, module: ModuleType) -> None:
        """The module's code has run: take its callback (once) and call it, guarded."""
        try:
            with self._lock:
                callback = self._pending.pop(module.__name__, None)
                if not self._pending:
                    self._remove_finder()
            if callback is not None:
                callback(module)
        except Exception:
            logger.warning(
                "tracejudge: instrumenting %s on import failed; it will not be traced",
                getattr(module, "__name__", "?"),
                exc_info=True,
            )


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``; answers only for watched names, with a hooked loader."""

    def __init__(self, hooks: ImportHooks) -> None:
        self._hooks = hooks

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not self._hooks.watched(fullname):
            return None
        try:
            spec = _spec_from_other_finders(self, fullname, path, target)
        except Exception:
            # Let the regular machinery find it (and raise its own error, if any).
            return None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _HookedLoader(spec.loader, self._hooks)
        return spec


def _spec_from_other_finders(
    me: _Finder, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> importlib.machinery.ModuleSpec | None:
    for finder in list(sys.meta_path):
        if finder is me:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
        if spec is not None:
            return spec
    return None
