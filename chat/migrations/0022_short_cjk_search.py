"""An index for searches of one or two Chinese, Japanese or Korean characters
on PostgreSQL (chat.models.search), where pg_trgm's index of 0014 cannot help:
a trigram needs three characters, and most Chinese words are two.

`chat_cjk_grams(text)` is every CJK character of the text and every two of
them side by side (as pg_bigm indexes), of the characters that have no case
(Han, kana, Hangul, bopomofo: ILIKE's folding leaves them as they are, so an
exact gram is an exact match). A GIN index over it finds the messages that
have a short term's characters; ILIKE still checks each of them.

Only answers that are no longer streaming are indexed: while one streams, its
row is updated every second (docs/latency.md, rule 5), and PostgreSQL
recomputes every index of a row at each such update, even a heartbeat's that
leaves the text alone; the grams of a 20,000-character Chinese answer take
tens of milliseconds each time (bench/short_cjk.py measures it). The search
looks at streaming answers row by row (there are few).

SQLite: nothing (its short terms are checked row by row, as before).
"""

from __future__ import annotations

from importlib import import_module

from django.db import migrations

# 0014's: each database's own statements.
_run = import_module("chat.migrations.0014_search_index")._run

# chat.models.search.GRAM_CLASS says the same: they must agree.
GRAM_CLASS = (
    "[\u3040-\u30ff\u3100-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)

POSTGRES_FORWARD = [
    # Each run of CJK characters (one regular expression over the text), then
    # of each run: its characters, its pairs from the first, and its pairs
    # from the second. Linear in the text's length, however long a run is
    # (a window over the characters took twice as long). IMMUTABLE, as an
    # index needs.
    f"""
    CREATE FUNCTION chat_cjk_grams(text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ARRAY(
        SELECT gram FROM regexp_matches($1, '{GRAM_CLASS}+', 'g') AS runs(run),
        LATERAL (
            SELECT string_to_table(run[1], NULL)
            UNION ALL SELECT (regexp_matches(run[1], '..', 'g'))[1]
            UNION ALL SELECT (regexp_matches(substr(run[1], 2), '..', 'g'))[1]
        ) AS grams(gram)
    )
    $$
    """,
    "CREATE INDEX chat_message_cjk_grams ON chat_message "
    "USING gin (chat_cjk_grams(content)) WHERE status <> 'streaming'",
    # The planner reads no statistics of a partial index's expression: without
    # these, every gram looked rare, and a common one ("模型", in most Chinese
    # messages) was read from the index whole instead of stopping at the
    # newest twenty (bench/short_cjk.py: 0.8 s instead of 0.05).
    "CREATE STATISTICS chat_message_cjk_grams_stats "
    "ON (chat_cjk_grams(content)) FROM chat_message",
]
POSTGRES_BACKWARD = [
    "DROP STATISTICS IF EXISTS chat_message_cjk_grams_stats",
    "DROP INDEX IF EXISTS chat_message_cjk_grams",
    "DROP FUNCTION IF EXISTS chat_cjk_grams(text)",
]


class Migration(migrations.Migration):
    dependencies = [("chat", "0021_message_reserved_tokens")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD}),
        ),
    ]
