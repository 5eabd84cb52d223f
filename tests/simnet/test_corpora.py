from __future__ import annotations

import io
import tarfile
from collections import Counter

import pytest

from simnet.corpora import Document, html_to_text, load_corpus, strip_http_headers
from simnet.paths import SharedDataMissing

REUTERS_SGM = """<!DOCTYPE lewis SYSTEM "lewis.dtd">
<REUTERS TOPICS="YES" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" OLDID="5544" NEWID="1">
<TOPICS><D>cocoa</D><D>grain</D></TOPICS>
<TEXT>&#2;
<TITLE>BAHIA COCOA REVIEW</TITLE>
<BODY>Showers continued &lt;in&gt; the Bahia cocoa zone.</BODY></TEXT>
</REUTERS>
<REUTERS TOPICS="NO" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" OLDID="5545" NEWID="2">
<TOPICS></TOPICS><TEXT>not in ModApte</TEXT>
</REUTERS>
<REUTERS TOPICS="YES" LEWISSPLIT="TEST" CGISPLIT="TRAINING-SET" OLDID="5546" NEWID="3">
<TOPICS></TOPICS><TEXT TYPE="BRIEF">&#2;<TITLE>SHORT NOTE</TITLE></TEXT>
</REUTERS>
<REUTERS TOPICS="YES" LEWISSPLIT="NOT-USED" CGISPLIT="TRAINING-SET" OLDID="5547" NEWID="4">
<TOPICS><D>earn</D></TOPICS><TEXT>unused</TEXT>
</REUTERS>
"""

WEBKB_PAGE = (
    b"Date: Wednesday, 15-Jan-97 00:21:03 GMT\nServer: NCSA/1.1\nContent-type: text/html\n\n"
    b"<html><head><title>CS 474</title><style>p {color: red}</style></head>"
    b"<body><h1>Operating Systems</h1><script>var x = 1;</script><p>Welcome, students</p></body></html>"
)


def _write_tar(path, files: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))


@pytest.fixture
def tiny_shared(tmp_path, monkeypatch):
    """A shared-data folder holding miniature archives in the real formats."""
    data = tmp_path / "data"
    corpora = data / "corpora"
    _write_tar(
        corpora / "20news-bydate.tar.gz",
        {
            "20news-bydate/20news-bydate-train/sci.space/10": b"Subject: orbit\n\nThe shuttle \xe9 orbit",
            "20news-bydate/20news-bydate-train/sci.space/9": b"Subject: moon\n\nApollo",
            "20news-bydate/20news-bydate-test/rec.autos/7": b"Subject: cars\n\nengine",
        },
    )
    _write_tar(corpora / "reuters21578.tar.gz", {"./reut2-000.sgm": REUTERS_SGM.encode("latin-1")})
    _write_tar(
        corpora / "webkb-raw.tar.gz",
        {
            "bert/webkb/course/cornell/http^^cs.cornell.edu^cs474.html": WEBKB_PAGE,
            "bert/webkb/student/texas/http^^cs.utexas.edu^~bob^": b"<p>Bob's page</p>",
        },
    )
    monkeypatch.setenv("TOPICSWARM_SHARED_DATA", str(data))
    monkeypatch.setenv("TOPICSWARM_CACHE", str(tmp_path / "cache"))
    return data


def test_20ng_documents_carry_group_label_and_bydate_split(tiny_shared):
    docs = load_corpus("20ng")
    assert [d.id for d in docs] == [
        "20ng/test/rec.autos/7",
        "20ng/train/sci.space/9",
        "20ng/train/sci.space/10",
    ]
    assert docs[2] == Document(
        "20ng/train/sci.space/10",
        "Subject: orbit\n\nThe shuttle é orbit",
        ("sci.space",),
        "train",
        "sci.space",
    )


def test_reuters_keeps_only_modapte_documents_with_their_topics(tiny_shared):
    docs = {d.id: d for d in load_corpus("reuters")}
    assert sorted(docs) == ["reuters/1", "reuters/3"]
    assert docs["reuters/1"].labels == ("cocoa", "grain")
    assert docs["reuters/1"].split == "train"
    assert "BAHIA COCOA REVIEW" in docs["reuters/1"].text
    assert "<in>" in docs["reuters/1"].text
    assert docs["reuters/3"].labels == ()
    assert docs["reuters/3"].split == "test"
    assert docs["reuters/3"].text == "SHORT NOTE"


def test_webkb_strips_headers_and_markup_and_holds_out_one_university(tiny_shared):
    docs = {d.source: d for d in load_corpus("webkb")}
    cornell = docs["cornell"]
    assert cornell.labels == ("course",)
    assert cornell.split == "test"
    assert cornell.text == "CS 474 Operating Systems Welcome, students"
    assert docs["texas"].split == "train"
    assert docs["texas"].text == "Bob's page"


def test_cached_corpus_equals_freshly_parsed_one(tiny_shared, tmp_path):
    first = load_corpus("reuters")
    assert list((tmp_path / "cache" / "corpora").glob("reuters-*.msgpack"))
    assert load_corpus("reuters") == first == load_corpus("reuters", use_cache=False)


def test_missing_archive_raises_shared_data_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPICSWARM_SHARED_DATA", str(tmp_path / "absent"))
    with pytest.raises(SharedDataMissing):
        load_corpus("20ng")


def test_unknown_corpus_name_is_refused():
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("imdb")


def test_strip_http_headers_leaves_plain_html_alone():
    assert strip_http_headers(b"<html>x</html>") == b"<html>x</html>"
    assert strip_http_headers(b"Server: x\r\n\r\n<html>y</html>") == b"<html>y</html>"


def test_html_to_text_decodes_latin1_when_not_utf8():
    assert html_to_text(b"<p>caf\xe9</p>") == "café"


@pytest.mark.parametrize(
    ("name", "train", "test"), [("20ng", 11314, 7532), ("reuters", 9603, 3299), ("webkb", 7414, 867)]
)
def test_real_corpora_have_published_split_sizes(shared_data, name, train, test):
    counts = Counter(d.split for d in load_corpus(name))
    assert counts == {"train": train, "test": test}
