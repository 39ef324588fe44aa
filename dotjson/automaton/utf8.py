"""UTF-8 range splitting: code-point ranges as sequences of byte ranges."""

from __future__ import annotations


def _utf8_encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split the code-point range ``[lo, hi]`` into sequences of byte ranges.

    Each returned sequence ``[(l1, h1), (l2, h2), ...]`` matches exactly the UTF-8 encodings of a
    sub-range; together they cover ``[lo, hi]`` (the technique of regex engines' UTF-8 compilers).
    """
    out: list[list[tuple[int, int]]] = []
    stack = [(lo, hi)]
    while stack:
        lo, hi = stack.pop()
        if lo > hi:
            continue
        split = False
        for boundary in (0x7F, 0x7FF, 0xFFFF):
            if lo <= boundary < hi:
                stack.append((boundary + 1, hi))
                stack.append((lo, boundary))
                split = True
                break
        if split:
            continue
        if hi <= 0x7F:
            out.append([(lo, hi)])
            continue
        n = len(_utf8_encode(lo))
        for i in range(1, n):
            m = (1 << (6 * i)) - 1
            if (lo & ~m) != (hi & ~m):
                if (lo & m) != 0:
                    stack.append(((lo | m) + 1, hi))
                    stack.append((lo, lo | m))
                    split = True
                    break
                if (hi & m) != m:
                    stack.append((hi & ~m, hi))
                    stack.append((lo, (hi & ~m) - 1))
                    split = True
                    break
        if split:
            continue
        a, b = _utf8_encode(lo), _utf8_encode(hi)
        out.append(list(zip(a, b)))
    out.sort()
    return out


def _range_mask(lo: int, hi: int) -> int:
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
