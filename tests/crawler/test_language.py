import pytest

from crawler.language import LanguageCheck

ENGLISH = (
    "The query planner chooses the cheapest plan for each statement, and it uses the statistics that "
    "were gathered by the analyze command when they are available."
)
GERMAN = (
    "Der Anfrageplaner wählt für jede Anweisung den günstigsten Plan und nutzt dabei die Statistiken, "
    "die vom Befehl gesammelt wurden, wenn sie vorhanden sind."
)
FRENCH = (
    "Le planificateur choisit le plan le moins coûteux pour chaque requête et il utilise les "
    "statistiques qui ont été collectées par la commande lorsque elles sont disponibles."
)


def test_english_page_passes_an_english_crawl():
    check = LanguageCheck("english")
    assert check.score(ENGLISH) > 5
    assert check.accepts(ENGLISH)


@pytest.mark.parametrize("text", [GERMAN, FRENCH])
def test_foreign_pages_with_shared_web_vocabulary_are_rejected(text):
    check = LanguageCheck("english")
    assert not check.accepts(text + " homepage email server link")
    assert check.score(text) < 0


def test_desired_language_can_be_german():
    check = LanguageCheck("german")
    assert check.accepts(GERMAN)
    assert not check.accepts(ENGLISH)


def test_short_pages_without_sentences_fall_below_the_threshold():
    assert not LanguageCheck("english", min_score=3).accepts("Index | Next | Previous | PostgreSQL 16")
    assert LanguageCheck("english", min_score=0).accepts("Index | Next | Previous")


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="language must be one of"):
        LanguageCheck("klingon")
