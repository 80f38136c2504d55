"""``_shapes.get`` reads mappings by key and objects by attribute; whether a type is a
mapping is remembered per type (the ABC check was a measurable part of a traced call)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tracejudge.instrumentation._shapes import get, url_server


class _Row(Mapping[str, Any]):
    """A Mapping that is not a dict, with an attribute of the same name as a key."""

    name = "attribute"

    def __getitem__(self, key: str) -> Any:
        if key == "name":
            return "item"
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("name",))

    def __len__(self) -> int:
        return 1


class _Model:
    name = "attribute"


def test_mapping_by_key_object_by_attribute_every_time() -> None:
    for _ in range(3):  # the first read decides, later ones use what was remembered
        assert get(_Row(), "name") == "item"
        assert get(_Row(), "missing", 7) == 7
        assert get(_Model(), "name") == "attribute"
        assert get(_Model(), "missing", 7) == 7
        assert get({"name": "dict"}, "name") == "dict"
        assert get(None, "name", 7) == 7


def test_url_server_gives_the_same_answer_when_remembered() -> None:
    """A base URL's address and port (the scheme's default when none), the same on
    every call; anything that is not such a URL reads as none."""
    for _ in range(2):
        assert url_server("http://127.0.0.1:8123/v1") == ("127.0.0.1", 8123)
        assert url_server("https://api.example.com/") == ("api.example.com", 443)
        assert url_server("http://api.example.com") == ("api.example.com", 80)
        assert url_server("http://host:notaport/") == (None, None)
        assert url_server("no-scheme") == (None, None)
        assert url_server(None) == (None, None)


def test_to_jsonable_converts_containers_alike_whatever_their_exact_type() -> None:
    """Plain dicts and lists (read first, by exact type) convert as other mappings and
    sequences do: keys as strings, bytes as base64, models dumped, nesting kept."""
    from collections import OrderedDict
    from dataclasses import dataclass

    from tracejudge.instrumentation._content import to_jsonable

    @dataclass
    class Point:
        x: int

    value = {1: [b"ab", (Point(2), None)], "m": OrderedDict(k=[1.5, True])}
    want = {"1": ["YWI=", [{"x": 2}, None]], "m": {"k": [1.5, True]}}
    assert to_jsonable(value) == want
    assert to_jsonable(OrderedDict(value)) == want
    assert to_jsonable([value]) == [want]
    assert to_jsonable((value,)) == [want]
