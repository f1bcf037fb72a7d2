"""The ASGI wrapper around the sandbox's Falcon app: what a route cannot do by itself."""
from __future__ import annotations

import asyncio

import falcon.asgi

from app.sandbox.providers import IN_FLIGHT, RESET, TRICKLE
from app.sandbox.state import State


class SandboxASGI:
    """The Falcon app behind what a route cannot do itself: close the connection without an
    answer, trickle an answer, and know when the client hung up (a request stops counting as
    in flight then, as it would at a real provider whose client went away)."""

    def __init__(self, app: falcon.asgi.App, state: State) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        hung_up = asyncio.Event()
        watcher: asyncio.Task | None = None

        async def watch() -> None:  # the body is read: the next message is the hang-up
            while (await receive())["type"] != "http.disconnect":
                pass
            hung_up.set()

        async def receive_body():
            nonlocal watcher
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body") and watcher is None:
                watcher = asyncio.create_task(watch())
            elif message["type"] == "http.disconnect":
                hung_up.set()
            return message

        async def answer(message) -> None:
            if scope.get(RESET):
                return
            if message["type"] == "http.response.body" and scope.get(TRICKLE):
                body = message.get("body", b"")
                pause = scope[TRICKLE] / max(1, len(body))
                for i in range(len(body)):
                    if hung_up.is_set():
                        return
                    await send({"type": "http.response.body", "body": body[i:i + 1], "more_body": True})
                    await asyncio.sleep(pause)
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        app = asyncio.create_task(self.app(scope, receive_body, answer))
        hang_up = asyncio.create_task(hung_up.wait())
        try:
            await asyncio.wait({app, hang_up}, return_when=asyncio.FIRST_COMPLETED)
            if scope.get(IN_FLIGHT):
                self.state.leave(scope.pop(IN_FLIGHT))  # answered, or the client went away
            if scope.get(RESET):
                _abort(send)
                await asyncio.sleep(0.01)  # uvicorn sees the hang-up and sends no 500 of its own
            await app
        finally:
            if scope.get(IN_FLIGHT):
                self.state.leave(scope.pop(IN_FLIGHT))
            for task in (hang_up, watcher):
                if task is not None:
                    task.cancel()


def _abort(send) -> None:
    """Close the client's connection at once, no answer: through uvicorn's transport, which
    its send() is bound to (the sandbox always runs under uvicorn)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError("reset needs uvicorn's transport")
    transport.abort()
