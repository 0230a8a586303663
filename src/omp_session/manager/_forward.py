"""``SessionManager``'s public methods that are one part's method, written once, on the part.

``get_leaf_id = forward("_navigation", Navigation.get_leaf_id)`` makes ``get_leaf_id`` the
navigation part's method: its signature and docstring are the part's (mypy, IDEs and ``help``
read them from there, through the types below), so nothing is written twice. On the class it
is the part's function; on a manager the part's bound method, bound at the first call and then
kept on the instance (a non-data descriptor: the instance's entry wins), so a later call costs
what a call of the part's method does.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ["forward"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class forward(Generic[_P, _R]):
    """The public method ``name`` of the manager: ``method`` of its part at attribute ``part``."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, _P], _R]) -> None:
        self._part = part
        self._method = method
        self._name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"{owner.__name__}.{name} forwards to a method named {self._name}")

    @overload
    def __get__(self, manager: None, owner: type | None = None) -> Callable[Concatenate[Any, _P], _R]: ...

    @overload
    def __get__(self, manager: object, owner: type | None = None) -> Callable[_P, _R]: ...

    def __get__(self, manager: object | None, owner: type | None = None) -> Any:
        if manager is None:
            return self._method  # on the class: the part's function (help, inspect, annotations)
        bound = getattr(getattr(manager, self._part), self._name)
        vars(manager)[self._name] = bound
        return bound
