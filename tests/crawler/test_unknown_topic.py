"""A topic key the taxonomy lacks is named in the error with the keys the user most likely meant: keys are
folder paths, and people type a folder's name, in any case, or misspell it."""

from crawler.taxonomy import TOPICS_LISTED_API, similar_topics, unknown_topic

KEYS = (
    "",
    "Arts",
    "Science",
    "Science/Mathematics",
    "Science/Mathematics/Stochastics",
    "Science/Input%2FOutput",
)


def test_a_key_typed_in_another_case_names_the_key():
    assert similar_topics("science", KEYS) == ["Science"]
    assert similar_topics("SCIENCE/mathematics", KEYS) == ["Science/Mathematics"]


def test_a_folders_name_names_the_full_path_of_each_folder_so_named():
    assert similar_topics("mathematics", KEYS) == ["Science/Mathematics"]
    assert similar_topics("Stochastics", KEYS) == ["Science/Mathematics/Stochastics"]
    assert similar_topics("input/output", KEYS) == ["Science/Input%2FOutput"]  # the name, unescaped
    assert similar_topics("Misc", ("A/Misc", "B/Misc", "C")) == ["A/Misc", "B/Misc"]


def test_a_misspelt_key_names_the_keys_close_to_it_and_a_far_one_none():
    assert similar_topics("Mathematcs", KEYS) == ["Science/Mathematics"]
    assert similar_topics("Scence", KEYS) == ["Science"]
    assert similar_topics("Databases", KEYS) == []
    assert similar_topics("", KEYS) == []  # the root is never suggested
    assert similar_topics("x" * 10_000, KEYS) == []


def test_the_message_names_the_suggestions_and_where_topics_are_listed():
    assert unknown_topic("arts", KEYS) == (
        "no topic 'arts' (did you mean 'Arts'?): list topics with `topicswarm topics list`"
    )
    assert unknown_topic("Nope", KEYS, listed=TOPICS_LISTED_API) == (
        "no topic 'Nope': list topics with `topicswarm topics list` (GET /api/topics)"
    )
    long = unknown_topic("y" * 100_000, KEYS)
    assert long.startswith("no topic 'yyy") and len(long) < 200
