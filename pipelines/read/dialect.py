"""A sqlglot PostgreSQL dialect that knows pgvector's and pg_trgm's operators.

Why it exists: stock sqlglot reads pgvector's cosine distance `<=>` as MySQL's null-safe equality
and writes it back as `IS NOT DISTINCT FROM` (valid SQL with another meaning), fails on `<#>`,
`<+>` and `<~>`, splits `<%>` into `< %s >`, and binds `<->` tighter than `+`. Lane templates rank
by these operators, so the compiler reads and writes SQL with `dialect=PgVector`.

Each operator parses into its own binary node at PostgreSQL's "any other operator" precedence
(sqlglot's bitwise level: looser than `+`, tighter than comparisons, so `a <=> b < 0.5` means
`(a <=> b) < 0.5`) and is written back verbatim. Named binds keep the style they were written in:
`:name` parses into `ColonPlaceholder`, psycopg's `%(name)s` into a plain `exp.Placeholder`
(as in PostgreSQL's lexer, `a<%(x)s` starts with the operator `<%`: space a bind from `<`).
`::` casts come back as `CAST(x AS VECTOR(384))`, which PostgreSQL reads as the same type.
`to_psycopg` writes a tree as text for psycopg's `execute(query, params)`.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.generators.postgres import PostgresGenerator
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import TokenType


class L2Distance(exp.Expression, exp.Binary):
    """`a <-> b`: pgvector's Euclidean distance (pg_trgm's text distance shares the operator)."""


class NegativeInnerProduct(exp.Expression, exp.Binary):
    """`a <#> b`: pgvector's inner product, negated so that smaller means closer."""


class CosineDistance(exp.Expression, exp.Binary):
    """`a <=> b`: pgvector's cosine distance, not MySQL's null-safe equality."""


class L1Distance(exp.Expression, exp.Binary):
    """`a <+> b`: pgvector's taxicab distance."""


class HammingDistance(exp.Expression, exp.Binary):
    """`a <~> b`: pgvector's Hamming distance between bit strings."""


class JaccardDistance(exp.Expression, exp.Binary):
    """`a <%> b`: pgvector's Jaccard distance between bit strings."""


class WordSimilar(exp.Expression, exp.Binary, exp.Predicate):
    """`a <% b`: pg_trgm, true when `a` is word-similar to some extent of `b`."""


class WordSimilarCommuted(exp.Expression, exp.Binary, exp.Predicate):
    """`a %> b`: pg_trgm's commutator of `<%`, i.e. `b <% a`."""


class StrictWordSimilar(exp.Expression, exp.Binary, exp.Predicate):
    """`a <<% b`: pg_trgm, like `<%` but the extent must match word boundaries."""


class StrictWordSimilarCommuted(exp.Expression, exp.Binary, exp.Predicate):
    """`a %>> b`: pg_trgm's commutator of `<<%`, i.e. `b <<% a`."""


class ColonPlaceholder(exp.Placeholder):
    """`:name`, the templates' bind style; a plain Placeholder writes psycopg's `%(name)s`."""


OPERATORS: dict[str, type[exp.Binary]] = {
    "<->": L2Distance,
    "<#>": NegativeInnerProduct,
    "<=>": CosineDistance,
    "<+>": L1Distance,
    "<~>": HammingDistance,
    "<%>": JaccardDistance,
    "<%": WordSimilar,
    "%>": WordSimilarCommuted,
    "<<%": StrictWordSimilar,
    "%>>": StrictWordSimilarCommuted,
}
# The vector distances: a select ordered by one of them against a table is an ANN window.
DISTANCE_OPERATORS = tuple(OPERATORS[op] for op in ("<->", "<#>", "<=>", "<+>", "<~>", "<%>"))

# sqlglot's TokenType enum is closed and its precedence tables are keyed by token type, so each
# operator gets a fresh member, numbered past TokenType's last so it never equals a stock one.
_OperatorToken = IntEnum(  # type: ignore[misc]
    "OperatorToken",
    [node.__name__ for node in OPERATORS.values()],
    start=max(TokenType) + 1,
)
# Typed as the TokenType they stand in for: sqlglot only hashes and compares token types.
_TOKEN_BY_OPERATOR = {text: cast(TokenType, _OperatorToken[node.__name__]) for text, node in OPERATORS.items()}


class PgVector(Postgres):
    """PostgreSQL plus pgvector and pg_trgm operators; use as `dialect=PgVector` or "pgvector"."""

    # Typed so that the optimizer's annotate_types can check what a distance is compared with.
    EXPRESSION_METADATA = {
        **Postgres.EXPRESSION_METADATA,
        **{
            node: {
                "returns": exp.DType.BOOLEAN
                if issubclass(node, exp.Predicate)
                else exp.DType.DOUBLE
            }
            for node in OPERATORS.values()
        },
    }

    class Tokenizer(Postgres.Tokenizer):
        KEYWORDS = {**Postgres.Tokenizer.KEYWORDS, **_TOKEN_BY_OPERATOR}

    class Parser(PostgresParser):
        BITWISE = {
            **PostgresParser.BITWISE,
            **{_TOKEN_BY_OPERATOR[text]: node for text, node in OPERATORS.items()},
        }

        PLACEHOLDER_PARSERS = {
            **PostgresParser.PLACEHOLDER_PARSERS,
            TokenType.COLON: lambda self: (
                self.expression(ColonPlaceholder(this=self._prev.text))
                if self._match_set(self.COLON_PLACEHOLDER_TOKENS)
                else None
            ),
        }

    class Generator(PostgresGenerator):
        TRANSFORMS = {
            **PostgresGenerator.TRANSFORMS,
            **{
                node: lambda self, expression, text=text: self.binary(expression, text)
                for text, node in OPERATORS.items()
            },
            ColonPlaceholder: lambda self, expression: f":{expression.name}",
        }


def parse_query(sql: str) -> exp.Query:
    """A SELECT (or set operation) in this dialect, such as a compiled statement's text."""
    tree = sqlglot.parse_one(sql, dialect=PgVector)
    if not isinstance(tree, exp.Query):
        raise ValueError(f"not a query: {sql[:80]!r}")
    return tree


def to_psycopg(expression: exp.Expr) -> str:
    """SQL text for psycopg's `execute(query, params)`: every bind becomes `%(name)s` (or `%s` when
    unnamed) and every other `%`, as in `<%>` or `LIKE 'a%'`, is doubled, as psycopg requires."""
    # PostgreSQL text can never hold a NUL, so NUL-wrapped bind names cannot clash with the query.
    marked = expression.transform(
        lambda node: exp.var(f"\x00{node.name if node.this else ''}\x00")
        if isinstance(node, exp.Placeholder)
        else node
    )
    escaped = marked.sql(dialect=PgVector).replace("%", "%%")
    return re.sub(r"\x00(\w*)\x00", lambda bind: f"%({bind[1]})s" if bind[1] else "%s", escaped)
