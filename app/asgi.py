"""ASGI entry point for uvicorn: `uvicorn app.asgi:app`."""
from app.app import create_app
from app.config import Config
from app.logging import configure

_config = Config.from_env()
configure(_config.log_level)
app = create_app(_config)
