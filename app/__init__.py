"""Insurance back-end: holder post-sales API, partner gateway, insurer integration orchestration."""
