"""Shared pieces of the crawler tests."""

import pytest

from crawler.policy import PageVerdict


class HockeyCritic:
    """Accepts pages whose text mentions hockey into 'Sports'; links get priority 0.5."""

    def score_pages(self, pages):
        return [
            PageVerdict("Sports", 0.8, True)
            if "hockey" in p.parsed.text.lower()
            else PageVerdict(None, -0.5, False)
            for p in pages
        ]

    def link_priority(self, page, link, verdict):
        return 0.5

    def link_topic(self, page, verdict):
        return "Sports"


@pytest.fixture
def hockey_critic() -> HockeyCritic:
    return HockeyCritic()
