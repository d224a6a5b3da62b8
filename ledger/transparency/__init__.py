"""What lets others check the log: witnesses' cosignatures and tlog policies, RFC 3161 timestamps, tiles."""
