"""Small PDFs for the tests, written byte by byte (independent of the pypdf that reads them)."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _uri_action(url: str) -> str:
    return f"/A << /S /URI /URI ({_escape(url)}) >>"


def _references(numbers: list[int]) -> str:
    return " ".join(f"{n} 0 R" for n in numbers)


def make_pdf(pages: list[str], title: str | None = None, links: list[str] = ()) -> bytes:
    """A PDF of one page per text (Helvetica, one line each), the title in its metadata, and every link
    as a URI link annotation on the first page."""
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # filled in once the page tree's number is known
    font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    link = "/Type /Annot /Subtype /Link /Rect [72 72 144 90]"
    annotations = [add(f"<< {link} {_uri_action(u)} >>") for u in links]
    tree = len(objects) + 2 * len(pages) + 1
    page_numbers = []
    for index, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({_escape(text)}) Tj ET".encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        annots = f" /Annots [{_references(annotations)}]" if index == 0 and annotations else ""
        page_numbers.append(
            add(
                f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                f"/Resources << /Font << /F1 {font} 0 R >> >>{annots} >>"
            )
        )
    assert add(f"<< /Type /Pages /Kids [{_references(page_numbers)}] /Count {len(pages)} >>") == tree
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R >>".encode()
    info = add(f"<< /Title ({_escape(title)}) >>") if title is not None else None

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info_entry = f" /Info {info} 0 R" if info else ""
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R{info_entry} >>"
    out += b"trailer\n" + trailer.encode() + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
