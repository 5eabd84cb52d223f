from crawler.preview import preview, split_sentences, topic_term_weights
from metamodels.features import FeatureConfig, Featurizer

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
