"""Accent folding: "Aschenbrödel" and "Aschenbrodel" are the same name to a reader.

Users and other pages often write a name without its diacritics, so the lookup keys that match
names (document titles, title links) and the question's terms are compared folded. The rule is
the database's `lanegraph_fold_accents` (sql_templates/schema/0068_accent_folded_title_keys.sql)
written again in Python, character for character: decompose (NFKD), drop the combining
diacritical marks (U+0300..U+036F), recompose (NFC). Letters that are not a base letter plus a
mark ("ł", "ø", "ß") stay as they are on both sides.
"""

from __future__ import annotations

import re
import unicodedata

_COMBINING_MARKS = re.compile("[\u0300-\u036f]")


def fold_accents(text: str) -> str:
    return unicodedata.normalize("NFC", _COMBINING_MARKS.sub("", unicodedata.normalize("NFKD", text)))
