"""Callbacks that do not keep their object alive.

An index's automaton hands its rule compiler callbacks into itself, and the rule analysis hands
its solvers callbacks into itself. As bound methods these made reference cycles, so a dropped
index waited for CPython's cycle collector, which then ran, freeing the previous index, in the
middle of the next index's compile (a third of a small schema's time to first mask in a loop of
fresh schemas, and the garbage that survived long enough set off full collections). With
:func:`weak_method` the objects form no cycle and an index is freed when it is dropped.
"""

from __future__ import annotations

import weakref


def weak_method(method):
    """``method`` (a bound method) as a function that holds its object weakly.

    Calling it after the object is gone raises :class:`ReferenceError` (the objects here only
    call back into their owner while the owner uses them).
    """
    ref = weakref.WeakMethod(method)
    name = method.__qualname__  # (the closure must not hold the method itself)

    def call(*args):
        m = ref()
        if m is None:
            raise ReferenceError(f"{name}: its object no longer exists")
        return m(*args)

    call.__qualname__ = call.__name__ = f"weak {name}"
    return call
