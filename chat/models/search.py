"""Full-text search over one user's conversations: titles, questions and
answers (their thinking too, if asked), ranked, with a snippet around the match.

The indexes are made by chat/migrations/0014_search_index.py, one kind per
database; this module is the only reader of them.

A query is cut at whitespace into terms, and every term must be found (AND).
Nothing the user types is ever passed on as query syntax: operators, quotes and
punctuation are only text.
- A term with Chinese, Japanese or Korean characters is matched as a substring
  (those languages do not separate words with spaces): on PostgreSQL with
  ILIKE over the pg_trgm index, on SQLite with the FTS5 trigram table. Both
  need three characters to use an index. A shorter term (most Chinese words
  are two characters): on PostgreSQL, the messages that have its characters
  (one, or two side by side) come from the index of CJK grams that
  chat/migrations/0022_short_cjk_search.py makes, and ILIKE checks them; on
  SQLite it is checked row by row within the user's own messages, which the
  owner's conversations bound.
- Any other term: its words, each as the start of a word (so "fibo" finds
  "fibonacci") on PostgreSQL's tsvector, ranked by ts_rank; on SQLite as a
  trigram substring, ranked by bm25.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from django.db import connection
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from chat.models.messages import Message

MAX_QUERY_CHARS: Final = 200
MAX_TERMS: Final = 10
SNIPPET_CHARS: Final = 160
CJK = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
WORD = re.compile(r"[^\W_]+")
# The characters whose grams chat_cjk_grams indexes (the GRAM_CLASS of
# chat/migrations/0022_short_cjk_search.py: they must agree).
GRAM_CLASS: Final = (
    "[\u3040-\u30ff\u3100-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)
GRAMS = re.compile(GRAM_CLASS + "+")


class QueryTooLong(ValueError):
    pass


@dataclass(frozen=True)
class Term:
    text: str  # as matched: lower case, no control characters
    words: tuple[str, ...]  # for the word index: empty for a CJK term
    cjk: bool


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]
    thinking: bool = False

    @property
    def empty(self) -> bool:
        return not self.terms


def _clean(text: str) -> str:
    # Lone surrogates and NUL cannot be stored or sent to the database;
    # other control characters are never what someone searches for.
    text = text.encode("utf-8", "replace").decode("utf-8")
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cs") else c for c in text)


def parse(text: str, *, thinking: bool = False) -> Query:
    """The terms of a query; raises QueryTooLong over MAX_QUERY_CHARS."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLong(
            gettext("Search for at most %(limit)d characters (this is %(length)d).")
            % {"limit": MAX_QUERY_CHARS, "length": len(text)}
        )
    terms: list[Term] = []
    for raw in _clean(text).lower().split():
        if CJK.search(raw):
            # The CJK runs and the words around them, each a substring.
            parts = [p for p in re.split(r"[\W_]+", raw) if p]
            terms += [Term(p, (), True) for p in parts]
        else:
            words = tuple(WORD.findall(raw))
            if words:
                terms.append(Term(" ".join(words), words, False))
    unique = tuple(dict.fromkeys(terms))[:MAX_TERMS]
    return Query(unique, thinking)


@dataclass(frozen=True)
class Hit:
    conversation_id: int
    title: str
    message_id: int | None  # None: the title matched
    role: str
    text: str
    archived: bool
    updated_at: datetime

    def snippet(self, query: Query) -> SafeString:
        return highlight(self.text, query)

    @property
    def url(self) -> str:
        base = reverse("conversation", args=[self.conversation_id])
        if self.message_id is None:
            return base
        return f"{base}?message={self.message_id}#message-{self.message_id}"


def _needles(query: Query) -> list[str]:
    return [w for t in query.terms for w in (t.words or (t.text,))]


