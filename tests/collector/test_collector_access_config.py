"""Access settings are checked at start (issue 12, item 8): the non-loopback rule, token
sources, TLS files, forward headers and per-target entries; and ``tracejudge serve``
refuses an exposed address without authentication before binding anything."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.certs import Certs, make_certs
from tracejudge.cli import main
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.security.auth import Authenticator
from tracejudge.collector.security.credentials import display_url, is_loopback

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _build(**values: Any) -> Any:
    return build_config({"rules": str(RULES), **values}, {})


def _tokens(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return path


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "collector.internal"])
def test_an_exposed_address_without_auth_is_refused(host: str) -> None:
    """Anything but loopback needs tokens or client certificates, or the explicit
    ``insecure_no_auth``, which start-up then announces as a SECURITY warning."""
    with pytest.raises(ConfigError, match=r"without authentication is refused.*--insecure-no"):
        _build(host=host)
    cfg = _build(host=host, insecure_no_auth=True)
    assert any("NO authentication" in w for w in cfg.security_warnings())


def test_the_management_address_follows_the_same_rule(tmp_path: Path, certs: Certs) -> None:
    with pytest.raises(ConfigError, match=r"0\.0\.0\.0 without authentication"):
        _build(management_host="0.0.0.0", management_port=9464)
    with pytest.raises(ConfigError, match="management_host: needs management_port"):
        _build(management_host="0.0.0.0")
    tokens = _tokens(tmp_path, TOKEN)
    cfg = _build(host="0.0.0.0", auth_token_file=str(tokens))
    assert [w for w in cfg.security_warnings() if "without TLS" in w]
    cfg = _build(
        host="0.0.0.0",
        tls_cert=str(certs.server_cert),
        tls_key=str(certs.server_key),
        tls_client_ca=str(certs.ca),
    )
    assert cfg.security_warnings() == []  # mutual TLS authenticates and encrypts


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "my-host"))


def test_token_sources_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing file, an empty one, a short token, an unset variable: each a clear error.
    Tokens from the file and the variable are all accepted."""
    with pytest.raises(ConfigError, match="cannot read"):
        _build(auth_token_file=str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="no token"):
        _build(auth_token_file=str(_tokens(tmp_path, "# only a comment\n\n")))
    with pytest.raises(ConfigError, match="shorter than 16"):
        _build(auth_token_file=str(_tokens(tmp_path, "short\n")))
    with pytest.raises(ConfigError, match=r"auth_token_env \$TJ_UNSET_TOKEN: no token"):
        _build(auth_token_env="TJ_UNSET_TOKEN")
    shared = _tokens(tmp_path, TOKEN)
    shared.chmod(0o644)
    (warning,) = _build(auth_token_file=str(shared)).security_warnings()
    assert "readable by other users (mode 644)" in warning
    monkeypatch.setenv("TJ_ENV_TOKEN", "from-the-environment-123")
    cfg = _build(auth_token_file=str(_tokens(tmp_path, TOKEN)), auth_token_env="TJ_ENV_TOKEN")
    auth = Authenticator(cfg.tokens())
    assert auth.check(f"Bearer {TOKEN}", "t") is None
    assert auth.check("Bearer from-the-environment-123", "t") is None
    assert auth.check(f"Basic {TOKEN}", "t") is not None
    assert auth.check(f"Bearer {TOKEN}x", "t") == "invalid bearer token"
    assert auth.check(None, "t") is not None
    assert (auth.stats.missing, auth.stats.invalid) == (2, 1)


def test_tls_files_are_loaded_at_start(tmp_path: Path, certs: Certs) -> None:
    with pytest.raises(ConfigError, match="go together"):
        _build(tls_cert=str(certs.server_cert))
    with pytest.raises(ConfigError, match="tls_client_ca: needs tls_cert"):
        _build(tls_client_ca=str(certs.ca))
    with pytest.raises(ConfigError, match=f"cannot load {certs.server_cert}"):
        _build(tls_cert=str(certs.server_cert), tls_key=str(certs.client_key))  # wrong key
    with pytest.raises(ConfigError, match="tls_client_ca: cannot load"):
        _build(
            tls_cert=str(certs.server_cert),
            tls_key=str(certs.server_key),
            tls_client_ca=str(tmp_path / "absent.pem"),
        )


