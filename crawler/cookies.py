"""The fetcher's cookie jar, kept within the bounds browsers keep.

httpx keeps every cookie a response sets and sends it back, which sites that set a session cookie and
redirect need. But a node crawls for weeks: the jar would grow with every host that sets a tracking
cookie, and a hostile host can set a hundred new ones per response, each sent back in every later request
to it. RFC 6265 (section 6.1) asks user agents for at least 50 cookies per domain and 3000 in all; past
those, this drops the host's cookies, or the whole jar (a crawler is logged in nowhere, and a site sets its
session cookie again).
"""

from __future__ import annotations

from http.cookiejar import CookieJar

MAX_COOKIES_PER_HOST = 50
MAX_COOKIES = 3000


def bound_cookie_jar(jar: CookieJar, host: str) -> int:
    """Drop `host`'s cookies (its own and its parent domains') if it holds more than its share, then the
    whole jar if it holds more than `MAX_COOKIES`. Returns how many cookies were dropped."""
    held = len(jar)
    if held <= MAX_COOKIES_PER_HOST:
        return 0
    hosts = [cookie.domain for cookie in jar if _applies_to(cookie.domain, host)]
    if len(hosts) > MAX_COOKIES_PER_HOST:
        for domain in set(hosts):
            jar.clear(domain)
    if len(jar) > MAX_COOKIES:
        jar.clear()
    return held - len(jar)


def _applies_to(domain: str, host: str) -> bool:
    """Whether a cookie of `domain` (".example.org" for a domain cookie) is sent to `host` (http.cookiejar
    files a dotless host's cookies under "HOST.local")."""
    bare = domain.lstrip(".").lower()
    host = host.lower() if "." in host else host.lower() + ".local"
    return host == bare or host.endswith("." + bare)
