"""Search: BM25 order with the title weighted, snippets, duplicates hidden, bad queries as clear errors."""

from __future__ import annotations

import pytest

from crawler import search as search_module
from crawler.query import parse_query
from crawler.repository import DocumentRecord, Repository, StoredPage
from crawler.search import WIDEN_BELOW, SearchError, ranked_search, search
from crawler.taxonomy import parse_bookmarks, store_taxonomy


def store(repo: Repository, url: str, title: str, text: str, **kw) -> int:
    record = DocumentRecord(
        url=url,
        final_url=url,
        host="h:80",
        status=200,
        content_type="text/html",
        title=title,
        text=text,
        fingerprint=url,
        simhash=0,
        fetched_at=0.0,
        depth=0,
        **kw,
    )
    return repo.insert_page(StoredPage(record))


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            store(
                repo, "http://h/vacuum", "Routine vacuuming", "PostgreSQL databases require vacuuming. " * 3
            )
            store(
                repo,
                "http://h/other",
                "Backups",
                "Mentions vacuum once among many other words about backups.",
            )
            store(repo, "http://h/plot", "Plotting", "gnuplot draws functions and data")
        yield repo


def test_results_are_ranked_by_bm25_with_snippets(repo):
    hits = search(repo, "vacuum")
    assert [h.url for h in hits] == ["http://h/vacuum", "http://h/other"]
    assert hits[0].score > hits[1].score
    assert "[vacuuming]" in hits[0].snippet
    assert hits[0].title == "Routine vacuuming"


def test_title_matches_outrank_body_matches(repo):
    with repo.transaction():
        store(repo, "http://h/body", "Unrelated", "backups backups")
    assert search(repo, "backups")[0].url == "http://h/other"


def test_limit_and_no_match(repo):
    assert len(search(repo, "vacuum", limit=1)) == 1
    assert search(repo, "nonexistentword") == []


def test_duplicates_are_hidden_unless_asked(repo):
    original = repo.document_by_url("http://h/plot")["id"]
    with repo.transaction():
        store(
            repo,
            "http://h/plot2",
            "Plotting",
            "gnuplot draws functions and data too",
            near_duplicate_of=original,
        )
    assert [h.url for h in search(repo, "gnuplot")] == ["http://h/plot"]
    assert len(search(repo, "gnuplot", include_duplicates=True)) == 2


@pytest.mark.parametrize("query", ['"unbalanced', "AND", "vacuum OR", "col:value", "(", "NEAR(", "*"])
def test_fts_syntax_errors_become_search_errors(repo, query):
    with pytest.raises(SearchError, match="query"):
        search(repo, query)


@pytest.mark.parametrize("query", ['"unbalanced vacuum', "AND vacuum (", "col:vacuum", "vacuum*"])
def test_plain_syntax_accepts_any_input(repo, query):
    hits = search(repo, query, syntax="plain")
    assert all(isinstance(h.url, str) for h in hits)
    assert search(repo, '"vacuuming', syntax="plain")[0].url == "http://h/vacuum"


def test_empty_query_is_an_error(repo):
    with pytest.raises(SearchError, match="empty"):
        search(repo, "  ")
    with pytest.raises(SearchError, match="empty"):
        search(repo, "!!! ''", syntax="plain")
    with pytest.raises(SearchError, match="empty"):  # FTS5 syntax must say what to match
        ranked_search(repo, "  ", syntax="fts5")


def browsing_repo(repo: Repository) -> Repository:
    with repo.transaction():
        store(repo, "http://h/sure", "Sure", "indexes and joins", topic="db", confidence=0.95)
        store(repo, "http://h/unsure", "Unsure", "a page about vacuum", topic="db", confidence=0.55)
        store(repo, "http://h/math", "Math", "integrals", topic="math", confidence=0.8)
        store(repo, "http://h/noise", "Noise", "nothing", topic=None, confidence=None, accepted=False)
        store(repo, "http://h/peer", "Peer", "a peer's joins", topic="db", confidence=0.7, origin="peerA")
    return repo


