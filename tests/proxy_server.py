"""Proxies on loopback for the tests, HTTP and SOCKS5: they answer every request themselves (a page naming
what was asked) and record it, so no request leaves the machine."""

from __future__ import annotations

import struct

import trio

REPLY = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"


async def _answer_http(stream: trio.SocketStream, requests: list[str]) -> None:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = await stream.receive_some(4096)
        if not chunk:
            return
        head += chunk
    line = head.split(b"\r\n", 1)[0].decode()
    requests.append(line)
    body = f"<title>via proxy</title><p>{line.split()[1]}</p>".encode()
    await stream.send_all(REPLY % len(body) + body)
    await stream.aclose()


async def _serve(handler, task_status) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handler, listeners)


async def serve_as_proxy(requests: list[str], task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A forward HTTP proxy: records each request line (absolute form) and answers 200."""
    await _serve(lambda stream: _answer_http(stream, requests), task_status)


async def _receive_exactly(stream: trio.SocketStream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            raise trio.BrokenResourceError("closed mid-handshake")
        data += chunk
    return data


async def serve_as_socks_proxy(requests: list[str], task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A SOCKS5 proxy without authentication (RFC 1928): records "CONNECT host:port" and then the request
    line sent through the tunnel, and answers it itself."""

    async def tunnel(stream: trio.SocketStream) -> None:
        _, methods = await _receive_exactly(stream, 2)
        await _receive_exactly(stream, methods)
        await stream.send_all(b"\x05\x00")  # no authentication
        _, command, _, kind = await _receive_exactly(stream, 4)
        if kind == 3:  # a domain name: the proxy resolves it
            host = (await _receive_exactly(stream, (await _receive_exactly(stream, 1))[0])).decode()
        else:
            host = "ip:" + (await _receive_exactly(stream, 4 if kind == 1 else 16)).hex()
        (port,) = struct.unpack("!H", await _receive_exactly(stream, 2))
        requests.append(f"CONNECT {host}:{port}" if command == 1 else f"command {command}")
        await stream.send_all(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")
        await _answer_http(stream, requests)

    await _serve(tunnel, task_status)
