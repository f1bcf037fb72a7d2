"""Insurance back-end: holder post-sales API, partner gateway, insurer integration orchestration."""

import sys

# httpx imports its own command line (click and pygments, about 2 MB) whenever click is
# installed (uvicorn brings it); no process of ours runs it, so it is never loaded.
sys.modules.setdefault("httpx._main", None)
