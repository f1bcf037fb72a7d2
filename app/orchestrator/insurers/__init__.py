"""One module per insurer: everything the orchestrator knows about it.

A module here declares its adapter as `ADAPTER` (a subclass of base.InsuranceAdapter: its
slug, variants, how a StandardRiskItem maps to its request, its HTTP calls, the credentials
it reads from `integrations.auth_config`, how its answers and errors classify). The registry
finds every module of this package by itself; `python -m app adapters new SLUG` writes a new
one. Beside each module, `<module>.sandbox.json` describes the insurer's side for the
sandbox: data written from the insurer's point of view, never read by the adapter.
"""
