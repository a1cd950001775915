"""Short Chinese searches at scale, and what their index costs a write.

40,000 messages per user (``--users`` 2 by default, ``--per-user``), seeded
as bench/data.py seeds them (COPY into a throwaway PostgreSQL,
tests/support/plugins/servers.py) from its vocabularies: half of them a question of one
sentence, half an answer of a few hundred characters, in Chinese (an English
word in it now and then) or English. Then, through Django's test
client as bench/data.py measures (the server's time, no network):

- searches of one and two Chinese characters (below pg_trgm's three), common
  and rare, alone and beside an English word, as random users;
- the write cost of chat_message's indexes: inserting a message of ~200
  characters, and a checkpoint of a streaming answer (one UPDATE of its text,
  docs/latency.md rule 5) at 20,000 characters, Chinese and English.

Budget: search p95 <= 200 ms (bench/data.py's). Run: ``python -m bench.short_cjk``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from bench.data import (
    CHINESE,
    ENGLISH,
    SEARCH_BUDGET_MS,
    _row,
    _text,
    _timed,
    _words,
    measure_search,
    print_table,
    seed,
    throwaway_postgres,
)

SEED = 40
QUERIES = (
    "模",  # one character, in most Chinese messages
    "鲸",
    "霜",  # nowhere
    "模型",  # two characters, in most Chinese messages
    "章鱼",
    "火山",
    "显存",  # nowhere
    "gpu 章鱼",  # beside an English word
    "模型 fibonacci",
)


def _chat_text(rng: random.Random) -> str:
    """A question (one sentence) or an answer (a few hundred characters), in
    Chinese with an English word now and then, or in English."""
    if rng.random() < 0.5:
        return _text(rng)
    sentences = []
    for _ in range(rng.randint(4, 16)):
        if rng.random() < 0.5:
            words = _words(rng, CHINESE, rng.randint(6, 20))
            words.insert(rng.randint(0, len(words)), _words(rng, ENGLISH, 1)[0])
            sentences.append("".join(words) + "。")
        else:
            sentences.append(" ".join(_words(rng, ENGLISH, rng.randint(8, 30))) + ". ")
    return "".join(sentences)


def _long_text(rng: random.Random, chars: int, chinese: bool) -> str:
    text = ""
    while len(text) < chars:
        if chinese:
            text += "".join(_words(rng, CHINESE, 12)) + "。"
        else:
            text += " ".join(_words(rng, ENGLISH, 12)) + ". "
    return text[:chars]


def _execute(sql: str, params: list[Any]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _writes(conversation: Any, chinese: bool, rounds: int) -> list[dict[str, Any]]:
    from chat.models import Message

    rng = random.Random(SEED + chinese)
    language = "Chinese" if chinese else "English"
    short = [_long_text(rng, 200, chinese) for _ in range(rounds)]
    inserts = _timed(
        [
            lambda text=text: Message.objects.create(
                conversation=conversation, role="user", content=text
            )
            for text in short
        ]
    )
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        status=Message.Status.STREAMING,
        content="",
    )
    full = _long_text(rng, 20_000 + rounds * 40, chinese)
    # Each checkpoint saves the answer grown by ~40 characters: its size is
    # what costs.
    save = "UPDATE chat_message SET content = %s, updated_at = now() WHERE id = %s"
    checkpoints = _timed(
        [
            lambda n=n: _execute(save, [full[: 20_000 + n * 40], answer.pk])
            for n in range(rounds)
        ]
    )
    beat = "UPDATE chat_message SET updated_at = now() WHERE id = %s"
    beats = _timed([lambda: _execute(beat, [answer.pk])] * rounds)
    return [
        _row(f"insert: 200 chars, {language}", inserts, None),
        _row(f"checkpoint: 20,000 chars, {language}", checkpoints, None),
        _row(f"heartbeat: 20,000 chars, {language}", beats, None),
    ]


def measure_writes(owner: int, rounds: int) -> list[dict[str, Any]]:
    """Each write in its own transaction (autocommit), as the site does."""
    from chat.models import Conversation

    conversation = Conversation.objects.create(owner_id=owner, title="writes")
    return _writes(conversation, True, rounds) + _writes(conversation, False, rounds)


def index_sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexrelname, pg_relation_size(indexrelid) "
            "FROM pg_stat_user_indexes WHERE relname = 'chat_message' ORDER BY 1"
        )
        return dict(cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2)
    parser.add_argument("--per-user", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=30, help="requests per query")
    args = parser.parse_args()

    with throwaway_postgres("bench.short_cjk"):
        messages = args.users * args.per_user
        started = time.perf_counter()
        owners = seed(args.users, messages // 50, messages, _chat_text)
        print(
            f"Seeded {messages:,} messages ({args.per_user:,} per user) "
            f"in {time.perf_counter() - started:.0f} s."
        )
        rows = [
            _row(f"search “{query}”", times, SEARCH_BUDGET_MS)
            for query, times in measure_search(owners, args.rounds, QUERIES).items()
        ]
        rows += measure_writes(owners[0], args.rounds)
        sizes = index_sizes()
    print_table(rows)
    for name, size in sizes.items():
        print(f"index {name}: {size / 1e6:.1f} MB")
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "short_cjk.json").write_text(json.dumps({"rows": rows, "indexes": sizes}))
    if not all(row["ok"] for row in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
