"""ASGI entry point for uvicorn: `uvicorn app.asgi:app`."""
import sys

# As in app/__main__.py: structlog would load rich and greenlet wherever the test tools
# installed them; a served process needs neither (about 6 MB).
for _optional in ("rich", "greenlet"):
    sys.modules.setdefault(_optional, None)

from app.app import create_app
from app.config import Config, ConfigError
from app.logging import configure

_config = Config.from_env(require_mode=True)  # as `serve`: never a guessed mode
if _problem := _config.mail_problem():  # as `serve`: production names its mail server
    raise ConfigError(f"production refuses to start: {_problem}")
configure(_config.log_level)
app = create_app(_config)
