import os
from pathlib import Path

import pytest

from crawler import taxonomy as taxonomy_module
from crawler.repository import Repository
from crawler.taxonomy import (
    FAILED,
    FETCHED,
    NEGATIVE,
    POSITIVE,
    TaxonomyError,
    TrainingDocument,
    add_training_documents,
    display_name,
    fill_documents,
    load_taxonomy,
    parse_bookmarks,
    read_bookmarks,
    read_folder_tree,
    read_taxonomy,
    store_taxonomy,
    topic_path_key,
    topic_summary,
)

FIXTURES = Path(__file__).parent / "fixtures"
HEAD = "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n"


def urls(taxonomy, topic, polarity=POSITIVE):
    return sorted(d.url for d in taxonomy.documents if d.topic == topic and d.polarity == polarity)


def test_firefox_export_gives_nested_topics_without_browser_containers():
    tax = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
    assert tax.topics == (
        "Arts",
        "Science",
        "Science/Input%2FOutput devices",
        "Science/Mathematics",
        "Science/Mathematics/Stochastics",
    )
    assert urls(tax, "Science/Mathematics/Stochastics") == [
        "https://en.wikipedia.org/wiki/Central_limit_theorem",
        "https://en.wikipedia.org/wiki/Stochastic_process",
    ]
    # the same folder path under the menu and under "Other Bookmarks" is one topic
    assert urls(tax, "Science/Mathematics") == [
        "https://en.wikipedia.org/wiki/Mathematics",
        "https://mathworld.wolfram.com/",
    ]
    assert urls(tax, "Arts") == ["https://en.wikipedia.org/wiki/Gustave_Courbet"]


def test_others_folders_are_negatives_of_their_parent_and_of_the_root():
    tax = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
    assert urls(tax, "Science/Mathematics", NEGATIVE) == ["https://en.wikipedia.org/wiki/Operations_research"]
    assert urls(tax, "", NEGATIVE) == ["https://www.espn.com/", "https://www.imdb.com/"]
    assert not any(t.lower().endswith("others") for t in tax.topics)


def test_loose_and_non_web_bookmarks_are_skipped_with_their_line():
    tax = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
    assert any(s.startswith("line 12:") for s in tax.skipped)
    assert any("Getting Started" in s for s in tax.skipped)
    assert "https://www.mozilla.org/en-US/firefox/central/" not in {d.url for d in tax.documents}


def test_chrome_export_with_lowercase_others_entities_and_empty_folder():
    tax = read_bookmarks(FIXTURES / "chrome-bookmarks.html")
    assert tax.topics == ("Databases", "Databases/Empty folder", "Databases/Query Optimisation", "Sysadmin")
    titles = {d.title for d in tax.documents}
    assert "SELECT \u2013 SQLite" in titles
    assert urls(tax, "", NEGATIVE) == ["https://www.bbc.com/sport"]
    assert urls(tax, "Sysadmin") == ["https://httpd.apache.org/docs/2.4/vhosts/"]
    assert any("javascript:" in s for s in tax.skipped)
    line = next(d.line for d in tax.documents if d.url.endswith("using-explain.html"))
    assert line == 18


def test_topic_key_normalises_whitespace_and_escapes_slashes():
    assert topic_path_key(["  Science ", "Input/Output\t devices", "100%"]) == (
        "Science/Input%2FOutput devices/100%25"
    )
    assert display_name("Science/Input%2FOutput devices") == "Input/Output devices"


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ('<DL><p>\n<DT><H3>A</H3>\n<DL><p>\n<DT><A HREF="http://a/">a</A>\n</DL><p>\n', 3, "never closed"),
        ('<DL><p>\n<DT><A ADD_DATE="1">no href</A>\n</DL>\n', 4, "without an HREF"),
        ("<DL><p>\n</DL>\n</DL>\n", 5, "without a matching"),
        ("<DL><p>\n<DT><H3>A</H3>\n<DL><p>\n<DL><p>\n</DL></DL></DL>\n", 6, "no folder heading"),
        ('<DL><p>\n<DT><H3>A\n<DT><A HREF="http://a/">a</A>\n</DL>\n', 5, "inside the unclosed"),
        ("<DL><p>\n<DT><H3>  </H3>\n<DL><p></DL>\n</DL>\n", 4, "without a name"),
    ],
)
def test_malformed_bookmarks_name_the_line(body, line, words):
    with pytest.raises(TaxonomyError, match=rf"bm\.html:{line}: .*{words}"):
        parse_bookmarks(HEAD + body, "bm.html")


