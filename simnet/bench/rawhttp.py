"""The load generators' minimal HTTP/1.1 client: one response read off a keep-alive connection.

Much cheaper per request than a crawler's client, so a load generator measures the server, not itself.
"""

from __future__ import annotations

import trio


async def read_response(
    stream: trio.SocketStream, buffer: bytes, chunk: int = 65536
) -> tuple[bytes, int, bytes] | None:
    """(head, body length, bytes past the body) of the next response, `buffer` being what was already
    received; None when the server closed the connection first."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(chunk)
        if not data:
            return None
        buffer += data
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buffer) < length:
        data = await stream.receive_some(chunk)
        if not data:
            return None
        buffer += data
    return head, length, buffer[length:]
