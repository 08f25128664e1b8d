"""API key values: generation, digest and the shape check (pure, no ORM)."""
import hashlib
import re
import secrets
import string

KEY_ALPHABET = string.ascii_letters + string.digits
KEY_RANDOM_LENGTH = 40  # ~238 bits: not guessable
KEY_PATTERN = re.compile(r"^svc_(sk|pk)_(test|live)_[A-Za-z0-9]{20,128}$")
TYPE_CODES = {"secret": "sk", "publishable": "pk"}
DISPLAY_PREFIX_LENGTH = 16


def generate_raw_key(key_type: str, environment: str) -> str:
    random_part = "".join(secrets.choice(KEY_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))
    return f"svc_{TYPE_CODES[key_type]}_{environment}_{random_part}"


def key_digest(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def is_well_formed(raw_key: str) -> bool:
    return bool(KEY_PATTERN.match(raw_key))


def display_prefix(raw_key: str) -> str:
    return raw_key[:DISPLAY_PREFIX_LENGTH]
