"""One config declaration (issue 20): every setting is declared once on its field, written
nested (``graders: {max_concurrent: 8}``) or flat in a file, set by a
``TRACEJUDGE_<SECTION>_<KEY>`` variable or ``serve --set SECTION.KEY=VALUE``, in the order
defaults < file < environment < ``--set`` < flags; every mistake is reported at once, each
starting with the key as the user wrote it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tracejudge.cli import main
from tracejudge.collector.config import (
    SETTINGS,
    TABLE,
    CollectorConfig,
    ConfigError,
    build_config,
    load_config_file,
)
from tracejudge.collector.config_kinds import Kind

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"

NESTED = {
    "judge": {"strict": True, "max_rule_cost": "50ms"},
    "receivers": {"grpc_port": 14317, "max_request_bytes": "8MiB"},
    "decision": {"wait_after_root": "1s", "wait": "20s"},
    "graders": {"max_concurrent": 8, "traces": True},
    "exporters": {"targets": ["grpc://127.0.0.1:14317"], "headers": {"x-tenant": "acme"}},
    "content": {"drop": True, "redact_patterns": ["tok_[a-z]+"]},
    "storage": {"file_mode": "0640"},
}
FLAT = {
    "strict": True,
    "max_rule_cost": "50ms",
    "grpc_port": 14317,
    "max_request_bytes": "8MiB",
    "decision_wait_after_root": "1s",
    "decision_wait": "20s",
    "grader_max_concurrent": 8,
    "grader_traces": True,
    "forward": ["grpc://127.0.0.1:14317"],
    "forward_headers": {"x-tenant": "acme"},
    "drop_content": True,
    "redact_patterns": ["tok_[a-z]+"],
    "file_mode": "0640",
}


def _problems(values: dict[str, Any], **sources: Any) -> list[str]:
    with pytest.raises(ConfigError) as err:
        build_config(values, {}, **sources)
    return list(err.value.problems)


def test_nested_flat_and_mixed_files_give_the_same_config() -> None:
    """The canonical nested form and the flat keys (every existing config) are one config;
    a file may mix them, section by section."""
    nested = build_config(NESTED, {})
    assert nested == build_config(FLAT, {})
    mixed = {k: v for k, v in NESTED.items() if k not in ("graders", "content")}
    mixed |= {"grader_max_concurrent": 8, "grader_traces": True, "drop_content": True}
    mixed["content"] = {"redact_patterns": ["tok_[a-z]+"]}
    assert build_config(mixed, {}) == nested
    assert nested != CollectorConfig()
    assert (nested.grader_max_concurrent, nested.decision_wait_after_root) == (8, 1.0)
    assert (nested.max_request_bytes, nested.file_mode) == (8 * 1024**2, 0o640)
    assert nested.forward_headers == {"x-tenant": "acme"}


def test_every_field_is_a_declared_setting_with_one_canonical_key() -> None:
    """Each field users can set is declared (the internal per-target options aside); no two
    settings share a nested key or a variable, and no section is named like a flat key (a
    file's top-level key would be ambiguous)."""
    fields = {f.name for f in dataclasses.fields(CollectorConfig)}
    assert fields - {s.name for s in SETTINGS} == {"forward_target_options"}
    paths = [s.path for s in SETTINGS]
    envs = [s.env for s in SETTINGS]
    assert len(set(paths)) == len(paths) == len(SETTINGS)
    assert len(set(envs)) == len(envs)
    assert not set(TABLE.sections) & {s.name for s in SETTINGS}
    assert all(s.help and s.help.endswith((".", ")")) for s in SETTINGS)
    defaults = CollectorConfig()
    assert all(getattr(defaults, s.name) == s.default for s in SETTINGS)
    kinds = {s.name: s.kind for s in SETTINGS}
    assert kinds["decision_wait"] is Kind.DURATION
    assert kinds["max_buffered_bytes"] is Kind.SIZE


def test_a_file_with_several_mistakes_gets_each_with_its_nested_path() -> None:
    """Nested keys are named nested, flat keys flat, an unknown section and an unknown key
    in a known section alike, all at once; a rule over keys written nested names them so."""
    problems = _problems(
        {
            "graders": {"max_concurrent": "x", "colour": "blue"},
            "decision": {"wait": "1s", "wait_after_root": "5s"},
            "exporters": {"targets": ["http://127.0.0.1:4318", {"url": "https://b", "headers": {"bad name": "x"}}]},
            "receivers": {"grpc_port": 70000},
            "tick": "5s",
            "telemetry": {"level": "debug"},
            "buffer": 3,
        }
    )  # fmt: skip
    assert [p.split(" (known", 1)[0] for p in problems] == [
        "graders.max_concurrent: expected an integer, got 'x'",
        "unknown key 'graders.colour'",
        "exporters.targets[1].headers: 'bad name' is not a header name",
        "unknown key 'telemetry'",
        "buffer: expected a mapping of its keys",
        "receivers.grpc_port: 70000 is not a port number",
        "decision.wait_after_root must not exceed decision.wait",
        "tick: must be in (0, 1s]",
    ]
    assert "(known in graders: calls_per_minute, max_concurrent, run_deadline," in problems[1]


def test_environment_variables_set_any_setting_and_others_are_left_alone() -> None:
    """``TRACEJUDGE_<SECTION>_<KEY>`` values are YAML values; the project's other
    ``TRACEJUDGE_*`` variables (a chart's token, the build cache) are not settings."""
    env = {
        "TRACEJUDGE_RECEIVERS_HOST": "0.0.0.0",
        "TRACEJUDGE_AUTH_INSECURE_NO_AUTH": "true",
        "TRACEJUDGE_GRADERS_MAX_CONCURRENT": "8",
        "TRACEJUDGE_EXPORTERS_TARGETS": "[grpc://a:4317, b=http://b:4318]",
        "TRACEJUDGE_DECISION_TICK": "50ms",
        "TRACEJUDGE_TOKEN": "s3cret",
        "TRACEJUDGE_CACHE_DIR": "/tmp/x",
        "TRACEJUDGE_VARIANT": "canary",
        "HOME": "/root",
    }
    cfg = build_config({}, {}, env=env)
    assert (cfg.host, cfg.insecure_no_auth, cfg.grader_max_concurrent) == ("0.0.0.0", True, 8)
    assert cfg.forward == ["grpc://a:4317", "b=http://b:4318"]
    assert cfg.tick == 0.05
    assert build_config({}, {}) == CollectorConfig()  # no env given: none read


def test_an_unknown_variable_under_a_known_section_is_an_error_naming_it() -> None:
    problems = _problems(
        {}, env={"TRACEJUDGE_GRADERS_MAX_CONCURENT": "8", "TRACEJUDGE_DECISION_TICK": "soon"}
    )
    assert problems[0].startswith(
        "TRACEJUDGE_DECISION_TICK: expected a duration like '2s' or '200ms', got 'soon'"
    )
    assert problems[1].startswith("TRACEJUDGE_GRADERS_MAX_CONCURENT: no such setting (known: ")
    assert "TRACEJUDGE_GRADERS_MAX_CONCURRENT" in problems[1]
    assert len(problems) == 2


def test_set_takes_yaml_values_by_nested_key() -> None:
    cfg = build_config(
        {},
        {},
        sets=[
            "graders.max_concurrent=8",
            "exporters.targets=[grpc://a:4317]",
            "exporters.headers={x-tenant: acme}",
            "storage.file_mode=0640",
            "content.redact-patterns=[tok_.*]",
        ],
    )
    assert cfg.grader_max_concurrent == 8
    assert cfg.forward == ["grpc://a:4317"]
    assert cfg.forward_headers == {"x-tenant": "acme"}
    assert cfg.file_mode == 0o640
    assert cfg.redact_patterns == ["tok_.*"]


def test_bad_set_items_are_each_reported_without_their_value() -> None:
    """No ``=``, no section, an unknown section or key, text that is no YAML: each named by
    its path; the text is never echoed (it may be a secret)."""
    problems = _problems(
        {},
        sets=[
            "graders.max_concurrent",
            "tick=1s",
            "grader.max_concurrent=8",
            "graders.max_concurent=8",
            "exporters.headers={api-key: s3cret",
            "graders.max_concurrent=x",
        ],
    )
    assert [p.split(" (", 1)[0] for p in problems] == [
        "--set graders.max_concurrent: expected SECTION.KEY=VALUE",
        "--set tick: expected SECTION.KEY=VALUE",
        "--set grader.max_concurrent: unknown section 'grader'",
        "--set graders.max_concurent: unknown key",
        "--set exporters.headers: expected a YAML value",
        "--set graders.max_concurrent: expected an integer, got 'x'",
    ]
    assert not any("s3cret" in p for p in problems)


def test_precedence_defaults_file_environment_set_flags() -> None:
    """Each layer overrides the one below it, key by key; a layer that does not name a key
    leaves the lower one's value."""
    file = {"decision": {"wait": "40s", "wait_after_root": "3s", "tick": "30ms"}, "max_traces": 7}
    env = {"TRACEJUDGE_DECISION_WAIT": "50s", "TRACEJUDGE_DECISION_WAIT_AFTER_ROOT": "4s"}
    sets = ["decision.wait=60s"]
    flags = {"decision_wait": "70s", "decision_wait_after_root": None}
    cfg = build_config(file, flags, env=env, sets=sets)
    assert (cfg.decision_wait, cfg.decision_wait_after_root, cfg.tick) == (70.0, 4.0, 0.03)
    assert cfg.max_traces == 7
    assert cfg.max_buffered_bytes == CollectorConfig().max_buffered_bytes
    assert build_config(file, {}, env=env, sets=sets).decision_wait == 60.0
    assert build_config(file, {}, env=env).decision_wait == 50.0
    assert build_config(file, {}).decision_wait == 40.0
    assert build_config({}, {}).decision_wait == 30.0


def test_relative_paths_in_nested_sections_are_relative_to_the_file(tmp_path: Path) -> None:
    """``config_paths`` resolves by the declared kind, nested or flat: paths, the verdict
    lines file (``-`` stays stdout), header ``file:`` references and per-target TLS files."""
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "rules.yaml").write_text(RULES.read_text(encoding="utf-8"), encoding="utf-8")
    conf = deploy / "serve.yaml"
    doc = {
        "judge": {"rules": "rules.yaml"},
        "storage": {"queue-dir": "queue", "dead_letter": "/abs/dead.jsonl"},
        "verdicts": {"jsonl": "verdicts.jsonl"},
        "exporters": {
            "headers": {"api-key": "file:key.txt", "x-env": "env:X"},
            "targets": [{"url": "https://b:4318", "ca_file": "ca.pem"}],
        },
        "tls_cert": "cert.pem",
    }
    conf.write_text(yaml.safe_dump(doc), encoding="utf-8")
    values = load_config_file(conf)
    assert values["judge"] == {"rules": str(deploy / "rules.yaml")}
    assert values["storage"] == {
        "queue-dir": str(deploy / "queue"),
        "dead_letter": "/abs/dead.jsonl",
    }
    assert values["verdicts"] == {"jsonl": str(deploy / "verdicts.jsonl")}
    assert values["exporters"]["headers"] == {
        "api-key": f"file:{deploy / 'key.txt'}",
        "x-env": "env:X",
    }
    assert values["exporters"]["targets"][0]["ca_file"] == str(deploy / "ca.pem")
    assert values["tls_cert"] == str(deploy / "cert.pem")
    conf.write_text("verdicts: {jsonl: '-'}\n", encoding="utf-8")
    assert load_config_file(conf) == {"verdicts": {"jsonl": "-"}}


