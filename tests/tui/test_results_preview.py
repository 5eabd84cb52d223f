from textual.content import Content

from tui.screens.results import highlighted


def test_query_term_marks_become_bold_and_brackets_in_the_text_stay_literal():
    content = Content.from_markup(highlighted("Tables, [[indexes]], and a[x] [[Indexes]] On"))
    assert content.plain == "Tables, indexes, and a[x] Indexes On"
    bold = [content.plain[span.start : span.end] for span in content.spans if "b" in str(span.style).split()]
    assert bold == ["indexes", "Indexes"]
