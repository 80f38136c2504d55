"""``_shapes.get`` reads mappings by key and objects by attribute; whether a type is a
mapping is remembered per type (the ABC check was a measurable part of a traced call)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tracejudge.instrumentation._shapes import get


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
