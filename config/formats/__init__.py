"""Dates as the console writes them everywhere (core/display.py), for the pages Django itself renders: a row's
History, the admin's read-only date fields."""
