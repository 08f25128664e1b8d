"""Writes of the billing resources, one function per use case (`<entity>_<verb>`, keyword-only, `book` first)."""
