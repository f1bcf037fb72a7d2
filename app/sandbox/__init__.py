"""A sandbox of the external providers (PROVIDER_A, PROVIDER_B, MAIL_PROVIDER, the identity
provider, a chat webhook sink), served by `python -m app sandbox --port P`.

It shares no code with the adapters in app/orchestrator: it checks requests against its own
description of each provider's API (app/sandbox/providers.py), so a mistake in an adapter's
mapper shows up as a 400 here instead of being agreed with.
"""
