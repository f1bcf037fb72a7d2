# The two commands: `make run` and `make test`. Both set the machine up first (idempotent).
SHELL := /bin/bash
.PHONY: setup run test ha-up ha-down backup-up migrate sandbox clean lint-openapi sql-reference schema privacy-doc \
        bench bench-postsales bench-gateway bench-orchestrator bench-emissions bench-trpc bench-scale bench-statements \
        bench-server-limits bench-compare bench-archiving soak

PORT ?= 8000

setup:
	@scripts/setup.sh

## Deploy the migrations, then serve the API on 127.0.0.1:$(PORT) with the worker and the sandbox.
run: setup
	@scripts/run.sh

## A pg_auto_failover formation on this machine: monitor 6000, nodes 6001 and 6002, under /tmp/insurance-ha
## (HA_DIR, HA_*_PORT: scripts/ha.sh); prints the URLs. `HA=1 make run` runs the stack on it.
ha-up: setup
	@scripts/ha.sh up

ha-down:
	@scripts/ha.sh down

## WAL archiving to a pgBackRest repository and a first full backup of the cluster ADMIN_DATABASE_URL
## names (`make run`'s): one restart, announced on a line before it; idempotent (docs/operations.md
## "Backups and restore"; BACKUP_* settings in docs/configuration.md).
backup-up: setup
	@.venv/bin/python -m app backup up

## The whole suite on a throwaway database (sqitch round trip, pgTAP, pytest).
test:
	@scripts/test.sh

## Commands run in an explicit mode: development here unless APP_ENV says otherwise.
migrate: setup
	@APP_ENV=$${APP_ENV:-development} .venv/bin/python -m app migrate

## The provider sandbox alone, on $(SANDBOX_PORT) (default 8100).
sandbox: setup
	@APP_ENV=$${APP_ENV:-development} .venv/bin/python -m app sandbox

## redocly lint on the partner OpenAPI document (a manual check: npx downloads @redocly/cli).
lint-openapi: setup
	@tmp=$$(mktemp -d) && .venv/bin/python -m app openapi partner > $$tmp/partner.json && \
	  npx --yes @redocly/cli@2.11.1 lint $$tmp/partner.json; rc=$$?; rm -rf $$tmp; exit $$rc

## docs/sql-reference.md from the catalog of a throwaway database (commit the result).
sql-reference: setup
	@.venv/bin/python scripts/sql_reference.py

## sql/schema/ (the schema a fresh deploy makes) and docs/sql-reference.md, from one throwaway
## deploy: run it after every SQL change and commit its diff.
schema: setup
	@.venv/bin/python scripts/sql_schema.py

## docs/privacy.md's map of personal data from insurance.personal_data, on a throwaway database (commit the result).
privacy-doc: setup
	@.venv/bin/python scripts/privacy_doc.py

clean:
	rm -rf .venv .pytest_cache build *.egg-info

# Benchmarks: each measures its yardstick in the same run and prints the ratio.
BENCHES = bench-postsales bench-gateway bench-orchestrator bench-emissions bench-trpc bench-scale bench-statements
## Every benchmark, one after the other; a missed goal does not stop the others (the exit status tells).
## Each prints its figures and its same-run yardsticks on one BENCH-RECORD line: all of them go
## to bench/results.json (not committed).
bench:
	@rc=0; out=$$(mktemp); \
	  for target in $(BENCHES); do $(MAKE) --no-print-directory $$target 2>&1 | tee -a $$out; \
	    [ "$${PIPESTATUS[0]}" = 0 ] || rc=1; done; \
	  .venv/bin/python -m bench.record collect $$out bench/results.json; rm -f $$out; exit $$rc

## A mixed load at a steady rate for MINUTES (default 10): partners, holders, the back-office, webhooks, the
## worker draining; throughput and p99 per operation every minute, then the invariants (exit 1 when one broke).
## `make soak MINUTES=60 ARGS="--rate 0.5"`; see bench/soak.py.
soak: setup
	@.venv/bin/python -m bench.soak --minutes $(or $(MINUTES),10) $(ARGS)

## Two commits side by side, each bench alternately in A and B (B defaults to this tree as it is):
## `make bench-compare A=main B=HEAD BENCHES_ONLY=postsales,gateway ROUNDS=2`; writes bench/compare.json.
bench-compare: setup
	@test -n "$(A)" || { echo "usage: make bench-compare A=<commit> [B=<commit>] [BENCHES_ONLY=a,b] [ROUNDS=2]"; exit 2; }
	@.venv/bin/python -m bench.record compare $(A) $(or $(B),.) --rounds $(or $(ROUNDS),2) \
	  $(if $(BENCHES_ONLY),--benches $(BENCHES_ONLY)) $(if $(ARGS),-- $(ARGS))

## GET /api/postsales/v1/me/risk-items against the bare Falcon + asyncpg yardstick.
bench-postsales: setup
	@.venv/bin/python -m bench.postsales

## Gateway: authorize and GET /v1/risk-items against the bare endpoint.
bench-gateway: setup
	@.venv/bin/python -m bench.gateway

## Emissions per second through the orchestrator to the provider sandbox (1, 16, 64 in flight).
bench-orchestrator: setup
	@.venv/bin/python bench/orchestrator.py

## Emissions per second end to end (1 and 2 workers) against procrastinate, Graphile Worker (npm) and pgbench;
## `make bench-emissions ARGS="--api-workers 2"` also runs them with two API processes.
bench-emissions: setup
	@.venv/bin/python -c 'import procrastinate' 2>/dev/null || .venv/bin/pip install -q -e '.[bench]'
	@test -x bench/graphile/node_modules/.bin/graphile-worker || \
	  npm ci --prefix bench/graphile --no-audit --no-fund --loglevel=error
	@.venv/bin/python bench/emissions.py $(ARGS)

## tRPC queries behind a session cookie against the bare endpoint.
bench-trpc: setup
	@.venv/bin/python -m bench.trpc

## The request limits of app/server.py against uvicorn's plain httptools (and h11), on /healthz.
bench-server-limits: setup
	@.venv/bin/python -m bench.server_limits

## Each operation (claim, record, every list page, a scrape) on an empty database and on one
## filled as a year of production fills it (a million rows of each kind), side by side;
## `make bench-scale ARGS="--scale 0.1"` for a quick run.
bench-scale: setup
	@.venv/bin/python -m bench.scale $(ARGS)

## Emissions per second with WAL archiving (pgBackRest) off and on, alternated, on a throwaway cluster
## (ITEMS=1500 ROUNDS=3; needs root, as the backup drill).
bench-archiving: setup
	@.venv/bin/python bench/archiving.py

## SQL statements and round trips that one emission costs (auto_explain counts the nested ones).
bench-statements: setup
	@.venv/bin/python -m bench.statements $(ARGS)
