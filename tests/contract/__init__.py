"""One suite, every store backend: what `Store` promises, checked on SQLite and PostgreSQL alike."""
