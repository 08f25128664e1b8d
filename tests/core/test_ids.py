"""Time-ordered ids (core/ids.py): RFC 9562 version 7."""
import time
import uuid

from core.ids import random_uuids, time_ordered_uuid, time_ordered_uuids


def test_an_id_is_a_version_7_uuid_carrying_its_millisecond():
    before = time.time_ns() // 1_000_000
    made = time_ordered_uuid()
    after = time.time_ns() // 1_000_000
    assert made.version == 7 and made.variant == uuid.RFC_4122
    assert before <= made.int >> 80 <= after
    assert str(time_ordered_uuid(0x0190_0000_0001)).startswith("01900000-0001-7")


def test_ids_sort_by_their_millisecond_and_never_repeat():
    earlier = [time_ordered_uuid(1_700_000_000_000) for _ in range(5000)]
    later = [time_ordered_uuid(1_700_000_000_001) for _ in range(5000)]
    assert max(earlier) < min(later)
    assert len(set(earlier + later)) == 10_000
    # The 74 random bits vary in every position the version and variant leave them.
    assert {bit for made in earlier for bit in range(80) if made.int >> bit & 1} == (
        set(range(80)) - {62, 63, 76, 77, 78, 79}) | {63, 76, 77, 78}


def test_a_batch_of_ids_shares_its_millisecond_and_never_repeats():
    before = time.time_ns() // 1_000_000
    batch = time_ordered_uuids(5000)
    after = time.time_ns() // 1_000_000
    assert len(batch) == 5000 and len(set(batch)) == 5000
    assert {made.version for made in batch} == {7} and {made.variant for made in batch} == {uuid.RFC_4122}
    assert len({made.int >> 80 for made in batch}) == 1 and before <= batch[0].int >> 80 <= after
    assert {bit for made in batch for bit in range(80) if made.int >> bit & 1} == (
        set(range(80)) - {62, 63, 76, 77, 78, 79}) | {63, 76, 77, 78}
    assert time_ordered_uuids(0) == []


def test_random_ids_are_version_4_and_never_repeat():
    batch = random_uuids(5000)
    assert len(set(batch)) == 5000
    assert {made.version for made in batch} == {4} and {made.variant for made in batch} == {uuid.RFC_4122}
    assert {bit for made in batch for bit in range(128) if made.int >> bit & 1} == set(range(128)) - {62, 76, 77, 79}


def test_ids_behave_as_the_uuids_the_standard_constructor_makes():
    """The ids are built without `UUID.__init__`'s checks: they must still be whole UUIDs."""
    import copy
    import pickle

    for made in [*time_ordered_uuids(50), *random_uuids(50)]:
        parsed = uuid.UUID(str(made))
        assert parsed == made and hash(parsed) == hash(made) and parsed.bytes == made.bytes
        assert made.is_safe == uuid.SafeUUID.unknown and repr(made) == f"UUID('{made}')"
        assert pickle.loads(pickle.dumps(made)) == made and copy.deepcopy(made) == made
        assert uuid.UUID(int=made.int) == made
