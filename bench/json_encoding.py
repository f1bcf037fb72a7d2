"""What `app.responses.send_raw` pays to encode SQL-built JSON the API's one way (compact):
orjson decodes the text PostgreSQL printed and encodes it again. Run it with
`.venv/bin/python -m bench.json_encoding`; compare the figure with a route's CPU per request
(`make bench-gateway`, `make bench-postsales` print it)."""
from __future__ import annotations

import json
import timeit

from app.responses import compact

ITEM = {"id": 123, "uid": "6f1c1c1e-8a0b-4c7c-9a3e-0d7c9f0e1a2b", "policy_uid": "DEMO-0001",
        "package": {"uid": "travel-demo", "name": "Travel demo"}, "status": "active", "variant": "travel",
        "insured_subject": {"name": "Ada Lovelace", "email": "ada@example.com"},
        "metadata": {"integration": {"state": "SUCCESS", "externalId": "PA-123456", "emissionId": 55, "error": None}},
        "created_at": "2026-11-25T15:00:00.123456+00:00", "updated_at": "2026-11-25T15:00:00.123456+00:00",
        "beneficiaries": [{"id": 1, "name": "Ada Lovelace", "email": "ada@example.com", "document": None,
                           "relationship": None, "share": 100, "isHolder": True}]}


def main() -> None:
    for count in (1, 3, 10, 100):
        text = json.dumps({"items": [ITEM] * count, "total": count})  # jsonb's own spacing
        runs = max(200, 20_000 // count)
        seconds = min(timeit.repeat(lambda text=text: compact(text), number=runs, repeat=5)) / runs
        print(f"{count:>3} items, {len(text):>6} bytes: {seconds * 1e6:7.1f} us per answer")


if __name__ == "__main__":
    main()
