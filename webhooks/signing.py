"""Standard Webhooks 1.0 signatures: a secret is `whsec_` + base64 of 24 random bytes; a delivery carries
`webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, a space-separated list of
`v1,` + base64(HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")), one per secret in force."""
import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def secret_new() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def signed_headers(secrets_in_force: list[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(secret, message_id, timestamp, body) for secret in secrets_in_force),
    }