@pytest.mark.parametrize("query", ["", "   ", "!!!"])
def test_a_query_without_words_browses_the_most_confident_results(repo, query):
    results = ranked_search(browsing_repo(repo), query, previews=False)
    urls = [h.url for h in results.hits]
    assert urls[:4] == ["http://h/sure", "http://h/math", "http://h/peer", "http://h/unsure"]
    assert "http://h/noise" not in urls  # the default verdict filter holds: no topic accepted it
    assert results.total == len(urls) == 4 + 3  # and the fixture's three accepted pages without a topic
    assert all(h.signals["text"] == 0.0 for h in results.hits) and not results.prefix and results.browsed
    assert not ranked_search(repo, "joins", previews=False).browsed


def test_browsing_keeps_the_filters_and_pages(repo):
    browsing_repo(repo)
    topic = ranked_search(repo, "", topic="db", previews=False)
    assert [h.url for h in topic.hits] == ["http://h/sure", "http://h/peer", "http://h/unsure"]
    pooled = ranked_search(repo, "", origin="pooled", previews=False)
    assert [h.url for h in pooled.hits] == ["http://h/peer"] and pooled.total == 1
    second = ranked_search(repo, "", topic="db", limit=1, offset=1, previews=False)
    assert [h.url for h in second.hits] == ["http://h/peer"] and second.total == 3
    every = ranked_search(repo, "", verdict="any", previews=False)
    assert every.total == 8 and "http://h/noise" in {h.url for h in every.hits[4:]}  # no confidence: after


def test_browsing_with_exclusions_or_sites_only_narrows_the_list(repo):
    browsing_repo(repo)
    without = ranked_search(repo, '-joins -"routine vacuuming"', topic="db", previews=False)
    assert [h.url for h in without.hits] == ["http://h/unsure"]
    site = ranked_search(repo, "site:h/p", previews=False)
    assert [h.url for h in site.hits] == ["http://h/peer", "http://h/plot"]


def test_a_browsed_result_previews_its_topic_passages(repo):
    results = ranked_search(browsing_repo(repo), "", topic="db")
    assert results.hits[0].preview.startswith("indexes and joins")
    assert "[[" not in results.hits[0].preview  # no query terms to mark


@pytest.mark.parametrize("syntax", ["plain", "fts5"])
def test_a_query_longer_than_anyone_types_is_refused_with_the_limit(repo, syntax):
    with pytest.raises(SearchError, match=f"at most {search_module.MAX_QUERY_CHARS}"):
        search(repo, "sql " * 300, syntax=syntax)


def test_a_query_running_past_its_time_is_interrupted_with_advice_and_the_connection_stays_usable(
    repo, monkeypatch
):
    monkeypatch.setattr(search_module, "QUERY_SECONDS", -1.0)  # every statement is already late
    monkeypatch.setattr(search_module, "PROGRESS_STEPS", 1)
    with pytest.raises(SearchError, match="fewer words"):
        search(repo, "vacuum", syntax="plain")
    assert repo.db.execute("SELECT count(*) FROM documents").fetchone()[0] > 0  # no handler left behind
    monkeypatch.undo()
    assert search(repo, "vacuum", syntax="plain")


def test_a_filter_topic_the_repository_does_not_hold_is_named_as_unknown(repo):
    assert ranked_search(repo, "vacuum", topic="Databases", verdict="any").hits == ()  # no topics yet
    store_taxonomy(repo, parse_bookmarks(BOOKMARKS_WITH_DATABASES))
    with pytest.raises(SearchError, match="no topic 'Nope': list topics with `topicswarm topics list`"):
        ranked_search(repo, "vacuum", topic="Nope")
    with pytest.raises(SearchError, match=r"no topic 'databases' \(did you mean 'Databases'\?\)"):
        ranked_search(repo, "vacuum", topic="databases")
    assert ranked_search(repo, "vacuum", topic="Databases", verdict="any").hits == ()  # known, no page in it


BOOKMARKS_WITH_DATABASES = (
    '<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><H3>Databases</H3><DL><p><DT><A HREF="http://h/vacuum">v</A>'
    "</DL><p></DL><p>"
)


