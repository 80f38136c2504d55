"""Colour and width follow the terminal, and NO_COLOR (https://no-color.org) turns colour off."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import TextIO

import pytest

from tracejudge.cli.terminal import colour_wanted, terminal_width


@pytest.fixture
def tty() -> Iterator[TextIO]:
    """The writing end of a real pseudo-terminal."""
    leader, follower = os.openpty()
    stream = os.fdopen(follower, "w")
    try:
        yield stream
    finally:
        stream.close()
        os.close(leader)


def test_colour_on_a_terminal_unless_no_color(tty: TextIO) -> None:
    """A terminal gets colour; NO_COLOR set to anything but "" turns it off."""
    assert colour_wanted(tty, {})
    assert colour_wanted(tty, {"NO_COLOR": ""})
    assert not colour_wanted(tty, {"NO_COLOR": "1"})
    assert not colour_wanted(io.StringIO(), {})


def test_width_only_on_a_terminal(tty: TextIO) -> None:
    """A pipe or file gets whole lines (no width); a terminal has one."""
    assert terminal_width(io.StringIO()) is None
    width = terminal_width(tty)
    assert width is not None
    assert width > 0
