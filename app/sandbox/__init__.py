"""A sandbox of the external providers (every insurer described beside its adapter, their
identity providers, a chat webhook sink), served by `python -m app sandbox --port P`.

It shares no code with the adapters in app/orchestrator: it reads each insurer's description
(app/orchestrator/insurers/<module>.sandbox.json, data written from the insurer's side; see
descriptions.py) and checks requests against it, so a mistake in an adapter's mapper shows up
as the insurer's refusal here instead of being agreed with.
"""
