"""Numbers of more digits than CPython's ``int()``/``str()`` convert (4,300 by default): the
number arithmetic that decides bounds and ``uniqueItems`` over numbers reads them exactly, with
no ``ValueError`` from the interpreter's conversion limit (issue 29)."""

from fractions import Fraction

from dotjson.jsonschema.numarith import _Arith, _ilog10, digits_int, int_digits
from dotjson.jsonschema.unique_numbers import _key

BIG = "1" + "0" * 5000


def _arith(lo=None, hi=None, ne=()):
    """Any number (``integer=None``) between ``lo`` and ``hi``, not in ``ne``."""
    return _Arith(lo, False, hi, False, [], [], list(ne), None)


def test_conversions_round_trip_past_the_limit():
    n = digits_int(BIG)
    assert n == 10 ** 5000
    assert int_digits(n) == BIG
    assert int_digits(-n) == "-" + BIG
    assert digits_int("007") == 7 and int_digits(7) == "7"
    assert _ilog10(Fraction(n)) == 5000
    assert _key(Fraction(n, 3)) == f"{BIG}/3"


def test_bounds_decided_on_long_numbers():
    a = _arith(hi=Fraction(3))
    assert not a.plain_live(BIG)  # 10^5000 and longer: above 3
    assert a.plain_live("0." + "0" * 5000)  # a tiny positive number
    assert a.exp_part_live(BIG, "-", "50")  # 10^5000 e-50...: e-5000 and below reach 3
    assert not _arith(lo=Fraction(1)).plain_live("-" + BIG)
    excl = _arith(ne=[Fraction(digits_int(BIG))])
    assert not excl.holds(Fraction(digits_int(BIG))) and excl.holds(Fraction(digits_int(BIG + "1")))
