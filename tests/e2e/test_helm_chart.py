"""The Helm chart (collector/helm/tracejudge) lints, renders and decodes into the real
Kubernetes types, and what it configures is accepted by the programs that will read it.

Real tools, no cluster: helm and kube-check (strict decoding into k8s.io/api and the
Prometheus Operator's ServiceMonitor) are built from the Go module proxy by
scripts/build-tools.sh; the rendered `tracejudge serve` config goes through tracejudge's own
config loader, and the load balancer's OpenTelemetry Collector config through the real
collector's ``validate`` (the one scripts/build-backends.sh builds). That collector has no
bearertokenauth extension, so the config it validates is the chart's no-auth variant; the
auth variant differs only in the extension, the receivers' ``auth`` and one header, which
are checked on the rendered text.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.backends import locate_binary
from tests.support.guards import PROCESS_S
from tracejudge import semconv as sc
from tracejudge.collector.config import ConfigError, build_config

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "collector" / "helm" / "tracejudge"
RULES = ROOT / "examples" / "refund" / "rules.yaml"
BUILD = ROOT / "scripts" / "build-tools.sh"
SECURE = ["--set", "auth.existingSecret=tj-auth", "--set-file", f"rules={RULES}"]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tools() -> dict[str, Path]:
    """helm and kube-check paths (built the first time: minutes cold, ms cached)."""
    done = subprocess.run(
        ["bash", str(BUILD)], capture_output=True, text=True, check=False, timeout=PROCESS_S * 60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    paths = dict(line.split("=", 1) for line in done.stdout.split())
    return {name: Path(path) for name, path in paths.items()}


def _helm(tools: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools["helm"]), *args], capture_output=True, text=True, check=False, timeout=PROCESS_S
    )


def _render(tools: dict[str, Path], *values: str) -> str:
    done = _helm(tools, "template", "tj", str(CHART), "--namespace", "agents", *values)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _docs(text: str) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all(text):
        if doc:
            yield doc


def _kind(text: str, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d
        for d in _docs(text)
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, [(d["kind"], d["metadata"]["name"]) for d in _docs(text)]
    return found[0]


def test_the_chart_lints_strictly(tools: dict[str, Path]) -> None:
    """``helm lint --strict`` checks the templates and the values against values.schema.json."""
    done = _helm(tools, "lint", "--strict", str(CHART), *SECURE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


@pytest.mark.parametrize(
    ("values", "kinds"),
    [
        (
            SECURE,
            [
                "ConfigMap",
                "ConfigMap",
                "Deployment",
                "Service",
                "Service",
                "Service",
                "StatefulSet",
            ],
        ),
        (
            [*SECURE, "--set", "serviceMonitor.enabled=true"],
            [
                "ConfigMap",
                "ConfigMap",
                "Deployment",
                "Service",
                "Service",
                "Service",
                "ServiceMonitor",
                "StatefulSet",
            ],
        ),
        (
            [*SECURE, "--set", "loadBalancer.enabled=false", "--set", "queue.enabled=false"],
            ["ConfigMap", "Service", "Service", "StatefulSet"],
        ),
        (
            ["--set", "auth.insecureNoAuth=true", "--set-file", f"rules={RULES}"],
            [
                "ConfigMap",
                "ConfigMap",
                "Deployment",
                "Service",
                "Service",
                "Service",
                "StatefulSet",
            ],
        ),
    ],
    ids=["default", "service-monitor", "no-lb-no-queue", "insecure"],
)
def test_every_rendered_manifest_decodes_into_the_real_types(
    tools: dict[str, Path], values: list[str], kinds: list[str]
) -> None:
    """Strict decoding: a misspelt field, a wrong type or an unknown kind fails."""
    rendered = _render(tools, *values)
    done = subprocess.run(
        [str(tools["kube-check"])],
        input=rendered,
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_S,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(line.split()[1] for line in done.stdout.splitlines()) == kinds


def test_kube_check_refuses_an_unknown_field(tools: dict[str, Path]) -> None:
    """The checker itself can fail: a field Kubernetes does not have is an error."""
    bad = _render(tools, *SECURE).replace("podManagementPolicy:", "podManagmentPolicy:")
    done = subprocess.run(
        [str(tools["kube-check"])],
        input=bad,
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_S,
    )
    assert done.returncode == 1
    assert "podManagmentPolicy" in done.stderr


def test_the_statefulset_keeps_its_queue_and_sends_every_trace_to_one_pod(
    tools: dict[str, Path],
) -> None:
    """The queue is a volume per pod; the load balancer resolves the headless Service's
    pods and routes by the route key (trace id for spans without one); the gate and metrics have their own Service."""
    rendered = _render(tools, *SECURE)
    sts = _kind(rendered, "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert "--auth-token-file=/etc/tracejudge/auth/token" in args
    assert "--management-port=8080" in args
    assert [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]] == ["queue"]
    headless = _kind(rendered, "Service", "tj-tracejudge-otlp")
    assert headless["spec"]["clusterIP"] == "None"
    assert sts["spec"]["serviceName"] == "tj-tracejudge-otlp"
    management = _kind(rendered, "Service", "tj-tracejudge-management")
    assert [p["port"] for p in management["spec"]["ports"]] == [8080]
    lb = yaml.safe_load(_kind(rendered, "ConfigMap", "tj-tracejudge-lb")["data"]["otelcol.yaml"])
    balancing = lb["exporters"]["load_balancing"]
    assert balancing["routing_key"] == "attributes"
    assert balancing["routing_attributes"] == [sc.TRACEJUDGE_ROUTE_KEY]
    traces = lb["service"]["pipelines"]["traces"]
    assert traces["processors"][0] == "transform/route_key"  # the keyless get the trace id
    fallback = lb["processors"]["transform/route_key"]["trace_statements"]
    assert fallback == [
        f'set(span.attributes["{sc.TRACEJUDGE_ROUTE_KEY}"], span.trace_id.string) '
        f'where span.attributes["{sc.TRACEJUDGE_ROUTE_KEY}"] == nil '
        f'or span.attributes["{sc.TRACEJUDGE_ROUTE_KEY}"] == ""'
    ]
    assert balancing["resolver"]["dns"]["hostname"] == "tj-tracejudge-otlp.agents.svc.cluster.local"
    assert balancing["protocol"]["otlp"]["headers"] == {
        "authorization": "Bearer ${env:TRACEJUDGE_TOKEN}"
    }
    assert lb["receivers"]["otlp"]["protocols"]["grpc"]["auth"] == {
        "authenticator": "bearertokenauth/agents"
    }
    # SIGTERM: Kubernetes waits longer than the collector's own flush
    serve = yaml.safe_load(_kind(rendered, "ConfigMap", "tj-tracejudge")["data"]["tracejudge.yaml"])
    assert pod["terminationGracePeriodSeconds"] > int(serve["shutdown_timeout"].rstrip("s"))


def test_the_rendered_serve_config_is_accepted_by_tracejudge(
    tools: dict[str, Path], tmp_path: Path
) -> None:
    """The config file the chart writes, with the flags its pods pass, passes tracejudge's
    own loader (unknown keys fail there, and an exposed host without a token is refused,
    so a chart/collector mismatch is caught here)."""
    rendered = _render(tools, *SECURE, "--set", "forward[0]=grpc://jaeger-collector:4317")
    data = _kind(rendered, "ConfigMap", "tj-tracejudge")["data"]
    (tmp_path / "rules.yaml").write_text(data["rules.yaml"], encoding="utf-8")
    values = yaml.safe_load(data["tracejudge.yaml"])
    values["rules"] = str(tmp_path / "rules.yaml")
    values["queue_dir"] = str(tmp_path / "queue")
    args = _kind(rendered, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]["args"]
    flags: dict[str, object] = {}
    for arg in args:  # as click hands them to build_config (ints typed, flags True)
        name, _, value = arg.removeprefix("--").partition("=")
        if arg.startswith("--") and name != "config":
            flags[name.replace("-", "_")] = int(value) if value.isdigit() else (value or True)
    assert flags["auth_token_file"] == "/etc/tracejudge/auth/token"  # the mounted Secret
    token = tmp_path / "token"
    token.write_text("chart-test-token-0123456789abcdef\n", encoding="utf-8")
    flags["auth_token_file"] = str(token)
    config = build_config(values, flags)
    assert config.tokens_configured()
    assert config.management_port == 8080
    with pytest.raises(ConfigError, match="without authentication is refused"):
        build_config(values, {})  # the config file alone: the token comes from the flags
    assert config.host == "0.0.0.0"
    assert str(config.queue_dir) == values["queue_dir"]
    assert config.forward == ["grpc://jaeger-collector:4317"]


def test_the_load_balancer_config_is_valid_for_the_real_collector(
    tools: dict[str, Path], tmp_path: Path
) -> None:
    """``otelcol validate`` builds every component of the rendered config (no-auth variant)."""
    rendered = _render(tools, "--set", "auth.insecureNoAuth=true", "--set-file", f"rules={RULES}")
    config = tmp_path / "otelcol.yaml"
    config.write_text(
        _kind(rendered, "ConfigMap", "tj-tracejudge-lb")["data"]["otelcol.yaml"], encoding="utf-8"
    )
    done = subprocess.run(
        [str(locate_binary("otelcol")), "validate", f"--config={config}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_S,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        (["--set-file", f"rules={RULES}"], "auth.existingSecret is required"),
        (["--set", "auth.existingSecret=s"], "rules (inline) or rulesConfigMap is required"),
        ([*SECURE, "--set", "replicas=0"], "replicas"),
        ([*SECURE, "--set", "queue.sise=1Gi"], "sise"),
        ([*SECURE, "--set", "forward[0]=jaeger:4317"], "forward"),
    ],
    ids=["no-auth", "no-rules", "zero-replicas", "misspelt-key", "bad-forward-url"],
)
def test_bad_values_are_refused_with_the_reason(
    tools: dict[str, Path], values: list[str], needle: str
) -> None:
    """Fail fast on values that would run an open, a useless or a broken collector."""
    done = _helm(tools, "template", "tj", str(CHART), *values)
    assert done.returncode != 0
    assert needle in done.stderr, done.stderr
