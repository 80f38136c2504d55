"""The settings reference (docs/configuration.md's table) and the example config file are
generated from the declarations (``config_docs``): the committed files are the generator's
output, and the defaults they print are the defaults the code has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tracejudge.collector import config_docs
from tracejudge.collector.config import SETTINGS, TABLE, CollectorConfig, ConfigError, build_config
from tracejudge.collector.config_paths import resolve_config_paths

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: the committed files live here whichever build of tracejudge is imported."""
PAGE = ROOT / config_docs.PAGE
EXAMPLE = ROOT / config_docs.EXAMPLE

_KEY_LINE = re.compile(r"^  # ([a-z_]+): (.*)$")


def test_the_committed_table_and_example_are_generated_from_the_declarations() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page == config_docs.render_page(page), "stale: run `make config-docs`"
    example = EXAMPLE.read_text(encoding="utf-8")
    assert example == config_docs.example_yaml(), "stale: run `make config-docs`"


def test_the_table_has_one_row_per_setting_with_its_variable() -> None:
    table = config_docs.table()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(SETTINGS)
    for row, s in zip(rows, SETTINGS, strict=True):
        assert row.startswith(f"| {s.section} | `{s.key}` | `{s.name}` |")
        assert f"`{s.env}`" in row


def _uncommented(example: str) -> str:
    """The example with every setting line uncommented (meaning lines stay comments)."""
    out: list[str] = []
    section = ""
    for line in example.splitlines():
        if re.fullmatch(r"[a-z]+:", line):
            section = line[:-1]
        m = _KEY_LINE.match(line)
        if m and m.group(1) in TABLE.sections.get(section, {}):
            line = f"  {m.group(1)}: {m.group(2)}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_the_defaults_the_example_prints_are_the_real_defaults() -> None:
    """Uncomment every setting of the example file: the config is the default one, but for
    the example's own rules and target (so the printed defaults, in their written units,
    parse back to the declared values)."""
    shown = _uncommented(EXAMPLE.read_text(encoding="utf-8"))
    values = resolve_config_paths(yaml.safe_load(shown), EXAMPLE.parent, TABLE)
    written = [key for section in values.values() if isinstance(section, dict) for key in section]
    assert len(written) == len(SETTINGS)
    cfg = build_config(values, {})
    example = build_config(
        {"rules": values["judge"]["rules"], "forward": ["grpc://127.0.0.1:14317"]}, {}
    )
    assert cfg == example
    defaults = CollectorConfig()
    for s in SETTINGS:
        if s.name not in config_docs.EXAMPLE_VALUES:
            assert getattr(cfg, s.name) == getattr(defaults, s.name), s.path


@pytest.mark.parametrize("which", ["PAGE", "EXAMPLE"])
def test_check_mode_fails_on_a_stale_copy(which: str, tmp_path: Path) -> None:
    """`make config-docs-check` is what stops a forgotten regeneration."""
    page = tmp_path / config_docs.PAGE
    page.parent.mkdir(parents=True)
    page.write_text(config_docs.render_page(PAGE.read_text("utf-8")), "utf-8")
    example = tmp_path / config_docs.EXAMPLE
    example.parent.mkdir(parents=True)
    example.write_text(config_docs.example_yaml(), "utf-8")
    assert config_docs.main(["--check"], tmp_path) == 0
    stale = page if which == "PAGE" else example
    stale.write_text(stale.read_text("utf-8").replace("max_concurrent", "max_parallel"), "utf-8")
    assert config_docs.main(["--check"], tmp_path) == 1
    assert config_docs.main([], tmp_path) == 0
    assert config_docs.main(["--check"], tmp_path) == 0


def test_the_collector_page_shows_the_errors_serve_prints() -> None:
    """docs/collector.md's example of a config with four mistakes is what serve says for it."""
    page = (ROOT / "docs" / "collector.md").read_text(encoding="utf-8")
    shown = page.split("```\nError: 4 problems in the configuration:\n", 1)[1].split("```")[0]
    values = {
        "decision": {"wait": "soon", "tick": "5s"},
        "exporters": {
            "targets": ["http://127.0.0.1:4318", {"url": "https://b", "headers": {"bad name": "x"}}]
        },
        "receivers": {"grpc_port": 70000},
    }
    with pytest.raises(ConfigError) as err:
        build_config(values, {})
    assert str(err.value) == "4 problems in the configuration:\n" + shown.rstrip("\n")
