"""`topicswarm simweb serve --bookmarks-out FILE`: bookmarks a newcomer can import to try a node on the
simulated web (the committed ones point to the real sites, which a node without the Internet cannot
fetch)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading

from simnet.paths import PROJECT_ROOT


def test_served_web_writes_bookmarks_mapped_to_its_hosts(tmp_path):
    out = tmp_path / "bookmarks.html"
    command = [sys.executable, "-m", "node.cli", "simweb", "serve", "--web", "fixture", "--bookmarks-out"]
    child = subprocess.Popen(
        [*command, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    guard = threading.Timer(120, child.kill)  # hang guard: the web starts within seconds
    guard.start()
    try:
        lines = []
        for line in child.stdout:
            lines.append(line)
            if line.startswith("serving"):
                break
    finally:
        guard.cancel()
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    assert any(line.startswith(f"bookmarks {out}") for line in lines), lines
    hrefs = re.findall(r'HREF="([^"]+)"', out.read_text())
    original = (PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html").read_text().count("HREF=")
    assert len(hrefs) == original
    assert all(re.match(r"http://127\.0\.0\.\d+:\d+/", href) for href in hrefs), hrefs
