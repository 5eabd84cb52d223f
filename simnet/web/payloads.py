"""Bodies of the fault pages: huge pages, gzip bombs, binary junk and endless calendar traps."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterator
from functools import lru_cache

HUGE_DEFAULT = 32 * 1024 * 1024
BOMB_DEFAULT = 256 * 1024 * 1024
CHUNK = 64 * 1024
HUGE_CHUNK = (b"<p>" + b"All work and no play makes a crawler a dull crawler. " * 20 + b"</p>\n") * 60


def huge_chunks(size: int) -> Iterator[bytes]:
    """`size` bytes of an endless HTML page, in chunks."""
    head = b"<!DOCTYPE html><html><head><title>A very long page</title></head><body>\n"
    yield head[:size]
    left = size - len(head)
    while left > 0:
        chunk = HUGE_CHUNK[:left]
        yield chunk
        left -= len(chunk)


@lru_cache(maxsize=4)
def gzip_bomb(inflated_size: int) -> bytes:
    """A gzip stream of an HTML page that inflates to `inflated_size` bytes (about 1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = b"<!DOCTYPE html><html><body><p>"
    parts = [compressor.compress(head)]
    block = b" " * (1 << 20)
    left = inflated_size - len(head)
    while left > 0:
        parts.append(compressor.compress(block[:left]))
        left -= len(block)
    parts.append(compressor.flush())
    return b"".join(parts)


def binary_junk(path: str, size: int = 16384) -> bytes:
    """Deterministic pseudo-random bytes (for a binary served as text/html)."""
    seed = hashlib.sha256(path.encode()).digest()
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        counter += 1
    return bytes(out[:size])


CALENDAR_PATH = re.compile(r"(\d{4})/(\d{1,2})(?:/(\d{1,2}))?")


def calendar_page(prefix: str, path: str) -> bytes:
    """A calendar page whose links lead to ever newer months and days: an infinite URL space."""
    match = CALENDAR_PATH.match(path[len(prefix) :])
    year, month = (int(match.group(1)), int(match.group(2))) if match else (2024, 1)
    month = min(max(month, 1), 12)
    day = int(match.group(3)) if match and match.group(3) else None

    def month_url(y: int, m: int) -> str:
        y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
        return f"{prefix}{y:04d}/{m:02d}/"

    title = f"Events {year:04d}-{month:02d}" + (f"-{day:02d}" if day else "")
    days = "".join(
        f'<li><a href="{prefix}{year:04d}/{month:02d}/{d:02d}/">{d}</a></li>' for d in range(1, 29)
    )
    body = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f'<p><a href="{month_url(year, month - 1)}">previous month</a> '
        f'<a href="{month_url(year, month + 1)}">next month</a> '
        f'<a href="{month_url(year + 1, month)}">next year</a></p><ul>{days}</ul>'
        "<p>No events are planned for this period.</p></body></html>"
    )
    return body.encode()


def trap_link(prefix: str) -> bytes:
    return f'<p><a href="{prefix}2024/01/">Calendar of events</a></p>'.encode()


def with_trap_link(body: bytes, prefix: str) -> bytes:
    """The page with a link into the trap just before its closing body tag."""
    return insert_before_body_end(body, trap_link(prefix))


def insert_before_body_end(body: bytes, fragment: bytes) -> bytes:
    index = body.lower().rfind(b"</body")
    return body + fragment if index == -1 else body[:index] + fragment + body[index:]
