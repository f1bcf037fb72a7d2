"""The README's walkthrough, pasted as a newcomer would: `make run` in one terminal, the block
between the walkthrough markers in another, twice (each run makes fresh names). Only the ports
differ (free ones, through the API and SANDBOX variables the block reads)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

from app.config import SECRET_NAMES
from tests.conftest import ROOT, free_port, start_make_run, stop_make_run, wait_http


def walkthrough() -> str:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", readme, re.DOTALL)
    assert block, "README.md has no walkthrough block"
    return block.group(1)


def helpers() -> str:
    """The block's first lines: its settings and helper functions, before step 1."""
    return walkthrough().split("\n# 1.", 1)[0] + "\n"


def line_after(out: str, prefix: str) -> str:
    found = [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]
    assert found, f"no line starting {prefix!r} in:\n{out}"
    return found[-1]


def test_every_wait_goes_through_wait_for_which_stops_when_its_budget_is_spent():
    """Issue 21: the old loops grepped for `"state":"SUCCESS"`, which the answer never spelled
    that way: they waited their whole 30 s, then went on as if it had worked."""
    block = walkthrough()
    loops = [line for line in block.splitlines() if re.search(r"\b(for|while|until)\b.*\bdo\b", line)]
    assert len(loops) == 1 and "budget" in loops[0], f"a wait loop outside wait_for: {loops}"
    assert "grep -q" not in block, "waits read parsed JSON, never the answer's spacing"
    script = helpers().replace("curl -sSf -o /dev/null \"$API/healthz\" || die", ": || die") + \
        'wait_for 1 "the impossible" false\necho "went on"\n)\n'
    started = time.monotonic()
    shell = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert shell.returncode == 1 and "went on" not in shell.stdout
    assert shell.stderr.startswith("walkthrough: the impossible: not done after 1 s"), shell.stderr
    assert time.monotonic() - started < 10
    ok = subprocess.run(["bash", "-c", helpers().replace("curl -sSf -o /dev/null \"$API/healthz\" || die", ": || die")
                         + 'wait_for 30 "at once" true\necho "done"\n)\n'], cwd=ROOT, capture_output=True, text=True,
                        timeout=30)
    assert ok.returncode == 0 and ok.stdout.strip() == "done", ok.stderr


def test_field_prints_json_and_stops_with_a_clear_line_when_the_key_is_missing():
    prelude = helpers().replace("curl -sSf -o /dev/null \"$API/healthz\" || die", ": || die")
    shell = subprocess.run(["bash", "-c", prelude + """echo '{"data": {"a": {"b": [1, "x"]}, "s": "t"}}' | field data a
echo '{"data": {"s": "t"}}' | field data s
echo '{"success": false, "error": {"code": "DUPLICATE_POLICY"}}' | field data uid
echo "not reached"
)
"""], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert shell.stdout.splitlines() == ['{"b": [1, "x"]}', "t"], "JSON, never a Python dict"
    assert shell.returncode == 1
    assert shell.stderr.strip() == ('walkthrough: no data.uid in this answer: '
                                    '{"success": false, "error": {"code": "DUPLICATE_POLICY"}}')


def test_an_api_that_is_not_running_stops_the_walkthrough_with_one_line():
    shell = subprocess.run(["bash", "-c", walkthrough()], cwd=ROOT, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "API": f"http://127.0.0.1:{free_port()}"})
    assert shell.returncode == 1 and shell.stdout == ""
    assert shell.stderr.splitlines()[-1].startswith("walkthrough: no API at http://127.0.0.1:"), shell.stderr


def test_the_readme_walkthrough_runs_as_written_twice(tmp_path):
    api_port, sandbox_port, smtp_port = free_port(), free_port(), free_port()
    api, sandbox = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{sandbox_port}"
    # A newcomer's development defaults: no secret, no APP_ENV; make run writes the secrets
    # once into the development env file, which every process it starts (and the CLI) reads.
    env = {k: v for k, v in os.environ.items()
           if k not in SECRET_NAMES and k not in ("APP_ENV", "PUBLIC_BASE_URL", "CHAT_WEBHOOK_URL")}
    # No SMTP_URL: it follows SANDBOX_SMTP_PORT, as a newcomer who moved the catcher expects.
    env = {k: v for k, v in env.items() if k != "SMTP_URL"}
    env.update(PORT=str(api_port), SANDBOX_PORT=str(sandbox_port), SANDBOX_SMTP_PORT=str(smtp_port),
               DEV_ENV_FILE=str(tmp_path / ".env.development"))
    run = start_make_run(env)
    shells = []
    try:
        wait_http(f"{api}/readyz", timeout=90, process=run)
        wait_http(f"{sandbox}/_sandbox/health", timeout=30, process=run)
        for _ in range(2):
            shells.append(subprocess.run(["bash", "-c", walkthrough()], cwd=ROOT, capture_output=True, text=True,
                                         timeout=180, env={**env, "API": api, "SANDBOX": sandbox}))
            time.sleep(1.1)  # the block's fresh names are per second
    finally:
        stop_make_run(run)
    policies = []
    for shell in shells:
        out = shell.stdout
        assert shell.returncode == 0, out + shell.stderr
        assert shell.stderr == "", shell.stderr
        assert "{'" not in out and "Traceback" not in out, "no Python dict, no traceback"
        item, policy = re.fullmatch(r"([0-9a-f-]{36}), policy (DEMO-\d+)", line_after(out, "risk item ")).groups()
        policies.append(policy)
        integration = json.loads(line_after(out, "integration: "))      # 2. the policy reached the insurer
        assert integration["state"] == "SUCCESS" and integration["externalId"], integration
        assert json.loads(line_after(out, "PROVIDER_A received: "))["provider"] == "PROVIDER_A"
        assert line_after(out, "partner webhook: ") == "emission.succeeded, verified: true"   # 2. signed, heard
        held = json.loads(line_after(out, "the holder's policies: "))   # 3. the holder sees it
        assert [(p["uid"], p["policy_uid"]) for p in held] == [(item, policy)], held
        page = line_after(out, "back-office: HTTP ")                   # 4. the search opens the policy
        assert re.fullmatch(r"200 http://127\.0\.0\.1:\d+/backoffice/risk-items/\d+", page), page
        assert line_after(out, "now open ") == (f"{api}/backoffice, log in as ops@example.com with the password "
                                                f"'correct horse battery staple', and search for {policy}")
    assert policies[0] != policies[1], "each run makes its own policy"
    assert "ops@example.com created" in shells[0].stdout or "ops@example.com exists: kept" in shells[0].stdout
    assert "back-office user ops@example.com exists: kept" in shells[1].stdout
