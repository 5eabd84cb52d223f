import pytest

from crawler.parse import parse_html
from crawler.preview import (
    TopicTermWeights,
    passages,
    preview,
    repeated_lines,
    split_sentences,
    topic_term_weights,
)
from metamodels.features import FeatureConfig, Featurizer
from metamodels.mi import TermMatrix

TERMS = Featurizer(FeatureConfig()).terms
DATABASES = [
    "An index speeds up a query on a table. The planner picks an index scan.",
    "A transaction commits rows to the table; the query sees committed rows.",
]
SYSADMIN = [
    "Configure the web server with a virtual host. Restart the daemon after editing.",
    "The firewall blocks ports; the daemon logs to syslog on the host.",
]
PAGE = (
    "Welcome to our site. Our opening hours are nine to five. "
    "Each query uses an index on the table when the planner finds it cheaper. "
    "Contact us by email."
)


def weights():
    return topic_term_weights(TERMS, {"Databases": DATABASES, "Sysadmin": SYSADMIN})


def test_topic_terms_are_those_of_the_topic_documents():
    w = weights()
    assert {"queri", "index", "tabl"} <= set(w["Databases"])
    assert "daemon" in w["Sysadmin"] and "daemon" not in w["Databases"]
    assert all(v > 0 for v in w["Databases"].values())


def test_preview_picks_the_sentence_with_the_topic_terms():
    text = preview(PAGE, weights()["Databases"], TERMS, max_sentences=1)
    assert text == "Each query uses an index on the table when the planner finds it cheaper."


def test_preview_keeps_page_order_and_length_limit():
    page = "The daemon restarted. Nothing here. The web server runs a virtual host."
    two = preview(page, weights()["Sysadmin"], TERMS, max_sentences=2)
    assert two == "The daemon restarted. ... The web server runs a virtual host."
    short = preview(page, weights()["Sysadmin"], TERMS, max_sentences=2, max_chars=20)
    assert len(short) == 20 and short.endswith("\u2026")


def test_preview_without_topic_terms_falls_back_to_the_first_sentence():
    assert preview("Hello there. Goodbye now.", {"queri": 1.0}, TERMS) == "Hello there."
    assert preview("", {"x": 1.0}, TERMS) == ""


def test_sentences_split_on_punctuation_and_separators():
    assert split_sentences("One. Two!  Three?\n\nFour | Five") == ["One.", "Two!", "Three?", "Four", "Five"]


def test_subtopic_documents_count_for_their_parent():
    w = topic_term_weights(TERMS, {"Db": DATABASES[:1], "Db/Tx": DATABASES[1:], "Ops": SYSADMIN})
    assert "commit" in w["Db"] and "commit" in w["Db/Tx"]


def test_a_topics_weights_are_computed_when_asked_for_and_only_its_own(monkeypatch):
    computed = []
    mutual_information = TermMatrix.mutual_information
    monkeypatch.setattr(
        TermMatrix,
        "mutual_information",
        lambda self, y, kind: computed.append(y) or mutual_information(self, y, kind),
    )
    lazy = TopicTermWeights(TERMS, {"Databases": DATABASES, "Sysadmin": SYSADMIN, "Empty": []})
    assert computed == []
    assert lazy["Sysadmin"] == weights()["Sysadmin"]
    assert len(computed) == 1 + 2  # one for the topic asked for; `weights()` computes both
    assert dict(lazy) == weights()  # a topic without documents has no weights
    assert "Empty" not in lazy and lazy.get("Nowhere") is None
    with pytest.raises(KeyError):
        lazy["Empty"]


MENU_PAGE = b"""<html><head><title>Isolation</title></head><body>
<div class="menu"><ul>
<li><a href="/">Home</a>
<li><a href="/query">Query planner</a>
<li><a href="/index">Index types</a>
<li><a href="/tables">Tables</a>
</ul></div>
<h1>Transaction isolation</h1>
<p>Each transaction sees the rows that were committed
before its first query; the planner
picks an index scan on the table when it is cheaper.</p>
<div class="footer"><a href="/about">About</a> | <a href="/contact">Contact</a></div>
</body></html>"""


