"""Text cells of CSV files that people open in spreadsheet programs."""

# A cell starting with one of these is read as a formula by spreadsheet programs (CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: str | None) -> str:
    """The text, quoted with a leading apostrophe when a spreadsheet would run it as a formula."""
    value = value or ""
    return f"'{value}" if value.startswith(FORMULA_PREFIXES) else value
