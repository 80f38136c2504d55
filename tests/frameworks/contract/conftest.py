"""Fixtures of the contract suite: each framework's own errors fatal, warnings forgotten.

The Agents SDK and langchain-core catch what a processor or callback handler raises and
only log it, so an internal error re-raised by ``raise_internal_errors`` would not fail a
test by itself: such a log record is turned into a failure here. The SDK's default
processor (an uploader to api.openai.com) is removed: tests have no network.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import agents
import pytest

import tracejudge
from tests.frameworks.contract.drivers import DRIVERS, Driver
from tracejudge.instrumentation import _patcher as patcher_mod

_SWALLOWED = ("Error in trace processor", "TracejudgeCallbackHandler")


@pytest.fixture(autouse=True)
def clean(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """No SDK processors but ours, warnings forgotten; uninstrumented after; nothing our
    code raised swallowed by a framework."""
    agents.set_trace_processors([])
    patcher_mod.reset_warnings()
    caplog.set_level(logging.WARNING, logger="openai.agents")
    caplog.set_level(logging.WARNING, logger="langchain_core")
    yield
    tracejudge.uninstrument()
    patcher_mod.reset_warnings()
    swallowed = [r.getMessage() for r in caplog.records if r.getMessage().startswith(_SWALLOWED)]
    assert swallowed == []


@pytest.fixture(params=DRIVERS, ids=[d.name for d in DRIVERS])
def driver(request: pytest.FixtureRequest) -> Driver:
    """Each framework in turn."""
    found: Driver = request.param
    return found
