# syntax=docker/dockerfile:1
# The API (and, with another command, the worker or the sandbox) as a non-root user.

# The API reference's viewer (/docs): swagger-ui-dist at the version of the lock file; only the
# four files the page loads go on (app/apidocs/__init__.py ASSETS).
FROM node:20-bookworm-slim AS viewer
WORKDIR /viewer
COPY app/apidocs/package.json app/apidocs/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY --from=viewer /viewer/node_modules/swagger-ui-dist/swagger-ui.css \
     /viewer/node_modules/swagger-ui-dist/swagger-ui-bundle.js \
     /viewer/node_modules/swagger-ui-dist/swagger-ui-standalone-preset.js \
     /viewer/node_modules/swagger-ui-dist/favicon-32x32.png \
     ./app/apidocs/node_modules/swagger-ui-dist/
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim-bookworm
RUN useradd --create-home --uid 10001 insurance
WORKDIR /srv
COPY --from=build /install /usr/local
COPY sqitch.plan sqitch.conf ./
COPY sql ./sql
ENV APP_ENV=production HOST=0.0.0.0 PORT=8000 SQITCH_PLAN=/srv/sqitch.plan
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\", \"8000\")}/healthz', timeout=2)"]
CMD ["python", "-m", "app", "serve"]
