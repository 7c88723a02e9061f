"""Where documents come from. ``READERS`` maps a lower-case file extension to its reader."""

from hanrag.sources.document import Reader
from hanrag.sources.files import READERS, read_corpus

__all__ = ["READERS", "Reader", "read_corpus"]
