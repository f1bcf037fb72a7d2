"""The worker, one wing (docs/architecture.md "The worker"): `queue` makes every SQL call of the
outbox (claim, record, release), `deliverers` and `webhooks` send rows, one shape for each kind
(`deliver(rows) -> outcomes`), `worker` is the loop between them, `build` makes them all from
the settings (`build_worker`), and `commands` holds `worker`, `outbox list` and `outbox retry`."""
