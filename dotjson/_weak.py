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

    The closure holds a plain weak reference to the object (CPython hands out one per object,
    shared by every callback into it) and the method's function (a class attribute: it refers
    to no instance). :class:`weakref.WeakMethod` made two references with a callback each and
    rebuilt the bound method in Python at every call: ~1.7 us a callback made (an index makes
    eight, each time to first mask) and a Python call more on every callback.
    """
    ref = weakref.ref(method.__self__)
    func = method.__func__

    def call(*args):
        obj = ref()
        if obj is None:
            raise ReferenceError(f"{func.__qualname__}: its object no longer exists")
        return func(obj, *args)

    return call
