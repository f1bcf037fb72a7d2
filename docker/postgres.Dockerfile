# PostgreSQL 15 with pg_cron and pgTAP, as the service expects in production and CI.
FROM postgres:15-bookworm
# Unpinned on purpose: Debian's security updates for the same major version are wanted.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15-cron postgresql-15-pgtap \
 && rm -rf /var/lib/apt/lists/*
COPY docker/postgres-init.sh /docker-entrypoint-initdb.d/10-insurance.sh
CMD ["postgres", "-c", "shared_preload_libraries=pg_cron", "-c", "cron.database_name=postgres"]
