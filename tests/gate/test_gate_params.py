"""``GET /v1/gate`` parameters: accepted forms, and errors that name the parameter."""

from __future__ import annotations

import pytest

from tracejudge.gate.params import ParamError, parse_duration, policy_from_query


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "10m", "2h", "1d", "500ms")] == [
        90.0,
        90.0,
        600.0,
        7200.0,
        86400.0,
        0.5,
    ]


def test_full_query() -> None:
    p = policy_from_query(
        {
            "agent": "refund",
            "variant": "canary",
            "baseline": "stable",
            "window": "10m",
            "min_runs": "30",
            "threshold": "0.8",
            "margin": "0.02",
        }
    )
    assert (p.agent, p.variant, p.baseline, p.window) == ("refund", "canary", "stable", 600.0)
    assert (p.min_runs, p.threshold, p.margin) == (30, 0.8, 0.02)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ({"variant": "v"}, "agent"),
        ({"agent": "a", "variant": " "}, "variant"),
        ({"agent": "a", "variant": "v", "window": "-5m"}, "window"),
        ({"agent": "a", "variant": "v", "min_runs": "2.5"}, "min_runs"),
        ({"agent": "a", "variant": "v", "min_runs": "0"}, "min_runs"),
        ({"agent": "a", "variant": "v", "threshold": "nan"}, "threshold"),
        ({"agent": "a", "variant": "v", "threshold": "2"}, "threshold"),
        ({"agent": "a", "variant": "v", "margin": "x"}, "margin"),
        ({"agent": "a", "variant": "v", "baseline": "v"}, "baseline"),
        ({"agent": "a", "variant": "v", "treshold": "0.9"}, "treshold"),
    ],
)
def test_bad_parameters_are_named(query: dict[str, str], name: str) -> None:
    with pytest.raises(ParamError) as err:
        policy_from_query(query)
    assert err.value.name == name
    assert str(err.value).startswith(f"{name}: ")
