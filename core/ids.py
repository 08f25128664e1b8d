"""Time-ordered ids for the rows written at the highest rate (usage events)."""
import os
import time
from uuid import UUID, SafeUUID

_VERSION_7 = 0x7 << 76
_VARIANT_RFC_9562 = 0x2 << 62
_CLEARED = ~(0xF << 76) & ~(0x3 << 62)
_VERSION_4 = 0x4 << 76
# Read once: on Python 3.11 every `SafeUUID.unknown` goes through the enum's member descriptor, two hundred
# times a recorded batch (0.8 microseconds each in a profile of the recording path).
_SAFETY_UNKNOWN = SafeUUID.unknown


# --------------------------------------------------------------------------- UUIDs without UUID.__init__
# The one place in the code base that sets a UUID's internals with `object.__setattr__`. Why: every id built
# below is already a whole UUID (128 bits, version and variant set), and `UUID(int=value)` checks all that
# again for each of the ids a recorded batch needs, on the hot path (docs/performance.md). `UUID` refuses
# attribute assignment, so its two slots are set the way its own constructor sets them;
# tests/core/test_ids.py holds these ids to what `UUID(int=...)` makes. Keep it here; everywhere else, `UUID(...)`.

def _uuid(value: int) -> UUID:
    """`UUID(int=value)` without the constructor's checks, for a value built in this module."""
    uuid = object.__new__(UUID)
    object.__setattr__(uuid, "int", value)  # UUID's two slots: `int` and `is_safe`
    object.__setattr__(uuid, "is_safe", _SAFETY_UNKNOWN)
    return uuid


# --------------------------------------------------------------------------- the ids

def time_ordered_uuid(unix_ms: int | None = None) -> UUID:
    """A UUIDv7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits.

    Ids of rows inserted together sort together, so the primary-key index (and every unique index on the
    id) grows at its right edge. Random (v4) ids touch a random leaf page per row: on a ledger of
    millions of events most of those pages are no longer in memory (docs/performance.md).
    """
    return time_ordered_uuids(1, unix_ms)[0]


def time_ordered_uuids(count: int, unix_ms: int | None = None) -> list[UUID]:
    """`count` UUIDv7s of the same millisecond (now, unless given), with one read of the random source (a
    batch of events: one system call instead of one per row). They are distinct by their 74 random bits."""
    if unix_ms is None:
        unix_ms = time.time_ns() // 1_000_000
    prefix = (unix_ms & 0xFFFF_FFFF_FFFF) << 80
    randomness = os.urandom(10 * count)
    return [_uuid((prefix | int.from_bytes(randomness[start:start + 10], "big")) & _CLEARED
                  | _VERSION_7 | _VARIANT_RFC_9562)
            for start in range(0, 10 * count, 10)]


def uuid_or_none(value) -> UUID | None:
    """An id given as text (a form, a filter, a provider's metadata), None for anything that is not one."""
    try:
        return UUID(str(value))
    except (ValueError, TypeError):
        return None


def random_uuids(count: int) -> list[UUID]:
    """`count` version-4 UUIDs, as `uuid.uuid4()` makes them, with one read of the random source."""
    randomness = os.urandom(16 * count)
    return [_uuid(int.from_bytes(randomness[start:start + 16], "big") & _CLEARED | _VERSION_4 | _VARIANT_RFC_9562)
            for start in range(0, 16 * count, 16)]
