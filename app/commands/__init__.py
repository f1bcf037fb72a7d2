"""Commands of `python -m app` that belong to no single surface: serve, migrate, packages, orders,
outbox, people (a person's data) and audit."""