def highlight(text: str, query: Query, width: int = SNIPPET_CHARS) -> SafeString:
    """A window of `text` around the first match, escaped, each match in <mark>."""
    flat = " ".join(text.split())
    lower = flat.lower()
    needles = sorted(set(_needles(query)), key=len, reverse=True)
    first = min((i for n in needles if (i := lower.find(n)) >= 0), default=0)
    start = max(0, first - width // 3)
    if start:
        # Start at a word's beginning where there is one near.
        space = flat.rfind(" ", max(0, start - 15), first)
        start = space + 1 if space >= 0 else start
    window = flat[start : start + width]
    spans: list[tuple[int, int]] = []
    low_window = window.lower()
    for needle in needles:
        at = low_window.find(needle)
        while at >= 0:
            end = at + len(needle)
            if not any(a < end and at < b for a, b in spans):
                spans.append((at, end))
            at = low_window.find(needle, end)
    out, last = [], 0
    for a, b in sorted(spans):
        out += [escape(window[last:a]), "<mark>", escape(window[a:b]), "</mark>"]
        last = b
    out.append(escape(window[last:]))
    prefix = "…" if start else ""
    suffix = "…" if start + width < len(flat) else ""
    return mark_safe(prefix + "".join(out) + suffix)  # noqa: S308 (escaped above)


def _like(text: str) -> str:
    """A LIKE pattern finding `text` anywhere, its % _ \\ escaped by Django's
    own rule for LIKE (matched by the ESCAPE '\\' of each query here)."""
    return f"%{connection.ops.prep_for_like_query(text)}%"


def _title_hits(owner_id: int, query: Query, limit: int) -> list[Hit]:
    sql = [
        "SELECT c.id, c.title, c.archived_at IS NOT NULL, c.updated_at",
        "FROM chat_conversation c WHERE c.owner_id = %s AND c.listed",
    ]
    params: list[Any] = [owner_id]
    for needle in _needles(query):
        sql.append(
            "AND c.title ILIKE %s ESCAPE '\\'"
            if connection.vendor == "postgresql"
            else "AND c.title LIKE %s ESCAPE '\\'"
        )
        params.append(_like(needle))
    sql.append("ORDER BY c.updated_at DESC, c.id DESC LIMIT %s")
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(" ".join(sql), params)
        rows = cursor.fetchall()
    return [
        Hit(pk, title, None, "", title, archived, at)
        for pk, title, archived, at in rows
    ]


# What _fetch reads of each hit, and the join every message query makes.
COLUMNS = (
    "m.id, m.role, m.content, m.thinking, c.id, c.title, "
    "c.archived_at IS NOT NULL, c.updated_at"
)
JOIN = "JOIN chat_conversation c ON c.id = m.conversation_id"


def _owned_messages(
    owner_id: int, query: Query, substrings: list[str], like: str
) -> tuple[list[str], list[Any]]:
    """The WHERE terms every message query shares: the owner's listed
    conversations, shown messages only, and each of `substrings` found in the
    text (or the text and its thinking) with `like` (ILIKE or LIKE)."""
    where = ["c.owner_id = %s", "c.listed", "NOT m.replaced"]
    params: list[Any] = [owner_id]
    text = "(m.content || ' ' || m.thinking)" if query.thinking else "m.content"
    for needle in substrings:
        where.append(f"{text} {like} %s ESCAPE '\\'")
        params.append(_like(needle))
    return where, params


def _tsquery(query: Query) -> str:
    """A tsquery of plain words only (WORD's characters: no syntax survives),
    each a prefix, of the text alone (weight A) or with the thinking."""
    weight = "" if query.thinking else "A"
    words = [w for t in query.terms for w in t.words]
    return " & ".join(f"'{w}':*{weight}" for w in words)


def short_grams(query: Query) -> list[str]:
    """What chat_cjk_grams gives every text that has the query's CJK terms
    under three characters (pg_trgm's reach): each run of indexed characters
    in them, one or two characters long, is one of its grams."""
    return [
        gram
        for term in query.terms
        if term.cjk and len(term.text) < 3
        for gram in GRAMS.findall(term.text)
    ]


def _postgres_sql(owner_id: int, query: Query, limit: int) -> tuple[str, list[Any]]:
    tsquery = _tsquery(query)
    cjk = [term.text for term in query.terms if term.cjk]
    where, params = _owned_messages(owner_id, query, cjk, "ILIKE")
    grams = short_grams(query)
    if grams and not query.thinking:  # the index is of the text alone
        # Its index leaves out streaming answers (0022_short_cjk_search.py):
        # those are looked at as they are. The status is written out, not a
        # parameter, so that the planner sees the index's own condition.
        streaming = Message.Status.STREAMING.value
        where.append(
            f"(m.status = '{streaming}' OR (m.status <> '{streaming}' "
            "AND chat_cjk_grams(m.content) @> %s::text[]))"
        )
        params.append(grams)
    if tsquery:
        where.append("m.search_vector @@ to_tsquery('simple', %s)")
        params.append(tsquery)
    rank = "ts_rank(m.search_vector, to_tsquery('simple', %s))" if tsquery else "0"
    sql = (
        f"SELECT {COLUMNS}, {rank} AS rank FROM chat_message m {JOIN} "
        f"WHERE {' AND '.join(where)} "
        "ORDER BY rank DESC, m.id DESC LIMIT %s"
    )
    return sql, ([tsquery] if tsquery else []) + params + [limit]


def _postgres_hits(owner_id: int, query: Query, limit: int) -> list[Hit]:
    return _fetch(*_postgres_sql(owner_id, query, limit), query)


def _fts5_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _sqlite_hits(owner_id: int, query: Query, limit: int) -> list[Hit]:
    needles = _needles(query)
    indexed = [n for n in needles if len(n) >= 3]
    short = [n for n in needles if len(n) < 3]
    column = "" if query.thinking else "content : "
    where, params = _owned_messages(owner_id, query, short, "LIKE")
    if indexed:
        match = " AND ".join(column + _fts5_phrase(n) for n in indexed)
        sql = (
            f"SELECT {COLUMNS}, bm25(chat_message_search) AS rank "
            f"FROM chat_message_search s JOIN chat_message m ON m.id = s.rowid {JOIN} "
            f"WHERE chat_message_search MATCH %s AND {' AND '.join(where)} "
            "ORDER BY rank, m.id DESC LIMIT %s"
        )
        return _fetch(sql, [match, *params, limit], query)
    sql = (
        f"SELECT {COLUMNS}, 0 FROM chat_message m {JOIN} "
        f"WHERE {' AND '.join(where)} ORDER BY m.id DESC LIMIT %s"
    )
    return _fetch(sql, [*params, limit], query)


def _fetch(sql: str, params: list[Any], query: Query) -> list[Hit]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    hits = []
    for pk, role, content, thinking, conversation, title, archived, at, _ in rows:
        text = content
        if query.thinking and not _matches(content, query):
            text = thinking
        hits.append(Hit(conversation, title, pk, role, text, archived, at))
    return hits


def _matches(text: str, query: Query) -> bool:
    lower = text.lower()
    return any(n in lower for n in _needles(query))


def search(owner: Any, query: Query, limit: int = 20) -> list[Hit]:
    """The owner's conversations whose title has every term first (newest
    first), then their messages that have every term, best first; at most
    `limit` in all. Answers asked over the API only (not listed) are left out;
    archived conversations are in (the hit says so); versions a regenerate or
    an edit replaced are left out, as the conversation's page leaves them out."""
    if query.empty:
        return []
    owner_id = owner.pk
    titles = _title_hits(owner_id, query, limit)
    messages = (_postgres_hits if connection.vendor == "postgresql" else _sqlite_hits)(
        owner_id, query, limit
    )
    return (titles + messages)[:limit]