def test_serve_reads_the_environment_and_set_and_names_each_mistake(tmp_path: Path) -> None:
    """The real command: a bad variable, a bad ``--set`` and a file's nested mistake in one
    run, exit status 2; the rules given by ``--set`` count as given."""
    conf = tmp_path / "serve.yaml"
    conf.write_text("graders:\n  max_concurrent: many\n", encoding="utf-8")
    done = CliRunner().invoke(
        main,
        ["serve", "--config", str(conf), "--set", f"judge.rules={RULES}", "--set", "tick=1"],
        env={"TRACEJUDGE_RECEIVERS_PORT": "1"},
    )
    assert done.exit_code == 2, done.output
    lines = [line.strip() for line in done.output.splitlines()]
    assert "3 problems in the configuration:" in done.output
    assert "graders.max_concurrent: expected an integer, got 'many'" in lines
    assert any(line.startswith("TRACEJUDGE_RECEIVERS_PORT: no such setting") for line in lines)
    assert any(line.startswith("--set tick: expected SECTION.KEY=VALUE") for line in lines)
    assert "rules file is required" not in done.output


def test_serve_flags_win_over_set_and_the_environment(tmp_path: Path) -> None:
    """A rule finding shows which layer's value it judged: the flag's (flat) over ``--set``
    over the variable."""
    args = ["serve", "--rules", str(RULES), "--set", "decision.wait=1s"]
    env = {"TRACEJUDGE_DECISION_WAIT_AFTER_ROOT": "5s"}
    done = CliRunner().invoke(main, args, env=env)
    assert done.exit_code == 2, done.output
    assert "TRACEJUDGE_DECISION_WAIT_AFTER_ROOT must not exceed decision.wait" in done.output
    done = CliRunner().invoke(main, [*args, "--decision-wait-after-root", "3s"], env=env)
    assert "decision_wait_after_root must not exceed decision.wait" in done.output


