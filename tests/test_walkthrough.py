"""The README's walkthrough, pasted as a newcomer would: `make run` in one terminal, the block
between the walkthrough markers in another. Only the ports differ (free ones, through the
API and SANDBOX variables the block reads)."""
from __future__ import annotations

import os
import re
import subprocess

from app.config import SECRET_NAMES
from tests.conftest import ROOT, free_port, start_make_run, stop_make_run, wait_http


def walkthrough() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", readme, re.S)
    assert block, "README.md has no walkthrough block"
    return block.group(1)


def test_the_readme_walkthrough_runs_as_written(admin, tmp_path):
    # The block creates fixed names (a newcomer's database is fresh): this run's database may
    # hold them from an earlier run of this test only.
    admin.execute("DELETE FROM insurance.risk_items WHERE policy_uid = 'DEMO-0001'")
    api_port, sandbox_port, smtp_port = free_port(), free_port(), free_port()
    api, sandbox = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{sandbox_port}"
    # A newcomer's development defaults: no secret, no APP_ENV; make run writes the secrets
    # once into the development env file, which every process it starts (and the CLI) reads.
    env = {k: v for k, v in os.environ.items()
           if k not in SECRET_NAMES and k not in ("APP_ENV", "PUBLIC_BASE_URL", "CHAT_WEBHOOK_URL")}
    env.update(PORT=str(api_port), SANDBOX_PORT=str(sandbox_port), SANDBOX_SMTP_PORT=str(smtp_port),
               SMTP_URL=f"smtp://127.0.0.1:{smtp_port}", DEV_ENV_FILE=str(tmp_path / ".env.development"))
    run = start_make_run(env)
    try:
        wait_http(f"{api}/readyz", timeout=90, process=run)
        wait_http(f"{sandbox}/_sandbox/health", timeout=30, process=run)
        shell = subprocess.run(["bash", "-c", walkthrough()], cwd=ROOT, capture_output=True, text=True,
                               timeout=180, env={**env, "API": api, "SANDBOX": sandbox})
    finally:
        stop_make_run(run)
    out = shell.stdout
    assert shell.returncode == 0, out + shell.stderr
    assert "error" not in shell.stderr.lower(), shell.stderr
    assert re.search(r"risk item [0-9a-f-]{36}", out), out
    assert "'state': 'SUCCESS'" in out, out                      # 2. the policy reached the insurer
    assert "'provider': 'PROVIDER_A'" in out, out
    assert "emission.succeeded verified: True" in out, out       # 2. the partner heard of it, signed
    assert re.search(r'"policy_?[uU]id"\s*:\s*"DEMO-0001"', out), out   # 3. the holder sees it
    assert "back-office: HTTP 200" in out, out                   # 4. the back-office opens
