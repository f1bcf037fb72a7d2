"""The orchestrator: StandardRiskItem, insurer adapters by provider slug, outcome classification."""