def test_preview_of_a_page_with_a_navigation_menu_comes_from_its_paragraph():
    text = parse_html(MENU_PAGE, "http://db.test/isolation").text
    assert "Query planner" in text  # the menu is no <nav>: it is in the text the classifiers see
    shown = preview(text, weights()["Databases"], TERMS)
    assert shown == (
        "Each transaction sees the rows that were committed before its first query; the planner "
        "picks an index scan on the table when it is cheaper."
    )


def test_menu_lines_and_headings_are_labels_and_wrapped_lines_join_into_sentences():
    text = (
        "Home\nAbout\nSQLite is Transactional\n"
        "A transactional database is one in which\nall changes appear to be\n"
        "Atomic, Consistent, Isolated, and Durable\n(ACID). SQLite implements\nserializable transactions.\n"
        "13.2. Transaction Isolation\nThis page last modified in 2021"
    )
    found = [(p.text, p.content) for p in passages(text)]
    assert found == [
        ("Home", False),
        ("About", False),
        ("SQLite is Transactional", False),
        (
            "A transactional database is one in which all changes appear to be "
            "Atomic, Consistent, Isolated, and Durable (ACID).",
            True,
        ),
        ("SQLite implements serializable transactions.", True),
        ("13.2. Transaction Isolation", False),
        ("This page last modified in 2021", False),
    ]


def test_a_label_shows_only_when_no_sentence_carries_the_topic():
    page = "Contents\nQuery planner and index scans\nTable basics\nWe hope you enjoy reading it."
    assert preview(page, weights()["Databases"], TERMS, max_sentences=1) == "Query planner and index scans"
    page += " The planner uses an index to query a table."
    shown = preview(page, weights()["Databases"], TERMS, max_sentences=1)
    assert shown == "The planner uses an index to query a table."


def test_passages_with_a_preferred_term_come_first_even_past_the_budget():
    filler = "Welcome to the site where you can read about many things.\n" * 40
    page = filler + "A vacuum reclaims space.\nThe planner uses an index to query a table."
    chosen = preview(page, weights()["Databases"], TERMS, max_sentences=1, preferred={"vacuum"}, budget=200)
    assert chosen == "A vacuum reclaims space."
    topical = preview(page, weights()["Databases"], TERMS, max_sentences=1, budget=200)
    assert topical == "Welcome to the site where you can read about many things."  # within budget: no topic


def test_lines_the_training_pages_share_are_no_topic_terms():
    footer = "\nPurchase a support contract"
    shared = topic_term_weights(TERMS, {"Databases": [d + footer for d in DATABASES], "Sysadmin": SYSADMIN})
    assert "purchas" in shared["Databases"]
    dropped = topic_term_weights(
        TERMS,
        {"Databases": [d + footer for d in DATABASES], "Sysadmin": SYSADMIN},
        drop_repeated_lines=True,
    )
    assert "purchas" not in dropped["Databases"] and "queri" in dropped["Databases"]


def test_preview_leaves_out_the_site_template_but_not_a_sentence_through_it():
    pages = [
        f"Home\nIndex tables\nPage {n} is about something else.\nThe query index table planner." for n in "AB"
    ]
    template = repeated_lines(pages)
    assert template == {"Home", "Index tables", "The query index table planner."}
    page = "Home\nIndex tables\nTransactions\nare committed rows on a table.\nThe query index table planner."
    shown = preview(page, weights()["Databases"], TERMS, skip_lines=template)
    assert shown == "Transactions are committed rows on a table."
    assert preview("Home\nIndex tables", weights()["Databases"], TERMS, skip_lines=template) == "Index tables"