def test_default_verdict_filter_leaves_out_pages_no_topic_accepted(repo):
    with repo.transaction():
        store(repo, "http://h/kept", "Vacuum", "vacuum kept", topic="db", confidence=0.9)
        store(repo, "http://h/noise", "Vacuum", "vacuum noise", topic=None, confidence=0.0, accepted=False)
        store(repo, "http://h/dismissed", "Vacuum", "vacuum gone", topic="db", verdict="rejected")
    urls = {h.url for h in ranked_search(repo, "vacuum", previews=False).hits}
    assert urls == {"http://h/vacuum", "http://h/other", "http://h/kept"}
    every = {h.url for h in ranked_search(repo, "vacuum", verdict="any", previews=False).hits}
    assert every == urls | {"http://h/noise", "http://h/dismissed"}


MENU = "\n".join(["Home", "Menu", "About", "Documentation", "Download", "License", "Support", "Purchase"])


def test_a_hit_preview_shows_the_query_terms_not_the_menu(repo):
    text = (
        f"{MENU}\nSQLite is Transactional\nA transactional database is one in which all changes and queries\n"
        "appear to be\nAtomic, Consistent, Isolated, and Durable\n(ACID).\nSQLite implements\n"
        "serializable\ntransactions that are atomic, consistent, isolated, and durable."
    )
    with repo.transaction():
        store(repo, "http://h/tx", "SQLite Is Transactional", text)
    hit = ranked_search(repo, "transaction isolation", verdict="any").hits[0]
    assert hit.preview.startswith("A [[transactional]] database is one in which")
    assert "[[Isolated]]" in hit.preview and "Purchase" not in hit.preview


def test_a_long_page_previews_the_passage_with_the_query_terms(repo):
    filler = "The weather was mild and the garden grew many flowers that summer.\n" * 150  # past PREVIEW_HEAD
    with repo.transaction():
        store(repo, "http://h/long", "Notes", f"{MENU}\n{filler}Autovacuum reclaims dead rows. {filler}")
    hit = ranked_search(repo, "autovacuum", verdict="any").hits[0]
    assert hit.preview == "[[Autovacuum]] reclaims dead rows."


def test_a_hit_preview_leaves_out_the_lines_its_site_repeats(repo):
    footer = "\nReindex docs."
    with repo.transaction():
        store(repo, "http://h/a", "Reindex", "Routine reindexing of tables rebuilds their indexes." + footer)
        store(repo, "http://h/b", "Backup", "A base backup copies the data directory." + footer)
        store(repo, "http://h/c", "Index", "An index speeds up a query." + footer)
    hit = ranked_search(repo, "reindex", verdict="any").hits[0]
    assert hit.url == "http://h/a"
    assert hit.preview == "Routine [[reindexing]] of tables rebuilds their indexes."


def test_a_word_found_nowhere_whole_matches_the_words_it_starts(repo):
    found = ranked_search(repo, "postgres", verdict="any")
    assert found.prefix and [h.url for h in found.hits] == ["http://h/vacuum"]
    assert "[[PostgreSQL]]" in found.hits[0].preview
    assert found.to_api()["prefix"] is True


def test_a_word_found_whole_on_few_pages_also_matches_the_words_it_starts_whole_matches_first(repo):
    found = ranked_search(repo, "data", verdict="any")  # "databases" is another word
    assert found.prefix and [h.url for h in found.hits] == ["http://h/plot", "http://h/vacuum"]
    assert "[[databases]]" in found.hits[1].preview


def test_a_word_found_whole_on_enough_pages_is_not_widened(repo):
    with repo.transaction():
        for i in range(WIDEN_BELOW):
            store(repo, f"http://h/data{i}", f"Data {i}", f"data set number {i}")
    found = ranked_search(repo, "data", verdict="any", previews=False, limit=20)
    assert not found.prefix and "http://h/vacuum" not in {h.url for h in found.hits}


def test_a_prefix_search_leaves_short_words_whole_and_keeps_the_filters(repo):
    assert parse_query("go postgres").match(prefix=True) == '"go" AND ("postgres" OR "postgres"*)'
    assert not ranked_search(repo, "pl", verdict="any").hits  # "pl" starts "plotting" but is too short
    with repo.transaction():
        store(repo, "http://h/pgnoise", "Noise", "postgresql noise", topic=None, accepted=False)
    kept = ranked_search(repo, "postgres", previews=False)  # default verdict filter: accepted only
    assert kept.prefix and "http://h/pgnoise" not in {h.url for h in kept.hits}
    assert not ranked_search(repo, "postgres", syntax="fts5", verdict="any").hits  # FTS5 syntax as written
