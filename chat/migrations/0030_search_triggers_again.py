from importlib import import_module

from django.db import migrations

# SQLite adds a column with a check (Message.steps, a JSONField, 0023) or a
# NOT NULL one (0026) by making chat_message anew, and the search index's
# triggers (0014) go with the old table: no message written after that was
# found (tests/models/test_search.py in the SQLite pass). As 0021 did: the
# triggers made again and the index rebuilt from the table. On PostgreSQL,
# nothing.
_search = import_module("chat.migrations.0014_search_index")
_triggers = _search._run(
    {"sqlite": import_module("chat.migrations.0021_message_reserved_tokens").SQLITE_TRIGGERS}
)


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0029_tool_call_index'),
    ]

    operations = [
        migrations.RunPython(_triggers, _triggers),
    ]
