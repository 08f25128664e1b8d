"""Lint of the Dockerfile and docker-compose.yml (images cannot be built here), kept in step with the
Makefile's gunicorn and celery commands and with the settings' environment variables."""
import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("migrate", "web", "worker", "beat")
REQUIRED_ENV = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "PUBLIC_BASE_URL"}


def logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order."""
    instructions = []
    for line in logical_lines((ROOT / "Dockerfile").read_text()):
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def instruction(name: str) -> list[str]:
    return [arguments for keyword, arguments in dockerfile() if keyword == name]


def makefile_command(program: str) -> list[str]:
    """The Makefile recipe's command line of `program` (gunicorn, celery) from the program on, with
    `$(BIN)/` dropped and make variables written as shell ones (`$(PORT)` -> `${PORT}`)."""
    for line in logical_lines((ROOT / "Makefile").read_text()):
        match = re.search(rf"(?:\$\(BIN\)/)?{program}\b.*", line)
        if match and not line.startswith(".PHONY"):
            return shlex.split(re.sub(r"\$\((\w+)\)", r"${\1}", match.group(0).replace("$(BIN)/", "")))
    raise AssertionError(f"no {program} command in the Makefile")


def settings_env_names() -> set[str]:
    """Every environment variable config/settings.py reads."""
    source = (ROOT / "config" / "settings.py").read_text()
    return set(re.findall(r"""(?:environ\.get|env_bool|env_int|env_list)\(\s*["'](\w+)["']""", source))


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


# --- Dockerfile

def test_dockerfile_builds_from_python_311_slim_with_a_pinned_tag():
    [base] = instruction("FROM")
    assert base == "python:3.11-slim"


def test_dockerfile_runs_as_a_non_root_user():
    users = instruction("USER")
    assert users and users[-1] not in {"root", "0", "0:0"}
    keywords = [keyword for keyword, _ in dockerfile()]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")  # nothing runs as root after


def test_dockerfile_installs_requirements_and_collects_static_files_with_a_build_time_secret():
    runs = instruction("RUN")
    assert any("pip install -r requirements.txt" in run for run in runs)
    [collect] = [run for run in runs if "collectstatic" in run]
    assert "SECRET_KEY=" in collect  # DEBUG=0 settings refuse to load without one
    assert not [arguments for arguments in instruction("ENV") if "SECRET_KEY" in arguments]  # never baked in


def test_dockerfile_exposes_the_port_and_checks_healthz():
    assert instruction("EXPOSE") == ["8000"]
    assert any("PORT=8000" in arguments for arguments in instruction("ENV"))
    [healthcheck] = instruction("HEALTHCHECK")
    assert "/healthz" in healthcheck and "CMD" in healthcheck


def test_dockerfile_gunicorn_command_matches_make_run_on_all_interfaces():
    [command] = instruction("CMD")
    words = shlex.split(command)
    words = words[1:] if words[0] == "exec" else words
    make_run = [word.replace("${HOST}", "0.0.0.0") for word in makefile_command("gunicorn")]
    assert words == make_run


# --- docker-compose.yml

def test_compose_has_the_services_with_pinned_images(compose):
    services = compose["services"]
    assert set(services) == {*APP_SERVICES, "db", "redis"}
    assert services["db"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    for name in APP_SERVICES:
        assert services[name]["build"] == "." and not services[name]["image"].endswith(":latest")


def test_compose_app_services_get_the_contract_environment(compose):
    known = settings_env_names() | {"WEB_CONCURRENCY"}  # read by gunicorn
    for name in APP_SERVICES:
        environment = compose["services"][name]["environment"]
        assert REQUIRED_ENV <= set(environment), name
        assert set(environment) <= known, f"{name}: {set(environment) - known} are not read by the settings"
        assert environment["DEBUG"] == "0"
        assert "@db:5432/" in environment["DATABASE_URL"] and environment["REDIS_URL"].startswith("redis://redis:")


def test_compose_migrates_and_loads_the_catalog_once_before_the_app_starts(compose):
    services = compose["services"]
    command = " ".join(services["migrate"]["command"])
    assert "manage.py migrate" in command and "manage.py load_catalog" in command
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert services["web"]["depends_on"]["db"] == {"condition": "service_healthy"}
    assert services["migrate"]["depends_on"]["db"] == {"condition": "service_healthy"}


def test_compose_web_serves_the_image_gunicorn_command(compose):
    web = compose["services"]["web"]
    assert "command" not in web
    assert web["ports"] == ["${PORT:-8000}:8000"]


def test_compose_worker_and_beat_split_make_worker(compose):
    make_worker = makefile_command("celery")
    assert "--beat" in make_worker  # `make worker` embeds the scheduler; compose runs it once, apart
    services = compose["services"]
    assert services["worker"]["command"] == [word for word in make_worker if word != "--beat"]
    beat = services["beat"]["command"]
    assert beat[:4] == ["celery", "-A", "config", "beat"]
    assert beat[4:6] == make_worker[make_worker.index("--loglevel"):][:2]


def test_compose_has_healthchecks_and_named_volumes(compose):
    services = compose["services"]
    for name in ("db", "redis", "worker"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("migrate", "beat"):  # not servers: the image's HTTP check does not apply
        assert services[name]["healthcheck"] == {"disable": True}
    used = {volume.split(":")[0] for service in services.values() for volume in service.get("volumes", [])}
    assert used == set(compose["volumes"]) == {"pgdata", "redisdata", "mail"}
