"""Generate ``src/tracejudge/semconv.py`` from the convention registry.

The registry is ``semconv/registry/*.yaml``: the upstream GenAI keys we use (whose
definitions are read from the pinned copy in ``semconv/upstream/``), a few core keys, our
own ``tracejudge.*`` keys and the foreign keys the engine reads. Generating constants keeps
every attribute string in one reviewed place; ``--check`` fails when the committed module is
stale, so the registry and the code cannot drift apart.

Usage: ``python semconv/generate.py [--check]``
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent
REGISTRY = ROOT / "registry"
UPSTREAM = ROOT / "upstream"
OUTPUT = ROOT.parent / "src" / "tracejudge" / "semconv.py"
_CORE_SCHEMA = re.compile(r"https://opentelemetry\.io/schemas/(\d+\.\d+\.\d+)")


@dataclass
class Attr:
    key: str
    type: str
    brief: str
    origin: str
    members: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Named:
    name: str
    brief: str
    origin: str


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _parse_attr(raw: dict[str, Any], origin: str) -> Attr:
    typ = raw["type"]
    members: list[tuple[str, str, str]] = []
    if isinstance(typ, dict):
        for m in typ["members"]:
            members.append((str(m["id"]), str(m["value"]), _one_line(m.get("brief"))))
        typ_name = "enum"
    else:
        typ_name = str(typ)
    return Attr(raw["key"], typ_name, _one_line(raw.get("brief")), origin, members)


def _load_upstream() -> tuple[dict[str, Attr], dict[str, Named], dict[str, Named]]:
    attrs: dict[str, Attr] = {}
    events: dict[str, Named] = {}
    metrics: dict[str, Named] = {}
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for raw in doc.get("attributes", []) or []:
            if "key" in raw:
                attrs[raw["key"]] = _parse_attr(raw, "upstream")
        for raw in doc.get("events", []) or []:
            if "name" in raw:
                events[raw["name"]] = Named(raw["name"], _one_line(raw.get("brief")), "upstream")
        for raw in doc.get("metrics", []) or []:
            metrics[raw["name"]] = Named(raw["name"], _one_line(raw.get("brief")), "upstream")
    return attrs, events, metrics


def _const(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", name).upper().strip("_")


def _class_name(key: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", key)) + "Values"


def _doc(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'


def upstream_core_version() -> str:
    """The core semantic-conventions release the pinned GenAI registry depends on."""
    manifest = yaml.safe_load((UPSTREAM / "manifest.yaml").read_text(encoding="utf-8"))
    versions = {
        m.group(1)
        for dep in manifest.get("dependencies", [])
        if (m := _CORE_SCHEMA.fullmatch(str(dep.get("schema_url", ""))))
    }
    if len(versions) != 1:
        raise SystemExit(
            f"semconv: expected one core dependency in the upstream manifest: {versions}"
        )
    return versions.pop()


def _check_core_version(core_cfg: dict[str, Any]) -> str:
    """One core version everywhere: core.yaml names the release the GenAI pin depends on."""
    ours = str(core_cfg.get("version", ""))
    theirs = upstream_core_version()
    if ours != theirs:
        raise SystemExit(
            f"semconv: registry/core.yaml says core {ours or '(none)'}, but the pinned GenAI "
            f"registry depends on core {theirs} (upstream/manifest.yaml)"
        )
    return ours


def build() -> str:
    """Return the generated module's text."""
    up_attrs, up_events, up_metrics = _load_upstream()
    upstream_cfg = yaml.safe_load((REGISTRY / "upstream.yaml").read_text(encoding="utf-8"))
    core_cfg = yaml.safe_load((REGISTRY / "core.yaml").read_text(encoding="utf-8"))
    own_cfg = yaml.safe_load((REGISTRY / "tracejudge.yaml").read_text(encoding="utf-8"))
    core_version = _check_core_version(core_cfg)

    attrs: list[Attr] = []
    missing = [k for k in upstream_cfg["use"] if k not in up_attrs]
    missing += [e for e in upstream_cfg.get("events", []) if e not in up_events]
    missing += [m for m in upstream_cfg.get("metrics", []) if m not in up_metrics]
    if missing:
        raise SystemExit(f"semconv: not defined in the pinned upstream model: {missing}")
    attrs += [up_attrs[k] for k in upstream_cfg["use"]]
    attrs += [_parse_attr(raw, "core") for raw in core_cfg["attributes"]]
    own = [_parse_attr(raw, "tracejudge") for raw in own_cfg["attributes"]]
    bad = [a.key for a in own if not a.key.startswith("tracejudge.")]
    if bad:
        raise SystemExit(f"semconv: our own attributes must live under tracejudge.*: {bad}")
    attrs += own
    keys = [a.key for a in attrs]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise SystemExit(f"semconv: defined twice: {dupes}")

    events = [up_events[e] for e in upstream_cfg.get("events", [])]
    events += [Named(e["name"], _one_line(e.get("brief")), "core") for e in core_cfg["events"]]
    events += [Named(e["name"], _one_line(e.get("brief")), "tracejudge") for e in own_cfg["events"]]
    metrics = [up_metrics[m] for m in upstream_cfg.get("metrics", [])]
    metrics += [
        Named(m["name"], _one_line(m.get("brief")), "tracejudge") for m in own_cfg["metrics"]
    ]
    foreign = own_cfg.get("foreign", [])

    out: list[str] = [
        '"""Attribute, event and metric names used by tracejudge.',
        "",
        "GENERATED by semconv/generate.py from semconv/registry/ - do not edit by hand.",
        f"Upstream GenAI conventions pinned at {upstream_cfg['pin']['repository']}"
        f" @ {upstream_cfg['pin']['commit'][:7]}; core conventions v{core_version}.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f'SCHEMA_PIN: Final = "{upstream_cfg["pin"]["commit"]}"',
        '"""Commit of semantic-conventions-genai the GenAI names are taken from."""',
        "",
        f'CORE_VERSION: Final = "{core_version}"',
        '"""Release of the core semantic conventions the pinned GenAI registry depends on."""',
        "",
        "# --- attributes " + "-" * 60,
        "",
    ]
    for a in attrs:
        out.append(f'{_const(a.key)}: Final = "{a.key}"')
        out.append(_doc(f"{a.brief} [{a.origin}; {a.type}]"))
        out.append("")
    out += ["# --- enum values " + "-" * 59, ""]
    for a in attrs:
        if not a.members:
            continue
        out += ["", f"class {_class_name(a.key)}:", f"    {_doc('Values of ' + a.key + '.')}", ""]
        for mid, value, brief in a.members:
            out.append(f'    {_const(mid)}: Final = "{value}"')
            if brief:
                out.append(f"    {_doc(brief)}")
        out.append("")
    out += ["", "# --- events " + "-" * 64, ""]
    for e in events:
        out.append(f'EVENT_{_const(e.name)}: Final = "{e.name}"')
        out.append(_doc(f"{e.brief} [{e.origin}]"))
        out.append("")
    out += ["# --- metrics " + "-" * 63, ""]
    for m in metrics:
        out.append(f'METRIC_{_const(m.name)}: Final = "{m.name}"')
        out.append(_doc(f"{m.brief} [{m.origin}]"))
        out.append("")
    out += ["# --- foreign keys read by the engine (other instrumentations) " + "-" * 14, ""]
    for f in foreign:
        out.append(f'FOREIGN_{_const(f["key"])}: Final = "{f["key"]}"')
        out.append(_doc(f"Read from: {f['source']}."))
        out.append("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the output is stale")
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(
                f"semconv: {OUTPUT.relative_to(ROOT.parent)} is stale; run `make semconv`",
                file=sys.stderr,
            )
            return 1
        print("semconv: generated module is up to date", file=sys.stderr)
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"semconv: wrote {OUTPUT.relative_to(ROOT.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
