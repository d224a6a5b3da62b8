"""What a ledger is kept on: the protocol a backend provides (rows), SQLite and PostgreSQL, a ledger opened by URL."""
