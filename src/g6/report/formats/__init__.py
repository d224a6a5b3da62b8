"""One reader per format family: each module has ``read(obj_or_text, name, base) -> Report`` and, for JSON
formats, ``fits(obj) -> str | None`` (None when the object has the format's shape, else why not), which
``g6.report.detect`` asks. ``g6.report.read`` is the front door."""
