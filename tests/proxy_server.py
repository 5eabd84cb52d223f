"""A forward HTTP proxy on loopback for the tests: it answers every request itself and records it."""

from __future__ import annotations

import trio


async def serve_as_proxy(requests: list[str], task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A forward proxy that answers every request itself: 200 with the requested URL in the page."""

    async def answer(stream: trio.SocketStream) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await stream.receive_some(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode()
        requests.append(line)
        body = f"<title>via proxy</title><p>{line.split()[1]}</p>".encode()
        reply = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
        )
        await stream.send_all(reply % len(body) + body)
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(answer, listeners)
