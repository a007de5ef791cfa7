"""Documents and chunks written straight into the tables, so extraction can be tested on its own.

Chunks here are markdown sections (title line kept), a stand-in for the chunks asset's windows.
"""

from __future__ import annotations

import hashlib
import re

from pipelines.resources.database import Database


def section_chunks(text: str) -> list[str]:
    title = text.splitlines()[0]
    sections = [s.strip() for s in re.split(r"^(?=## )", text, flags=re.MULTILINE) if s.strip()]
    return [section if section.startswith("# ") else f"{title}\n\n{section}" for section in sections]


def seed_documents(
    database: Database,
    documents: dict[str, str],
    *,
    scopes: list[str] | None = None,
) -> list[str]:
    """Insert (or replace) documents and their section chunks; returns the document ids."""
    with database.connection() as connection:
        for document_id, text in documents.items():
            chunks = section_chunks(text)
            connection.execute(
                """
                INSERT INTO document (id, title, uri, body, content_hash, scopes)
                VALUES (%s, %s, %s, %s, %s, %s)
                ON CONFLICT (id) DO UPDATE SET body = excluded.body, content_hash = excluded.content_hash,
                    retracted_at = NULL, updated_at = now()
                """,
                (document_id, text.splitlines()[0].lstrip("# "), f"file://{document_id}", text,
                 hashlib.sha256(text.encode()).hexdigest(), scopes or []),
            )
            connection.execute("DELETE FROM chunk WHERE document_id = %s AND position >= %s", (document_id, len(chunks)))
            for position, chunk in enumerate(chunks):
                connection.execute(
                    """
                    INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, scopes)
                    VALUES (%s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (id) DO UPDATE SET text = excluded.text, content_hash = excluded.content_hash
                    """,
                    (f"{document_id}#{position}", document_id, position, chunk, len(chunk.split()),
                     hashlib.sha256(chunk.encode()).hexdigest(), scopes or []),
                )
    return list(documents)


def retract_document(database: Database, document_id: str) -> None:
    with database.connection() as connection:
        connection.execute("UPDATE document SET retracted_at = now() WHERE id = %s", (document_id,))
        connection.execute("DELETE FROM chunk WHERE document_id = %s", (document_id,))
