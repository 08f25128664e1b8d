"""The demo book (`manage.py seed_demo`, `make demo`): a realistic test book of a demo organization, written
through the same service functions the API calls. `book.py` describes it, `usage.py` draws its 90 days of usage,
`seed.py` writes it (docs/quickstart.md)."""
