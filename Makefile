# The two commands: `make run` and `make test`. Both set the machine up first (idempotent).
.PHONY: setup run test migrate bench clean

PORT ?= 8000

setup:
	@scripts/setup.sh

## Deploy the migrations, then serve the API on 127.0.0.1:$(PORT).
run: setup
	@scripts/run.sh

## The whole suite on a throwaway database (sqitch round trip, pgTAP, pytest).
test:
	@scripts/test.sh

migrate: setup
	@.venv/bin/python -m app migrate

clean:
	rm -rf .venv .pytest_cache build *.egg-info

## Emissions per second end to end (1 and 2 workers) against procrastinate and pgbench.
bench-emissions: setup
	@.venv/bin/pip install -q -e '.[bench]'
	@.venv/bin/python bench/emissions.py