def test_a_file_that_is_not_a_bookmarks_export_is_refused():
    with pytest.raises(TaxonomyError, match="not a bookmarks file"):
        parse_bookmarks("<html><body><dl><dt><a href='http://x/'>x</a></dl></body></html>", "page.html")


def test_bookmarks_without_folders_have_no_topics():
    with pytest.raises(TaxonomyError, match="no topic folders"):
        parse_bookmarks(HEAD + '<DL><p>\n<DT><A HREF="http://a/">a</A>\n</DL>\n', "bm.html")


def test_folder_tree_import_reads_documents_and_others(tmp_path):
    (tmp_path / "Math" / "Algebra").mkdir(parents=True)
    (tmp_path / "Math" / "OTHERS").mkdir()
    (tmp_path / "OTHERS").mkdir()
    (tmp_path / "Math" / "intro.txt").write_text("numbers and proofs")
    (tmp_path / "Math" / "Algebra" / "groups.html").write_text(
        "<html><head><title>Groups</title></head><body><p>A group is a set.</p></body></html>"
    )
    (tmp_path / "Math" / "OTHERS" / "physics.txt").write_text("forces")
    (tmp_path / "OTHERS" / "sport.md").write_text("football")
    (tmp_path / "Math" / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "loose.txt").write_text("nowhere")
    tax = read_taxonomy(tmp_path)
    assert tax.topics == ("Math", "Math/Algebra")
    algebra = tax.positives("Math/Algebra")
    assert [(d.title, "group is a set" in d.text) for d in algebra] == [("Groups", True)]
    assert [d.text for d in tax.negatives("Math")] == ["forces"]
    assert [d.text for d in tax.negatives("")] == ["football"]
    assert len(tax.skipped) == 2


def test_folder_tree_import_reads_pdfs_and_skips_those_without_text_saying_why(tmp_path):
    from tests.crawler.test_pdf import encrypted
    from tests.pdf_samples import make_pdf

    (tmp_path / "Databases" / "OTHERS").mkdir(parents=True)
    (tmp_path / "Databases" / "vacuum.pdf").write_bytes(
        make_pdf(["Vacuum reclaims dead tuples."], title="VACUUM")
    )
    (tmp_path / "Databases" / "OTHERS" / "knitting.PDF").write_bytes(make_pdf(["Purl stitches."]))
    (tmp_path / "Databases" / "scan.pdf").write_bytes(make_pdf([" "]))
    (tmp_path / "Databases" / "locked.pdf").write_bytes(encrypted(make_pdf(["hidden"]), "secret"))
    (tmp_path / "Databases" / "broken.pdf").write_bytes(b"%PDF-1.7 cut off")
    tax = read_taxonomy(tmp_path)
    assert [(d.title, d.text) for d in tax.positives("Databases")] == [
        ("VACUUM", "Vacuum reclaims dead tuples.")
    ]
    assert [d.text for d in tax.negatives("Databases")] == ["Purl stitches."]
    broken, *skipped = sorted(tax.skipped)
    assert broken.startswith("Databases/broken.pdf: a damaged PDF (unparsable: ")
    assert skipped == [
        "Databases/locked.pdf: a password-protected PDF",
        "Databases/scan.pdf: a PDF without text (scanned pages need OCR first)",
    ]


def test_folder_tree_must_exist(tmp_path):
    with pytest.raises(TaxonomyError, match="does not exist"):
        read_taxonomy(tmp_path / "missing.html")
    with pytest.raises(TaxonomyError):
        read_folder_tree(tmp_path)


def test_a_fifo_is_refused_at_once_rather_than_read_forever(tmp_path):
    fifo = tmp_path / "bookmarks.html"
    os.mkfifo(fifo)
    with pytest.raises(TaxonomyError, match="not a regular file"):
        read_taxonomy(fifo)


def test_a_bookmarks_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(taxonomy_module, "MAX_FILE_BYTES", 100)
    big = tmp_path / "bookmarks.html"
    big.write_bytes((FIXTURES / "firefox-bookmarks.html").read_bytes())
    with pytest.raises(TaxonomyError, match="larger than"):
        read_taxonomy(big)


