# The two commands: `make run` and `make test`. Both set the machine up first (idempotent).
.PHONY: setup run test migrate bench clean bench-gateway

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

## Gateway: authorize and GET /v1/risk-items against the bare endpoint, in the same run.
bench-gateway: setup
	@.venv/bin/python -m bench.gateway
