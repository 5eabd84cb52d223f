"""Renaming a topic moves everything filed under it and its subtopics, and later imports keep the name."""

import pytest

from crawler.repository import Repository
from crawler.taxonomy import (
    ARCHETYPE,
    FETCHED,
    POSITIVE,
    REFINED,
    TaxonomyError,
    TrainingDocument,
    add_training_documents,
    load_keywords,
    load_taxonomy,
    parse_bookmarks,
    save_keywords,
    store_subtopic,
    store_taxonomy,
)
from crawler.topic_rename import alike_topics, apply_renames, rename_rows, renamed_key, typed_key

BOOKMARKS = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<DL><p>
<DT><H3>Math</H3>
<DL><p>
<DT><A HREF="http://127.0.0.1/calculus">Calculus</A>
<DT><H3>Stochastics</H3>
<DL><p><DT><A HREF="http://127.0.0.1/markov">Markov chains</A></DL><p>
</DL><p>
<DT><H3>Mathematics for kids</H3>
<DL><p><DT><A HREF="http://127.0.0.1/counting">Counting</A></DL><p>
<DT><H3>Databases</H3>
<DL><p><DT><A HREF="http://127.0.0.1/sql">SQL</A></DL><p>
</DL><p>
"""


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "repository.db") as repo:
        store_taxonomy(repo, parse_bookmarks(BOOKMARKS))
        yield repo


def add_page(repo, url, topic):
    with repo.transaction() as db:
        db.execute(
            "INSERT INTO documents (url, final_url, host, status, fingerprint, fetched_at, topic, accepted) "
            "VALUES (?, ?, '127.0.0.1', 200, ?, 0, ?, 1)",
            [url, url, url, topic],
        )


def topics_of(repo, table, column="topic"):
    return sorted(row[0] for row in repo.db.execute(f"SELECT {column} FROM {table}"))


def rename(repo, old, new):
    with repo.transaction() as db:
        return rename_rows(db, old, new)


def test_a_rename_moves_the_topic_and_its_subtopics_and_nothing_that_only_shares_its_start(repo):
    add_page(repo, "http://127.0.0.1/a", "Math")
    add_page(repo, "http://127.0.0.1/b", "Math/Stochastics")
    add_page(repo, "http://127.0.0.1/c", "Mathematics for kids")
    with repo.transaction() as db:
        db.execute(
            "INSERT INTO frontier (url, host, topic, priority, depth) "
            "VALUES ('http://127.0.0.1/next', '127.0.0.1', 'Math/Stochastics', 1.0, 1)"
        )
    save_keywords(repo, "Math", ["theorem"])

    moved = rename(repo, "Math", "Science/Mathematics")

    assert moved == {"Math": "Science/Mathematics", "Math/Stochastics": "Science/Mathematics/Stochastics"}
    assert topics_of(repo, "documents") == [
        "Mathematics for kids",
        "Science/Mathematics",
        "Science/Mathematics/Stochastics",
    ]
    assert topics_of(repo, "frontier") == ["Science/Mathematics/Stochastics"]
    assert load_keywords(repo) == {"Science/Mathematics": ("theorem",)}
    taxonomy = load_taxonomy(repo)
    assert set(taxonomy.topics) == {
        "Databases",
        "Mathematics for kids",
        "Science",
        "Science/Mathematics",
        "Science/Mathematics/Stochastics",
    }
    assert [d.url for d in taxonomy.positives("Science/Mathematics/Stochastics")] == [
        "http://127.0.0.1/markov"
    ]
    rows = {k: (name, parent) for k, name, parent in repo.db.execute("SELECT key, name, parent FROM topics")}
    assert rows["Science/Mathematics"] == ("Mathematics", "Science")
    assert rows["Science/Mathematics/Stochastics"] == ("Stochastics", "Science/Mathematics")
    assert rows["Science"] == ("Science", "")


def test_a_name_with_an_escaped_percent_is_matched_as_text_not_as_a_pattern(repo):
    rename(repo, "Math", "100%25 Math")
    add_page(repo, "http://127.0.0.1/d", "100%25 Math")
    add_page(repo, "http://127.0.0.1/e", "100x25 Math")  # what LIKE '100%25 Math' would match too

    rename(repo, "100%25 Math", "Mathematics")

    assert topics_of(repo, "documents") == ["100x25 Math", "Mathematics"]


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        ("Mth", "Science", "did you mean 'Math'"),
        ("", "Science", "no topic"),
        ("Math", "Databases", "exists already"),
        ("Math", "Math/Pure", "under itself"),
        ("Math", "Math", "has that key already"),
    ],
)
def test_a_rename_that_would_lose_or_merge_a_topic_is_refused_and_changes_nothing(repo, old, new, refusal):
    before = topics_of(repo, "topics", "key")
    with pytest.raises(TaxonomyError, match=refusal):
        rename(repo, old, new)
    assert topics_of(repo, "topics", "key") == before


@pytest.mark.parametrize(
    "typed", ["", "  ", "Science//Mathematics", "/Mathematics", "Maths\x1b[2J", "x" * 129]
)
def test_a_new_key_must_name_folders(typed):
    with pytest.raises(TaxonomyError):
        typed_key(typed)


def test_a_typed_key_is_normalised_as_an_import_normalises_folder_names():
    assert typed_key("  Science /  Pure   Mathematics ") == "Science/Pure Mathematics"


def test_importing_the_same_bookmarks_again_files_the_renamed_folder_under_its_new_key(repo):
    archetype = TrainingDocument(
        "Math", POSITIVE, url="http://127.0.0.1/found", status=FETCHED, source=ARCHETYPE
    )
    add_training_documents(repo, [archetype])
    store_subtopic(repo, "Math/Topology", "Topology", [], [])
    rename(repo, "Math", "Mathematics")

    stored, renamed = store_taxonomy(repo, parse_bookmarks(BOOKMARKS))

    assert renamed == {"Math": "Mathematics", "Math/Stochastics": "Mathematics/Stochastics"}
    assert set(stored.topics) == {
        "Mathematics",
        "Mathematics/Stochastics",
        "Mathematics for kids",
        "Databases",
    }
    taxonomy = load_taxonomy(repo)
    assert "Math" not in taxonomy.topics
    assert "Mathematics/Topology" in taxonomy.topics  # the accepted subtopic stays with its parent
    assert {d.url for d in taxonomy.positives("Mathematics")} == {"http://127.0.0.1/calculus", archetype.url}
    sources = dict(repo.db.execute("SELECT key, source FROM topics"))
    assert sources["Mathematics/Topology"] == REFINED


def test_renames_apply_in_the_order_made():
    taxonomy = parse_bookmarks(BOOKMARKS)
    renamed, moved = apply_renames(taxonomy, [("Math", "Maths"), ("Maths", "Science/Maths")])
    assert moved["Math/Stochastics"] == "Science/Maths/Stochastics"
    order = renamed.topics
    assert set(order) == {
        "Databases",
        "Mathematics for kids",
        "Science",
        "Science/Maths",
        "Science/Maths/Stochastics",
    }
    assert order.index("Science") < order.index("Science/Maths") < order.index("Science/Maths/Stochastics")
    filed = {"Science/Maths", "Science/Maths/Stochastics", "Mathematics for kids", "Databases"}
    assert {d.topic for d in renamed.documents} == filed
    assert renamed_key("Mathematics for kids", "Math", "Maths") == "Mathematics for kids"


def test_a_communitys_key_is_matched_to_the_topics_it_may_be_another_name_for():
    own = ["Math", "Databases", "Databases/SQLite", "Mathematics for kids", "Art"]
    assert alike_topics("Science/Mathematics", own) == ["Math", "Mathematics for kids"]
    assert alike_topics("Computing/databases", own) == ["Databases"]
    assert alike_topics("Data bases", own) == ["Databases"]  # close in spelling
    assert alike_topics("Artificial intelligence", own) == []  # "Art": too short to abbreviate it
    assert alike_topics("Databases", own) == []  # the node is in that community already
