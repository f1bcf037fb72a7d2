"""The worker's rooms (docs/architecture.md "The worker"): `queue` makes every SQL call of the
outbox (claim, record, release), `deliverers` send rows, one shape for each kind
(`deliver(rows) -> outcomes`); app/worker.py is the loop between them."""
