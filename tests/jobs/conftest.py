"""The console's fixtures (staff members signed in), for the Jobs page."""
from tests.console.conftest import console, console_for  # noqa: F401 (fixtures)
