"""The back-office shares the dashboard's users, sessions and emission factory."""
from tests.trpc.conftest import PASSWORD, login, make_emission, make_user, session  # noqa: F401
