"""Hooks: work of a higher app that runs at a moment of a lower app's work, declared where it is wired.

A lower app names the moment (`usage_ingested = Hooks("usage ingested")`) and calls `run` there; it never
imports the apps whose work runs. The composition root (`config/hooks.py`, installed by the console app's
`ready()`) registers each app's function, so one file lists every hook and the import graph shows each
edge pointing down. A plain list called in order, not a Django signal: the style guide keeps logic out of
signals, and a registration that no import can leave out is easier to find than a receiver module that
has to be imported for its side effect.
"""
from collections.abc import Callable


class Hooks:
    def __init__(self, moment: str):
        self.moment = moment
        self._functions: list[Callable[..., None]] = []

    def register(self, function: Callable[..., None]) -> None:
        """Add `function` (called with the moment's keyword arguments); registering it again changes nothing."""
        if function not in self._functions:
            self._functions.append(function)

    @property
    def functions(self) -> tuple[Callable[..., None], ...]:
        return tuple(self._functions)

    def run(self, **kwargs) -> None:
        """Call every registered function in registration order; an exception stops the rest and propagates."""
        for function in self.functions:
            function(**kwargs)

    def __repr__(self) -> str:
        return f"Hooks({self.moment!r}, {[getattr(f, '__qualname__', f) for f in self._functions]})"
