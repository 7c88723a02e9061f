"""PDFs for the tests, written by fpdf2: one text per page, the source in the document's metadata."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF


def write_pdf(path: Path, pages: list[str], *, title: str = "", source: str = "", size: int = 12) -> Path:
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    if source:
        pdf.set_subject(f"Source: {source}")
    pdf.set_font("Helvetica", size=size)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, size * 7 / 12, text)
    pdf.output(str(path))
    return path