def test_forward_entries_carry_their_own_headers_and_tls(
    certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``forward:`` entry may be a mapping: its headers are merged over the global ones
    and its TLS settings win; header values resolve from env:/file: at start."""
    secret = tmp_path / "key"
    secret.write_text("file-secret\n", encoding="utf-8")
    monkeypatch.setenv("TJ_HDR", "env-secret")
    cfg = _build(
        forward=[
            "grpcs://backend.example:4317",
            {
                "url": "https://api.example/v1/traces",
                "headers": {"api-key": f"file:{secret}", "x-tenant": "team-a"},
                "ca_file": str(certs.ca),
            },
        ],
        forward_headers={"authorization": "env:TJ_HDR"},
    )
    plain = cfg.target_options("grpcs://backend.example:4317")
    assert plain.resolved_headers("t") == {"authorization": "env-secret"}
    assert plain.tls.ca_file is None
    own = cfg.target_options("https://api.example/v1/traces")
    assert own.resolved_headers("t") == {
        "authorization": "env-secret",
        "api-key": "file-secret",
        "x-tenant": "team-a",
    }
    assert own.tls.ca_file == certs.ca
    monkeypatch.delenv("TJ_HDR")
    with pytest.raises(ConfigError, match="'TJ_HDR' is not set"):
        _build(forward=["http://127.0.0.1:4318"], forward_headers={"authorization": "env:TJ_HDR"})
    with pytest.raises(ConfigError, match="unknown key 'verify'"):
        _build(forward=[{"url": "https://a.example", "verify": False}])
    with pytest.raises(ConfigError, match="not a header name"):
        _build(forward=["http://127.0.0.1:4318"], forward_headers={"bad name": "x"})
    with pytest.raises(ConfigError, match="not supported for grpcs"):
        _build(forward=["grpcs://a.example:4317"], forward_insecure_skip_verify=True)
    with pytest.raises(ConfigError, match="credentials in the URL and an authorization header"):
        _build(forward=["https://u:p@a.example"], forward_headers={"Authorization": "Bearer x"})
    with pytest.raises(ConfigError, match="client_cert and client_key go together"):
        _build(forward=["https://a.example"], forward_client_cert=str(certs.client_cert))


def test_plaintext_credentials_to_a_remote_backend_are_warned_about() -> None:
    cfg = _build(forward=["http://backend.example:4318"], forward_headers={"api-key": "k"})
    assert [w for w in cfg.security_warnings() if "sent in clear" in w]
    cfg = _build(forward=["https://backend.example"], forward_headers={"api-key": "k"})
    assert cfg.security_warnings() == []
    cfg = _build(forward=["http://127.0.0.1:4318"], forward_headers={"api-key": "k"})
    assert cfg.security_warnings() == []


def test_display_url_hides_credentials() -> None:
    assert display_url("https://u:p@h.example:443/v1/traces?api_key=k&x=1") == (
        "https://***@h.example:443/v1/traces?api_key=%2A%2A%2A&x=%2A%2A%2A"
    )
    assert display_url("grpc://127.0.0.1:4317") == "grpc://127.0.0.1:4317"
    hook = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
    assert display_url(hook, hide_path=True) == "https://hooks.slack.com/***"
    with pytest.raises(ConfigError, match="differ only in their credentials"):
        _build(forward=["http://a:1@h.example:4318", "http://a:2@h.example:4318"])


def test_serve_refuses_an_exposed_host_before_binding(tmp_path: Path) -> None:
    """The real command line: exit 2 with the reason; a literal secret in --forward-header
    is warned about (argv is public), an env: reference is not."""
    done = CliRunner().invoke(main, ["serve", "--rules", str(RULES), "--host", "0.0.0.0"])
    assert done.exit_code == 2
    assert "without authentication is refused" in done.output
    env = {**os.environ, "TJ_K": "v"}
    done = CliRunner(env=env).invoke(
        main,
        [
            "serve", "--rules", str(RULES), "--host", "0.0.0.0",
            "--forward", "https://a.example", "--forward-header", "api-key=literal-secret",
            "--forward-header", "x-other=env:TJ_K",
        ],
    )  # fmt: skip
    assert done.exit_code == 2
    assert "--forward-header api-key: the value is visible" in done.output
    assert "x-other" not in done.output


def test_named_targets_keep_their_own_transport_options(certs: Certs) -> None:
    """A target name (the disk queue's key) and per-target options go together: in a list
    entry (``name:``) or as a mapping of names; the options follow the URL."""
    cfg = _build(
        forward={
            "jaeger": "grpc://127.0.0.1:4317",
            "hosted": {"url": "grpcs://otlp.example:443", "headers": {"api-key": "k"}},
        }
    )
    assert cfg.forward == ["jaeger=grpc://127.0.0.1:4317", "hosted=grpcs://otlp.example:443"]
    assert cfg.target_options("grpcs://otlp.example:443").headers == {"api-key": "k"}
    assert cfg.target_options("grpc://127.0.0.1:4317").headers == {}
    cfg = _build(forward=[{"url": "https://a.example", "name": "audit", "ca_file": str(certs.ca)}])
    assert cfg.forward == ["audit=https://a.example"]
    assert cfg.target_options("https://a.example").tls.ca_file == certs.ca
    with pytest.raises(ConfigError, match="not a target name"):
        _build(forward=[{"url": "https://a.example", "name": "bad name"}])


def test_relative_paths_in_a_config_file_are_relative_to_the_file(tmp_path: Path) -> None:
    """``serve --config deploy/serve.yaml`` from elsewhere: the file's relative paths name
    files beside it (they used to resolve against the working directory); flags do not."""
    from tracejudge.collector.config import load_config_file

    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "rules.yaml").write_text("version: 1\nrules: []\n")
    (deploy / "ca.pem").write_text("")
    config = deploy / "serve.yaml"
    config.write_text(
        "rules: rules.yaml\n"
        "output: out/judged.jsonl\n"
        "verdicts_jsonl: '-'\n"
        "queue-dir: q\n"
        "forward_headers: {authorization: 'file:token', x-env: 'env:TOKEN'}\n"
        "forward:\n"
        "  - {url: 'https://a:4318', ca_file: ca.pem, headers: ['k=file:k.txt']}\n"
        "  - http://b:4318\n"
        "auth_token_file: /etc/tokens\n"
    )
    values = load_config_file(config)
    assert values == {
        "rules": str(deploy / "rules.yaml"),
        "output": str(deploy / "out" / "judged.jsonl"),
        "verdicts_jsonl": "-",
        "queue-dir": str(deploy / "q"),
        "forward_headers": {"authorization": f"file:{deploy / 'token'}", "x-env": "env:TOKEN"},
        "forward": [
            {"url": "https://a:4318", "ca_file": str(deploy / "ca.pem"),
             "headers": [f"k=file:{deploy / 'k.txt'}"]},
            "http://b:4318",
        ],
        "auth_token_file": "/etc/tokens",
    }  # fmt: skip
    assert build_config({"rules": values["rules"]}, {}).rules == deploy / "rules.yaml"
