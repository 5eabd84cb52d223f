"""The plain query language: words, "phrases", -exclusions and site: filters, read as a search engine does."""

from __future__ import annotations

import pytest

from crawler.query import PlainQuery, Site, parse_query, parse_site
from crawler.repository import Repository, StoredPage
from crawler.search import SearchError, ranked_search, search, text_document

PAGES = {
    "http://www.postgresql.org/docs/wal.html": (
        "Write-Ahead Logging",
        "The PostgreSQL write ahead log makes commits durable.",
    ),
    "http://www.postgresql.org/docs/mvcc.html": ("MVCC", "A log of changes: ahead of time, write nothing."),
    "https://wiki.postgresql.org/Vacuum": ("Vacuum", "Vacuum reclaims storage; the write ahead log grows."),
    "http://mysql.com/doc/redo.html": ("Redo log", "MySQL writes a redo log ahead of the data files."),
    "http://notpostgresql.org/log.html": (
        "Logs",
        "Another write ahead log, on a host whose name ends alike.",
    ),
    "http://127.0.0.1:8081/log.html": ("Local log", "A write ahead log served on loopback port 8081."),
}


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            for url, (title, text) in PAGES.items():
                repo.insert_page(StoredPage(text_document(url, title, text, near_duplicates=False)))
        yield repo


def urls(repo: Repository, query: str) -> set[str]:
    found = ranked_search(repo, query, verdict="any", limit=50, previews=False)
    return {hit.url for hit in found.hits}


def test_words_phrases_and_exclusions_are_parsed_as_typed():
    parsed = parse_query('write "ahead log" -mysql -"redo log" e-mail')
    assert parsed.words == ("write", "e", "mail")
    assert parsed.phrases == (("ahead", "log"),)
    assert parsed.excluded == (("mysql",), ("redo", "log"))
    assert parsed.match() == '("write" "e" "mail" "ahead log") NOT "mysql" NOT "redo log"'
    assert parsed.wanted_text == "write e mail ahead log"


def test_an_unclosed_quote_runs_to_the_end_and_a_quoted_word_is_a_word():
    assert parse_query('"write ahead log').phrases == (("write", "ahead", "log"),)
    assert parse_query('"vacuum"').words == ("vacuum",)
    assert parse_query('- "" -- ""').empty


@pytest.mark.parametrize(
    ("value", "site"),
    [
        ("docs.python.org", Site("docs.python.org")),
        ("Docs.Python.org.", Site("docs.python.org")),
        ("https://docs.python.org/3/library", Site("docs.python.org", None, "/3/library")),
        ("127.0.0.1:8081", Site("127.0.0.1", "8081")),
        ("[::1]:8080/x", Site("[::1]", "8080", "/x")),
    ],
)
def test_site_values_name_a_host_a_port_and_a_path(value, site):
    assert parse_site(value) == site


@pytest.mark.parametrize("value", ["", "/docs", "a..b", "*.example.org", "h:123456", "-x.org"])
def test_a_site_that_names_no_host_is_a_clear_error(value):
    with pytest.raises(SearchError, match="site: needs a host name"):
        parse_query(f"log site:{value}")


def test_a_phrase_matches_its_words_in_order_and_next_to_each_other(repo):
    assert "http://www.postgresql.org/docs/mvcc.html" in urls(repo, "write ahead log")
    phrase = urls(repo, '"write ahead log"')
    assert "http://www.postgresql.org/docs/mvcc.html" not in phrase
    assert "http://www.postgresql.org/docs/wal.html" in phrase


def test_excluded_words_and_phrases_leave_their_pages_out(repo):
    assert "http://mysql.com/doc/redo.html" in urls(repo, "log")
    assert "http://mysql.com/doc/redo.html" not in urls(repo, "log -mysql")
    assert urls(repo, 'log -"write ahead"') == {
        "http://www.postgresql.org/docs/mvcc.html",
        "http://mysql.com/doc/redo.html",
    }


def test_a_site_filter_keeps_the_host_and_its_subdomains_not_hosts_ending_alike(repo):
    assert urls(repo, "log site:postgresql.org") == {
        "http://www.postgresql.org/docs/wal.html",
        "http://www.postgresql.org/docs/mvcc.html",
        "https://wiki.postgresql.org/Vacuum",
    }
    assert urls(repo, "log site:wiki.postgresql.org") == {"https://wiki.postgresql.org/Vacuum"}
    assert urls(repo, "log site:127.0.0.1:8081") == {"http://127.0.0.1:8081/log.html"}
    assert urls(repo, "log site:127.0.0.1:8082") == set()


def test_site_filters_are_alternatives_and_a_path_narrows_one_host(repo):
    assert urls(repo, "log site:mysql.com site:notpostgresql.org") == {
        "http://mysql.com/doc/redo.html",
        "http://notpostgresql.org/log.html",
    }
    assert urls(repo, "log site:https://www.postgresql.org/docs/w") == {
        "http://www.postgresql.org/docs/wal.html"
    }


def test_an_excluded_site_is_left_out(repo):
    assert urls(repo, "log -site:postgresql.org -site:127.0.0.1") == {
        "http://mysql.com/doc/redo.html",
        "http://notpostgresql.org/log.html",
    }


def test_the_simple_search_applies_the_same_query_language(repo):
    hits = search(repo, '"write ahead log" -site:postgresql.org -loopback', syntax="plain")
    assert {h.url for h in hits} == {"http://notpostgresql.org/log.html"}


def test_a_query_of_filters_alone_browses_what_they_leave(repo):
    assert urls(repo, "site:postgresql.org -vacuum") == {
        "http://www.postgresql.org/docs/wal.html",
        "http://www.postgresql.org/docs/mvcc.html",
    }
    assert urls(repo, "-site:postgresql.org -loopback -mysql") == {"http://notpostgresql.org/log.html"}
    assert parse_query("-mysql site:mysql.com").empty


def test_a_query_of_filters_alone_is_no_simple_search(repo):
    with pytest.raises(SearchError, match="only narrow"):
        search(repo, "-mysql site:mysql.com", syntax="plain")
    assert parse_query("-mysql site:mysql.com") != PlainQuery()


def test_previews_highlight_wanted_words_not_excluded_ones_or_sites(repo):
    found = ranked_search(repo, "durable -mysql site:postgresql.org", verdict="any")
    assert [hit.url for hit in found.hits] == ["http://www.postgresql.org/docs/wal.html"]
    assert "[[durable]]" in found.hits[0].preview
    assert "[[postgresql]]" not in found.hits[0].preview.lower()


def test_widening_to_the_starts_of_words_keeps_exclusions_and_sites(repo):
    found = ranked_search(repo, "durab -mysql site:postgresql.org", verdict="any", previews=False)
    assert found.prefix and [hit.url for hit in found.hits] == ["http://www.postgresql.org/docs/wal.html"]
    assert parse_query('durab "ahead log" -mysql').match(prefix=True) == (
        '(("durab" OR "durab"*) AND "ahead log") NOT "mysql"'
    )
    assert not ranked_search(repo, "durab site:mysql.com", verdict="any", previews=False).hits


def test_fts5_syntax_is_passed_as_written(repo):
    hits = ranked_search(repo, "log NOT mysql", syntax="fts5", verdict="any", previews=False).hits
    assert "http://mysql.com/doc/redo.html" not in {hit.url for hit in hits}
    with pytest.raises(SearchError):
        ranked_search(repo, "log site:mysql.com", syntax="fts5", verdict="any")
