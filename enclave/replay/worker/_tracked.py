"""A served response that notices what the agent reads of it (live-state fields, holes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["TrackedResponse"]


class TrackedResponse(dict[str, Any]):
    """A served response that notices reads of live-state fields and of holes.

    Every ordinary way of reading a value counts as a read: indexing, ``get``, ``pop``,
    ``setdefault``, and the wholesale ones — ``items()``, ``values()``, ``copy()``,
    ``dict(r)``, ``{**r}``, ``r | other``, equality, ``repr``/``str``, pickling and
    ``json.dumps`` — which read every field. (Overriding ``__iter__`` makes CPython's
    dict merge go through ``__getitem__``; a copy can no longer launder a live-state
    field or a withheld one.)
    """

    def __init__(self, data: Mapping[str, Any], *, on_read: Callable[[str], None]) -> None:
        super().__init__(data)
        self._on_read = on_read

    def _read_all(self) -> None:
        for key in dict.keys(self):
            self._on_read(key)

    def __getitem__(self, key: str) -> Any:
        self._on_read(key)
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.keys(self))

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return default

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._on_read(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, Any]:
        item = super().popitem()
        self._on_read(item[0])
        return item

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return super().setdefault(key, default)

    def items(self) -> Any:
        self._read_all()
        return super().items()

    def values(self) -> Any:
        self._read_all()
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._read_all()
        return dict(super().items())

    def __eq__(self, other: object) -> bool:
        self._read_all()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self._read_all()
        return super().__ne__(other)

    __hash__ = None

    def __or__(self, other: Any) -> Any:
        self._read_all()
        return dict(super().items()) | other

    def __ror__(self, other: Any) -> Any:
        self._read_all()
        return other | dict(super().items())

    def __repr__(self) -> str:
        self._read_all()
        return super().__repr__()

    __str__ = __repr__
