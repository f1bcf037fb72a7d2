"""`python -m app.openapi`: the whole document (JSON), `... partner|holder|internal`: one
audience's, `... error-table`: docs/api.md's table of the error codes."""
import sys

import orjson

from app.openapi import AUDIENCES, error_table, for_audience, load

args = sys.argv[1:]
if args == ["error-table"]:
    print(error_table(), end="")
elif not args or (len(args) == 1 and args[0] in AUDIENCES):
    document = load()
    document["servers"] = [{"url": "/"}]
    if args:
        document = for_audience(document, args[0])
    sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
else:
    sys.exit(f"usage: python -m app.openapi [{'|'.join(AUDIENCES)}|error-table]")
