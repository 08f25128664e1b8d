"""Production settings (DEBUG off): refuse the development SECRET_KEY; pass `manage.py check --deploy`."""
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
