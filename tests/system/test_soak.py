"""`make soak` (bench/soak.py) fails when an invariant breaks: a short run with a lost item and a
leaking API planted must say exactly those two, and hold the others (webhooks, no 5xx, the worker)."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_a_short_soak_with_a_lost_item_and_a_leak_planted_fails_on_those_two():
    run = subprocess.run([sys.executable, "-m", "bench.soak", "--seconds", "12", "--plant", "lost-item",
                          "--plant", "leak"], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr[-3000:]
    lines = {line.split(":", 1)[0].strip(): line for line in out.splitlines() if line.startswith(("   ok", "   FAILED"))}
    failed = sorted(k.removeprefix("FAILED").strip() for k in lines if k.startswith("FAILED"))
    held = sorted(k.removeprefix("ok").strip() for k in lines if k.startswith("ok"))
    assert failed == ["API RSS flat after warm-up", "every item issued once and SUCCESS"], out
    assert held == ["every webhook delivered once per event", "no 5xx, no request failed",
                    "worker RSS flat after warm-up"], out
    assert "-planted: 0 emission(s)" in out
    assert "soak: 2 invariant(s) broken" in out
