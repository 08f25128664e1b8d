"""Production settings: refuse the development SECRET_KEY with DEBUG off, DEBUG on or a placeholder SECRET_KEY while
ALLOWED_HOSTS serves a network; pass `manage.py check --deploy`."""
import os
import secrets
import subprocess
import sys

import pytest
from django.conf import settings

IMPORT_SETTINGS = ("import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; "
                   "django.setup()")


def run(args, **env):
    """Run python in a clean copy of this environment (no SECRET_KEY/DEBUG/ALLOWED_HOSTS unless given)."""
    base = {name: value for name, value in os.environ.items()
            if name not in {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS",
                            "DJANGO_SETTINGS_MODULE"}}
    return subprocess.run([sys.executable, *args], cwd=settings.BASE_DIR, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("secret", [None, "dev-insecure-secret-key-change-me"])
def test_settings_refuse_to_load_with_debug_off_and_the_default_secret_key(secret):
    env = {"DEBUG": "0"} | ({"SECRET_KEY": secret} if secret else {})
    result = run(["-c", IMPORT_SETTINGS], **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_production_settings_pass_the_deploy_check_without_warnings():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                 DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="billing.example.com")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


PLACEHOLDER = "local-compose-only-replace-me-f3b9c2d7e1a84b6f9d0c5e2a7b1f4c8d"  # docker-compose.yml's default


@pytest.mark.parametrize("env, refusal", [
    ({"DEBUG": "1", "ALLOWED_HOSTS": "*"}, "DEBUG is on while ALLOWED_HOSTS serves *"),
    ({"DEBUG": "1", "ALLOWED_HOSTS": "localhost,billing.example.com"},
     "DEBUG is on while ALLOWED_HOSTS serves billing.example.com"),
    ({"DEBUG": "0", "SECRET_KEY": PLACEHOLDER, "ALLOWED_HOSTS": "billing.example.com"},
     "SECRET_KEY is a placeholder"),
    ({"DEBUG": "0", "SECRET_KEY": "short-but-set", "ALLOWED_HOSTS": "10.0.0.5"}, "SECRET_KEY is a placeholder"),
    ({"DEBUG": "0", "SECRET_KEY": "please-change-me-" + secrets.token_urlsafe(40), "ALLOWED_HOSTS": "*"},
     "SECRET_KEY is a placeholder"),
])
def test_settings_refuse_to_serve_a_network_with_debug_on_or_a_placeholder_secret_key(env, refusal):
    result = run(["-c", IMPORT_SETTINGS], **env)
    assert result.returncode != 0
    assert refusal in result.stderr


@pytest.mark.parametrize("env", [
    {},  # `make run` and the tests: DEBUG on, the development key, this machine only
    {"DEBUG": "0", "SECRET_KEY": PLACEHOLDER, "ALLOWED_HOSTS": "localhost,127.0.0.1"},  # `docker compose up` as shipped
    {"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "billing.example.com"},
])
def test_the_development_and_local_defaults_still_start(env):
    result = run(["-c", IMPORT_SETTINGS + "; from django.conf import settings; print(settings.ALLOWED_HOSTS)"], **env)
    assert result.returncode == 0, result.stderr
    if not env:
        assert result.stdout.strip() == "['localhost', '127.0.0.1', '[::1]']"


def test_links_in_emails_point_at_the_port_served_unless_a_public_address_is_set():
    """README: `PORT=8123 make demo` beside `PORT=8123 make run` writes pay links that open."""
    show = IMPORT_SETTINGS + "; from django.conf import settings; print(settings.PUBLIC_BASE_URL)"
    assert run(["-c", show], PORT="8123").stdout.strip() == "http://127.0.0.1:8123"
    assert run(["-c", show], PORT="8123", PUBLIC_BASE_URL="https://billing.example.com/").stdout.strip() == (
        "https://billing.example.com")