def test_each_flag_is_generated_from_its_setting() -> None:
    """``serve``'s flags are the ``COMMON`` settings' (name, type by kind, help with the
    nested key and default), and each sets its setting, over every other layer."""
    from tracejudge.cli.serve import serve
    from tracejudge.cli.serve_flags import COMMON

    params = {p.name for p in serve.params}
    assert set(COMMON) <= params
    assert params - set(COMMON) == {"config_file", "sets", "health_port", "verbose"}
    args = [
        "--forward-header", "x-tenant=acme", "--keep-content", "--no-strict",
        "--grpc-port", "1", "--decision-wait", "3s", "--redact-pattern", "a+",
        "--redact-pattern", "b+", "--health-port", "9", "--max-buffered-bytes", "1MiB",
        "--forward", "grpc://a:4317", "--rules", str(RULES), "--file-mode", "0640",
    ]  # fmt: skip
    ctx = serve.make_context("serve", args)
    flags = {k: (list(v) or None) if isinstance(v, tuple) else v for k, v in ctx.params.items()}
    del flags["config_file"], flags["sets"], flags["verbose"]
    cfg = build_config(
        {"drop_content": True, "strict": True}, flags, sets=["receivers.grpc_port=2"]
    )
    assert (cfg.drop_content, cfg.strict, cfg.grpc_port, cfg.management_port) == (
        False,
        False,
        1,
        9,
    )
    assert (cfg.decision_wait, cfg.max_buffered_bytes, cfg.file_mode) == (3.0, 1024**2, 0o640)
    assert cfg.redact_patterns == ["a+", "b+"]
    assert cfg.forward_headers == {"x-tenant": "acme"}
    assert cfg.forward == ["grpc://a:4317"]
    helped = serve.get_help(ctx)
    assert "[graders.traces; default false]" in " ".join(helped.split())


