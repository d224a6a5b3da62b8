"""The checked HTTP edge: every request to a checked public address, paced, bounded, redacted, its TLS kept."""
