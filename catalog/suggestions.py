"""Which catalog names a client probably meant by a model the catalog lacks ("did you mean gpt-4o?").

Only ever computed for an unknown model, never for a priced one: the hot path of recording pays nothing for it.
The catalog's active names are read once per process and kept a few minutes (a catalog load adds names rarely;
a suggestion a few minutes late harms nobody), then compared with difflib."""
import difflib
import time

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from catalog.models import ServiceEntry
from catalog.resolution import PROVIDER_SYNONYMS

NAMES_KEPT_SECONDS = 300
MAX_SUGGESTIONS = 3
_names: dict[str, list[str]] = {}  # provider -> its active canonical names; "" -> every provider's
_read_at = [float("-inf")]  # not money: a monotonic time
_answers: dict[tuple[str, str], list[str]] = {}  # (model, provider) -> its suggestions, until the names are read again
MAX_ANSWERS = 10_000


def _catalog_names() -> dict[str, list[str]]:
    if time.monotonic() - _read_at[0] > NAMES_KEPT_SECONDS:
        by_provider: dict[str, set[str]] = {}
        for provider, name in ServiceEntry.objects.filter(is_active=True).values_list("provider", "canonical_name"):
            by_provider.setdefault(provider, set()).add(name)
            by_provider.setdefault("", set()).add(name)
        _names.clear()
        _names.update({provider: sorted(names) for provider, names in by_provider.items()})
        _answers.clear()
        _read_at[0] = time.monotonic()
    return _names


def _comparable(name: str) -> str:
    """Spelling that ignores separators: `gpt4o`, `gpt-4o` and `gpt_4o` compare alike."""
    return "".join(ch for ch in name if ch.isalnum())


def closest_models(model: str, provider: str) -> list[str]:
    """Up to three active catalog names closest to `model`, those of its provider first (normalized names).
    Remembered per pair: a client sending the same unknown model in every batch pays for the comparison once."""
    names = _catalog_names()
    key = (model, provider)
    if key not in _answers:
        if len(_answers) >= MAX_ANSWERS:
            _answers.clear()
        _answers[key] = _closest(model, provider, names)
    return _answers[key]


def _closest(model: str, provider: str, names: dict[str, list[str]]) -> list[str]:
    pool = names.get(provider) or names.get(PROVIDER_SYNONYMS.get(provider, "")) or names.get("", [])
    if not pool:
        return []
    by_comparable: dict[str, list[str]] = {}
    for name in pool:
        by_comparable.setdefault(_comparable(name), []).append(name)
    exact = by_comparable.get(_comparable(model))
    if exact:
        return exact[:MAX_SUGGESTIONS]
    close = difflib.get_close_matches(_comparable(model), list(by_comparable), n=MAX_SUGGESTIONS, cutoff=0.75)
    return [name for key in close for name in by_comparable[key]][:MAX_SUGGESTIONS]


def did_you_mean(model: str, provider: str) -> str:
    """` (did you mean gpt-4o?)` for a message, or "" when nothing is close."""
    suggestions = closest_models(model, provider)
    return f" (did you mean {' or '.join(suggestions)}?)" if suggestions else ""


@receiver([post_save, post_delete], sender=ServiceEntry, dispatch_uid="catalog_suggestions_forget")
def forget_catalog_names(**_) -> None:
    """Read the names again on next use: an entry saved or deleted in this process (the console, the tests) is
    suggested at once; a bulk catalog load elsewhere within `NAMES_KEPT_SECONDS`."""
    _read_at[0] = float("-inf")  # not money
