"""Reports in, verdicts out (``g6 report check``): a research report's citations, read from the forms the field
produces, each resolved to evidence in the home and checked against the bytes.

``model`` holds what every reader gives the check (a ``Report`` of ``ReportCitation`` items); the readers of
each format and the check itself live in their own modules of this package.
"""
