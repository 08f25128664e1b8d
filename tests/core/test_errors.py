"""Every error class of the API declares its code; the body shows it only where the interface does."""
import importlib
import pkgutil

import pytest
from django.conf import settings

from core.errors import ApiError, BadRequest, KeyRevoked, NotFound, RateLimited

# The service's own packages (the installed apps that live in this repository), minus what never defines errors.
SKIPPED = ("migrations", "management", "templates")


def _import_every_module():
    """Import each module of the service's apps, so that every ApiError subclass is defined."""
    for app in settings.INSTALLED_APPS:
        root = app.split(".")[0]
        try:
            package = importlib.import_module(root)
        except ImportError:
            continue
        path = getattr(package, "__path__", None)
        if not path or ".venv" in path[0] or "site-packages" in path[0]:
            continue
        for module in pkgutil.walk_packages(path, prefix=f"{root}."):
            if not any(part in SKIPPED for part in module.name.split(".")):
                importlib.import_module(module.name)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_error_class_declares_a_code():
    _import_every_module()
    classes = [cls for cls in _subclasses(ApiError) if not cls.__module__.startswith("tests.")]
    names = {cls.__name__ for cls in classes}
    assert {"EmailNotSent", "PaymentProviderError", "LocalCheckoutDisabled"} <= names  # the walk found the apps'
    missing = [f"{cls.__module__}.{cls.__name__}" for cls in [ApiError, *classes]
               if not isinstance(cls.code, str) or not cls.code.strip()]
    assert not missing, f"error classes without a default code: {missing}"


@pytest.mark.parametrize(("error", "body"), [
    (BadRequest("name: This field is required."), {"message": "name: This field is required."}),
    (NotFound("Customer not found"), {"message": "Customer not found"}),
    (BadRequest("bad", code="unknown_field"), {"message": "bad", "code": "unknown_field"}),
    (KeyRevoked("revoked"), {"message": "revoked", "code": "key_revoked"}),
    (RateLimited("slow down", retry_after=3, code="too_many_auth_failures"),
     {"message": "slow down", "code": "too_many_auth_failures"}),
])
def test_the_body_shows_a_code_only_where_the_interface_does(error, body):
    assert error.body() == body
    assert error.code  # the generic classes still carry theirs, out of the body


def test_a_raise_that_names_its_code_overrides_the_default():
    assert (BadRequest("x").code, BadRequest("x", code="bad_shape").code) == ("bad_request", "bad_shape")


@pytest.mark.parametrize("path", ["/v1/customers", "/admin/", "/portal/some-token"])
def test_a_host_the_deployment_does_not_serve_is_a_json_400_on_every_route(client, path):
    """Django refuses it before any view (ALLOWED_HOSTS); its own answer was an HTML page."""
    response = client.get(path, HTTP_HOST="elsewhere.example")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json() == {"message": "Bad request: this service does not answer to the Host header sent."}
