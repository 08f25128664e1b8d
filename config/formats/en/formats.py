# `2026-10-01` and `2026-10-01 14:05 UTC`, as core/display.py writes days and instants (Django's English default
# is `Oct. 1, 2026, 2:05 p.m.`). Month and year headings (a list's date drill-down) keep Django's.
DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
TIME_FORMAT = "H:i"
