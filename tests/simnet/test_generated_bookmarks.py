"""Bookmarks files of many nested topics generated from a web: the topic count asked for, a few bookmarks per
folder, every URL one the served web maps."""

from __future__ import annotations

from crawler.taxonomy import parse_bookmarks
from simnet.web import WebLayout, load_web
from simnet.web.bookmarks import generated_bookmarks, generated_taxonomy, main


def test_a_generated_file_holds_the_topics_asked_for_nested_with_mapped_bookmarks():
    corpus = load_web("fixture")
    layout = WebLayout(corpus, 8080)
    text = generated_bookmarks(corpus, 12, per_topic=3, seed=1)
    taxonomy = parse_bookmarks(text)
    assert len(taxonomy.topics) == 12
    assert any("/" in key for key in taxonomy.topics)  # nested folders
    per_topic: dict[str, int] = {}
    for doc in taxonomy.documents:
        per_topic[doc.topic] = per_topic.get(doc.topic, 0) + 1
        assert layout.map_upstream(doc.url), doc.url  # `simweb serve --bookmarks-out` can point it home
    assert max(per_topic.values()) <= 3 and set(per_topic) <= set(taxonomy.topics)
    assert generated_bookmarks(corpus, 12, per_topic=3, seed=1) == text  # the seed decides


def test_served_urls_and_a_web_too_small_for_the_count(tmp_path, capsys):
    corpus = load_web("fixture")
    layout = WebLayout(corpus, 8080)
    taxonomy = generated_taxonomy(corpus, 10_000, base_url=layout.base_url)
    assert 12 < len(taxonomy.topics) < 10_000  # as many folders as the web's pages can fill
    assert all(doc.url.startswith("http://127.0.0.") for doc in taxonomy.documents)
    out = tmp_path / "bookmarks.html"
    assert main(["--web", "fixture", "--topics", "5", "--out", str(out)]) == 0
    assert len(parse_bookmarks(out.read_text(encoding="utf-8")).topics) == 5
