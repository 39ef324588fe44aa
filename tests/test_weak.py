"""dotjson._weak.weak_method: a callback into an object that neither keeps it alive nor forms a
reference cycle with it (an index must be freed when dropped, not by the cycle collector)."""

from __future__ import annotations

import gc
import weakref

import pytest

from dotjson._weak import weak_method


class Owner:
    def __init__(self):
        self.calls = []
        self.callback = weak_method(self.record)  # held by the object it calls back into

    def record(self, *args):
        self.calls.append(args)
        return len(self.calls)


class Child(Owner):
    def record(self, *args):
        return -super().record(*args)


def test_calls_the_method_with_its_arguments():
    o = Owner()
    assert o.callback(1, "a") == 1 and o.callback() == 2
    assert o.calls == [(1, "a"), ()]
    assert Child().callback(7) == -1  # (the method the bound method resolved to)


def test_the_object_is_freed_without_the_collector_and_the_callback_then_refuses():
    gc.disable()
    try:
        o = Owner()
        cb, alive = o.callback, weakref.ref(o)
        del o
        assert alive() is None  # freed by its reference count: no cycle through the callback
        with pytest.raises(ReferenceError, match="Owner.record: its object no longer exists"):
            cb(1)
    finally:
        gc.enable()
