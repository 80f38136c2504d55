"""The collector's settings reference, generated from their declarations (``config``).

Two artifacts, both written from ``config.SETTINGS`` so they cannot drift from the code:

- the table in docs/configuration.md between its two markers (section, key, flat key,
  type, unit, default, variable, meaning), the rest of the page left alone;
- collector/tracejudge.example.yaml: every setting in its section, its meaning above it,
  commented out at its default (uncomment what you change), except the example's own
  rules file and target.

Usage, from the repository's root: ``python -m tracejudge.collector.config_docs [--check]``
(``make config-docs`` / ``make config-docs-check``); a test checks the committed files
equal :func:`render_page` and :func:`example_yaml`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

from tracejudge.collector.config import SETTINGS
from tracejudge.collector.config_kinds import format_value

PAGE = Path("docs") / "configuration.md"
EXAMPLE = Path("collector") / "tracejudge.example.yaml"
"""Both artifacts' places in a source checkout, relative to its root: the generator runs
from the checkout (``make``), never from an installed package, whose location says nothing
about where the repository is (the compiled build's tests import it from site-packages)."""
BEGIN = (
    "<!-- settings table: generated from src/tracejudge/collector/config.py by make config-docs -->"
)
END = "<!-- end of settings table -->"

EXAMPLE_VALUES: dict[str, Any] = {
    "rules": "../examples/refund/rules.yaml",
    "forward": ["grpc://127.0.0.1:14317"],
}
"""What the example file sets (the refund example's rules, a local Jaeger): every other
setting is left at its default."""

_HEADER = """\
# tracejudge serve: every setting, in its section, at its default. Generated from the
# declarations in src/tracejudge/collector/config.py by `make config-docs`: do not edit.
# Uncomment what you change. Only judge.rules is required.
#
# Durations: 200ms, 2s, 1m, 1h (or bare seconds). Sizes: 512KiB, 16MiB, 1GiB (or bytes).
# Relative paths are relative to this file's directory. The flat keys of earlier versions
# (grader_max_concurrent: 8) are still accepted; unknown keys are an error.
# Each setting can also be given as a variable TRACEJUDGE_<SECTION>_<KEY>
# (TRACEJUDGE_GRADERS_MAX_CONCURRENT=8) or as `tracejudge serve --set graders.max_concurrent=8`.
# Precedence: defaults < this file < TRACEJUDGE_* variables < --set < flags.
# Reference: docs/configuration.md.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table() -> str:
    """The generated block, markers included."""
    head = [
        "| section | key | flat key | type | unit | default | variable | meaning |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        f"| {s.section} | `{s.key}` | `{s.name}` | {s.kind.value} | {s.unit} "
        f"| `{format_value(s.kind, s.default)}` | `{s.env}` | {_cell(s.help)} |"
        for s in SETTINGS
    ]
    return "\n".join([BEGIN, *head, *rows, END])


def render_page(page: str) -> str:
    """``page`` with its settings table replaced by the generated one."""
    start, end = page.find(BEGIN), page.find(END)
    if start == -1 or end == -1:
        raise SystemExit(f"{PAGE}: the settings table markers are missing ({BEGIN!r})")
    return page[:start] + table() + page[end + len(END) :]


def example_yaml() -> str:
    """The example config file: each section, each setting's meaning, its default."""
    lines = [_HEADER.rstrip("\n")]
    section = ""
    for s in SETTINGS:
        if s.section != section:
            section = s.section
            lines += ["", f"{section}:"]
        lines += textwrap.wrap(s.help, width=96, initial_indent="  # ", subsequent_indent="  # ")
        if s.name in EXAMPLE_VALUES:
            value = format_value(s.kind, EXAMPLE_VALUES[s.name])
            lines.append(f"  {s.key}: {value}  # default: {format_value(s.kind, s.default)}")
        else:
            lines.append(f"  # {s.key}: {format_value(s.kind, s.default)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str], root: Path | None = None) -> int:
    """Write both files under ``root`` (the checkout; None: the working directory, as
    ``make`` runs it), or with ``--check`` exit 1 when one is out of date."""
    base = Path.cwd() if root is None else root
    page, example = base / PAGE, base / EXAMPLE
    wanted = {page: render_page(page.read_text(encoding="utf-8")), example: example_yaml()}
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text("utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path}: out of date; run make config-docs")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
        print(f"config-docs: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
