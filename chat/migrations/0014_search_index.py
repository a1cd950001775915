"""Full-text search over messages (chat.models.search), one index per database.

PostgreSQL: a stored tsvector of each message (its text weighted A, its
thinking D, so one GIN index serves both "answers only" and "with thinking"),
made with the 'simple' configuration (no stemming: a team writes in several
languages, and an English stemmer would mangle the others) after putting
spaces around each Chinese, Japanese or Korean character, so that a Latin word
written against CJK text ("用GPU加速") is still a word of its own; and a pg_trgm
GIN index of the text, for CJK words, which PostgreSQL's parser does not split.

SQLite: an FTS5 table with the trigram tokenizer over the same two columns,
kept in step with chat_message by triggers (an external-content table: the
text is stored once).

Both are filled from the rows already there. Nothing here is in Django's model
state: the models never read these columns, only chat.models.search's SQL does.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# Han, Hiragana/Katakana, Hangul and the CJK punctuation and full-width forms.
CJK_CLASS = (
    "[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)

POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"""
    ALTER TABLE chat_message ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        setweight(to_tsvector('simple',
            regexp_replace(content, '({CJK_CLASS})', ' \\1 ', 'g')), 'A')
        || setweight(to_tsvector('simple',
            regexp_replace(thinking, '({CJK_CLASS})', ' \\1 ', 'g')), 'D')
    ) STORED
    """,
    "CREATE INDEX chat_message_search ON chat_message USING gin (search_vector)",
    "CREATE INDEX chat_message_trigram ON chat_message "
    "USING gin (content gin_trgm_ops)",
    "CREATE INDEX chat_conversation_title_trigram ON chat_conversation "
    "USING gin (title gin_trgm_ops)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS chat_conversation_title_trigram",
    "DROP INDEX IF EXISTS chat_message_trigram",
    "DROP INDEX IF EXISTS chat_message_search",
    "ALTER TABLE chat_message DROP COLUMN IF EXISTS search_vector",
]

SQLITE_FORWARD = [
    """
    CREATE VIRTUAL TABLE chat_message_search USING fts5(
        content, thinking, content='chat_message', content_rowid='id',
        tokenize='trigram'
    )
    """,
    "INSERT INTO chat_message_search(chat_message_search) VALUES ('rebuild')",
    """
    CREATE TRIGGER chat_message_search_insert AFTER INSERT ON chat_message BEGIN
        INSERT INTO chat_message_search(rowid, content, thinking)
        VALUES (new.id, new.content, new.thinking);
    END
    """,
    """
    CREATE TRIGGER chat_message_search_delete AFTER DELETE ON chat_message BEGIN
        INSERT INTO chat_message_search(chat_message_search, rowid, content, thinking)
        VALUES ('delete', old.id, old.content, old.thinking);
    END
    """,
    # Only a change of the text: a streamed answer's figures and status are
    # updated often, its text at checkpoints (chat.live.checkpoints).
    """
    CREATE TRIGGER chat_message_search_update
    AFTER UPDATE OF content, thinking ON chat_message BEGIN
        INSERT INTO chat_message_search(chat_message_search, rowid, content, thinking)
        VALUES ('delete', old.id, old.content, old.thinking);
        INSERT INTO chat_message_search(rowid, content, thinking)
        VALUES (new.id, new.content, new.thinking);
    END
    """,
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS chat_message_search_update",
    "DROP TRIGGER IF EXISTS chat_message_search_delete",
    "DROP TRIGGER IF EXISTS chat_message_search_insert",
    "DROP TABLE IF EXISTS chat_message_search",
]


def _run(statements: dict[str, list[str]]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("chat", "0013_sidebar_folders_imports")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