def test_a_folder_tree_skips_an_oversized_document_and_refuses_a_whole_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(taxonomy_module, "MAX_FILE_BYTES", 100)
    (tmp_path / "Math").mkdir()
    (tmp_path / "Math" / "intro.txt").write_text("numbers and proofs")
    (tmp_path / "Math" / "huge.txt").write_text("x" * 101)
    tax = read_taxonomy(tmp_path)
    assert [d.text for d in tax.positives("Math")] == ["numbers and proofs"]
    assert (
        len(tax.skipped) == 1
        and tax.skipped[0].startswith("Math/huge.txt: ")
        and "larger than" in tax.skipped[0]
    )
    monkeypatch.setattr(taxonomy_module, "MAX_FOLDER_FILES", 2)
    with pytest.raises(TaxonomyError, match="more than 2 files"):
        read_taxonomy(tmp_path)


def test_stored_taxonomy_round_trips_and_replaces_the_previous_one(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        store_taxonomy(repo, read_bookmarks(FIXTURES / "firefox-bookmarks.html"))
        chrome = read_bookmarks(FIXTURES / "chrome-bookmarks.html")
        store_taxonomy(repo, chrome)
        loaded = load_taxonomy(repo)
    assert loaded is not None
    assert loaded.topics == chrome.topics
    assert sorted(loaded.documents, key=lambda d: d.line) == sorted(chrome.documents, key=lambda d: d.line)


def test_failed_import_leaves_the_stored_taxonomy_untouched(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        store_taxonomy(repo, read_bookmarks(FIXTURES / "chrome-bookmarks.html"))
        bad = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
        broken = bad.__class__(bad.topics, (*bad.documents, "not a document"), bad.source)  # fails mid-insert
        with pytest.raises(AttributeError):
            store_taxonomy(repo, broken)
        loaded = load_taxonomy(repo)
    assert loaded is not None and loaded.topics[0] == "Databases"


def test_no_taxonomy_loads_as_none(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        assert load_taxonomy(repo) is None


def test_fetched_texts_fill_pending_documents_and_failures_are_kept(tmp_path):
    tax = read_bookmarks(FIXTURES / "chrome-bookmarks.html")
    filled = fill_documents(
        tax,
        {
            "https://www.sqlite.org/lang_select.html": ("SELECT", "select statement text", None),
            "https://www.bbc.com/sport": ("", "", "timeout"),
        },
    )
    by_url = {d.url: d for d in filled.documents}
    assert by_url["https://www.sqlite.org/lang_select.html"].status == FETCHED
    assert by_url["https://www.bbc.com/sport"].status == FAILED
    positives, negatives = filled.training_texts()
    assert positives == {"Databases": ["SELECT\nselect statement text"]}
    assert negatives == {}
    with Repository(tmp_path / "repo.db") as repo:
        store_taxonomy(repo, filled)
        add_training_documents(repo, [TrainingDocument("Sysadmin", POSITIVE, url="http://x/", text="t")])
        summary = {row["key"]: row for row in topic_summary(load_taxonomy(repo))}
    assert summary["Sysadmin"]["positives"] == 2 and summary["Sysadmin"]["with_text"] == 1
    assert summary[""]["failed"] == 1


def test_a_re_import_keeps_what_the_node_learned_for_the_topics_that_stay(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        firefox = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
        store_taxonomy(repo, firefox)
        topic = firefox.topics[0]
        learned = [
            TrainingDocument(topic, POSITIVE, url="http://a.test/marked", text="marked", source="feedback"),
            TrainingDocument(topic, POSITIVE, url="http://a.test/hub", text="hub", source="archetype"),
        ]
        add_training_documents(repo, learned)
        with repo.transaction() as db:
            columns = "key, name, parent, source, imported_at"
            db.execute(
                f"INSERT INTO topics ({columns}) VALUES (?, 'Sub', ?, 'refine', 0)", [f"{topic}/Sub", topic]
            )
        add_training_documents(
            repo, [TrainingDocument(f"{topic}/Sub", POSITIVE, text="s", source="feedback")]
        )
        store_taxonomy(repo, read_bookmarks(FIXTURES / "firefox-bookmarks.html"))  # the same file again
        again = load_taxonomy(repo)
        assert f"{topic}/Sub" in again.topics
        assert {d.text for d in again.documents if d.source != "import"} == {"marked", "hub", "s"}
        assert sum(d.source == "import" for d in again.documents) == len(firefox.documents)  # not doubled
        elsewhere = '<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><H3>Elsewhere</H3><DL><p><DT><A HREF="http://e.test/">e</A></DL><p></DL><p>'
        store_taxonomy(repo, parse_bookmarks(elsewhere))  # the topic is gone: so is what was learned for it
        other = load_taxonomy(repo)
        assert other.topics == ("Elsewhere",)
        assert all(d.source == "import" for d in other.documents)
