"""Partners generate a client from /openapi/partner.json and it works, unpatched.

As a partner would: fetch the document from a live `serve`, generate a Python client with
openapi-python-client and TypeScript types with openapi-typescript (the versions pyproject.toml
and tests/clients/package-lock.json pin), compile both (compileall and an import; `tsc` in
strict mode with openapi-fetch; both with the generators' default options), then run the partner scripts of tests/clients/ against the
same server: authorize, create (every field, then only the required ones), list, get one, and a
missing item read as the error envelope.
The scripts hold no patch and no non-null assertion; a document that types an answer wrongly
fails to compile or fails at run time here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, unique
from tests.credentials import make_channel

CLIENTS = ROOT / "tests" / "clients"
NODE_MODULES = CLIENTS / "node_modules"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def partner(live_api, admin, tmp_path_factory):
    """A channel selling one package, and the partner document as the live server serves it."""
    channel = make_channel(admin, branches=("v1", "v2"))
    package = admin.execute("INSERT INTO insurance.packages (uid, name) VALUES (%s, 'Travel') RETURNING id, uid",
                            (unique("pkg"),)).fetchone()
    admin.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'Travel')",
                  (package["id"],))
    admin.execute("INSERT INTO insurance.channel_packages (channel_id, package_id) VALUES (%s, %s)",
                  (channel["id"], package["id"]))
    folder = tmp_path_factory.mktemp("partner")
    document = httpx.get(f"{live_api}/openapi/partner.json", timeout=10)
    assert document.status_code == 200, document.text
    (folder / "partner.json").write_bytes(document.content)
    return {"api": live_api, "key": channel["key"], "package": package["uid"], "folder": folder}


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    return done


def check_answers(out: str, policy: str) -> None:
    answers = json.loads(out.strip().splitlines()[-1])
    assert answers["created"] in answers["listed"]
    assert answers["holder"] is True
    assert answers["total"] >= 1
    assert answers["got"] == policy
    assert answers["metadata"] is True
    assert answers["missing"] == "RISK_ITEM_NOT_FOUND"
    assert answers["requestId"]
    assert answers["minimal"] is True, "a body without the optional fields was not created with the defaults"


def test_python_client_generates_compiles_and_runs(partner):
    folder = partner["folder"] / "python"
    config = partner["folder"] / "openapi-python-client.yaml"
    config.write_text("post_hooks: []\npackage_name_override: partner_client\n")
    generated = run([str(BIN / "openapi-python-client"), "generate", "--path", str(partner["folder"] / "partner.json"),
                     "--output-path", str(folder / "partner_client"), "--meta", "none", "--config", str(config)])
    assert "Warning" not in generated.stdout + generated.stderr, generated.stdout + generated.stderr
    run([sys.executable, "-m", "compileall", "-q", str(folder)])
    env = {**os.environ, "PYTHONPATH": str(folder)}
    run([sys.executable, "-c", "import partner_client.api.gateway, partner_client.models"], env=env)
    policy = unique("POL")
    done = run([sys.executable, str(CLIENTS / "partner.py"), partner["api"], partner["key"], partner["package"], policy],
               env=env)
    check_answers(done.stdout, policy)


def node_binary() -> str:
    if not (NODE_MODULES / "typescript").is_dir():
        pytest.fail("the npm tools are missing: run scripts/node-tools.sh (scripts/test.sh does)")
    found = shutil.which("node")
    assert found, "node is missing"
    return found


@pytest.mark.parametrize("name", ["openapi.json", "openapi/holder.json", "openapi/internal.json"])
def test_every_document_generates_clients_that_compile(live_api, tmp_path, name):
    """Every operation of every document: openapi-python-client skips none (a warning says it
    left one out) and its code compiles; openapi-typescript's types pass `tsc` in strict mode."""
    document = httpx.get(f"{live_api}/{name}", timeout=10)
    assert document.status_code == 200, document.text
    (tmp_path / "api.json").write_bytes(document.content)
    (tmp_path / "config.yaml").write_text("post_hooks: []\npackage_name_override: api_client\n")
    generated = run([str(BIN / "openapi-python-client"), "generate", "--path", str(tmp_path / "api.json"),
                     "--output-path", str(tmp_path / "python" / "api_client"), "--meta", "none",
                     "--config", str(tmp_path / "config.yaml")])
    assert "Warning" not in generated.stdout + generated.stderr, generated.stdout + generated.stderr
    run([sys.executable, "-m", "compileall", "-q", str(tmp_path / "python")])
    run([sys.executable, "-c", "import api_client.api, api_client.models"], env={**os.environ, "PYTHONPATH": str(tmp_path / "python")})
    if name == "openapi.json":  # the others are parts of it
        run([node_binary(), str(NODE_MODULES / "openapi-typescript" / "bin" / "cli.js"), str(tmp_path / "api.json"),
             "-o", str(tmp_path / "api.d.ts")])
        run([node_binary(), str(NODE_MODULES / "typescript" / "bin" / "tsc"), "--noEmit", "--strict", "--skipLibCheck", "false",
             "--exactOptionalPropertyTypes", str(tmp_path / "api.d.ts")])


def test_typescript_client_generates_compiles_and_runs(partner):
    node = node_binary()
    folder = partner["folder"] / "typescript"
    folder.mkdir()
    shutil.copy(CLIENTS / "partner.ts", folder)
    shutil.copy(CLIENTS / "tsconfig.json", folder)
    (folder / "package.json").write_text('{"type": "module"}\n')
    (folder / "node_modules").symlink_to(NODE_MODULES)
    run([node, str(NODE_MODULES / "openapi-typescript" / "bin" / "cli.js"), str(partner["folder"] / "partner.json"),
         "-o", str(folder / "partner-api.d.ts")], cwd=folder)
    run([node, str(NODE_MODULES / "typescript" / "bin" / "tsc"), "-p", str(folder)], cwd=folder)
    policy = unique("POL")
    done = run([node, str(folder / "out" / "partner.js"), partner["api"], partner["key"], partner["package"], policy],
               cwd=folder)
    check_answers(done.stdout, policy)