def test_no_other_tracejudge_variable_falls_under_a_section() -> None:
    """The variables the rest of the project reads (``TRACEJUDGE_TRACES_FILE``...) and the
    deployment files set (``TRACEJUDGE_TOKEN``...) are not settings: none begins with a
    section's prefix, or serve would refuse them as unknown settings."""
    import re

    settings = {s.env for s in SETTINGS}
    prefixes = tuple(f"TRACEJUDGE_{section.upper()}_" for section in TABLE.sections)
    found: set[str] = set()
    for folder in ("src", "collector", "scripts", "examples"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".yaml", ".yml", ".sh", ".tpl", ".md") and path.is_file():
                found |= set(re.findall(r"\bTRACEJUDGE_[A-Z][A-Z0-9_]*", path.read_text("utf-8")))
    code = (ROOT / "src" / "tracejudge" / "semconv.py").read_text(encoding="utf-8")
    names = {v for v in found if not re.search(rf"^{v}\b", code, re.M)} - settings
    assert "TRACEJUDGE_TRACES_FILE" in names
    assert "TRACEJUDGE_TOKEN" in names
    assert [v for v in names if v.startswith(prefixes)] == []


def test_one_setting_written_twice_in_one_file_is_a_mistake() -> None:
    """Nested and flat, or a former name and the new one, in one file: which was meant? The
    second is reported, as written; across layers a later one simply wins."""
    problems = _problems({"decision": {"wait": "3s"}, "decision_wait": "4s", "health_port": 1, "management_port": 2})  # fmt: skip
    assert problems == [
        "decision_wait: given twice (also as decision.wait)",
        "management_port: given twice (also as health_port)",
    ]
    assert _problems({"health_port": 70000}) == ["health_port: 70000 is not a port number"]
    cfg = build_config({"decision_wait": "4s"}, {}, sets=["decision.wait=5s"])
    assert cfg.decision_wait == 5.0


def test_a_literal_header_in_set_is_warned_about_and_never_printed() -> None:
    """``--set exporters.headers`` is argv, like ``--forward-header``: a literal value is
    visible in ``ps``, so serve warns, naming the header, not its value."""
    done = CliRunner().invoke(
        main,
        [
            "serve", "--rules", str(RULES), "--set", "exporters.headers={api-key: s3cret, x-b: env:B}",
            "--set", "decision.tick=5s",
        ],
    )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert "warning: --set exporters.headers api-key: the value is visible" in done.output
    assert "exporters.headers x-b" not in done.output
    assert "s3cret" not in done.output
    assert "decision.tick: must be in (0, 1s]" in done.output


def test_a_nested_config_reads_its_findings_in_nested_keys() -> None:
    """A finding over a key the file did not write names it the way the file writes keys:
    nested for a nested file, flat for a flat one."""
    assert _problems({"exporters": {"evaluation_logs": True}}) == [
        "exporters.evaluation_logs: needs exporters.logs (a logs endpoint)"
    ]
    assert _problems({"evaluation_logs": True}) == [
        "evaluation_logs: needs forward_logs (a logs endpoint)"
    ]
