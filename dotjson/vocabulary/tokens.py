"""What a token id is: its kind (text, special, absent), and the limits on ids and on a token's
bytes."""

from __future__ import annotations


# Token kinds, one per id.
_TEXT = 0  # emits its bytes
_SPECIAL = 1  # control token: never emitted as text
_ABSENT = 2  # no token has this id

#: Most token ids a vocabulary may have (``max_token_id()``). The largest real vocabularies have
#: about 262,000; every id costs memory up front (a byte of kind, 8 bytes of offset, a list slot)
#: and one bit in every mask, so a stray id like ``10**9`` is refused rather than allocated.
MAX_VOCAB_SIZE = 1 << 22

#: Most bytes one token may emit. The walk clamps counted repetitions at one past the longest
#: token, in 16 bits; real tokens are at most a few hundred bytes.
MAX_TOKEN_BYTES = 65534
