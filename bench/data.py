"""A team's data at scale: search, the sidebar and import on PostgreSQL.

1,000,000 messages over 20,000 conversations of 100 users (``--messages``,
``--conversations``, ``--users``) are written with COPY into a throwaway
PostgreSQL (tests/support/plugins/servers.py), half of the text English and half
Chinese, each
word drawn from a Zipf-like vocabulary so that some words are in most
conversations and some in a handful, as in real chats. Then, in this process,
through Django's test client (so the time is the server's: routing, the query
and the template, no network):

- a search for each of a set of English, Chinese and mixed queries, as random
  users, common words and rare ones;
- the sidebar's first page and a deep page (the keyset cursor of its 40th page)
  as random users;
- an import of 5,000 conversations (``--imports``) of chatsite's own JSON into
  an empty account, and the same file again (it creates nothing).

Budgets (issue 15): search p95 <= 200 ms, a sidebar page p95 <= 50 ms, the
import <= 60 s. Run alone: ``python -m bench.data``; ``make bench-data``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import ROOT, percentile

SEED = 15
ENGLISH = str.split(
    "the model answer question token server context memory thinking stream "
    "python function error request latency queue batch cache vector index "
    "database query search result folder export import user team admin link "
    "share prompt history window length speed throughput kernel driver gpu "
    "cpu core thread process socket relay frame browser page sidebar button "
    "octopus fibonacci whale glacier volcano nebula quartz saffron tundra "
    "lantern harbor meadow compass orchard falcon canyon ember prism atlas"
)
CHINESE = str.split(
    "模型 回答 问题 服务器 上下文 内存 思考 数据库 查询 搜索 结果 文件夹 导出 导入 "
    "用户 团队 管理员 链接 分享 历史 窗口 长度 速度 吞吐量 内核 驱动 显卡 处理器 "
    "线程 进程 浏览器 页面 按钮 章鱼 斐波那契 鲸鱼 冰川 火山 星云 石英 藏红花 灯笼 "
    "港口 草地 指南针 果园 猎鹰 峡谷 余烬 棱镜 地图集 量子 晶体 瀑布 沙漠 森林"
)
QUERIES = (
    "model",  # in most conversations
    "fibonacci",
    "octopus whale",
    "quartz saffron",
    "模型",  # two characters: below a trigram
    "斐波那契",
    "章鱼",
    "显卡 内存",
    "GPU 显存",  # mixed, and 显存 is nowhere
    "nothing-like-this-anywhere",
)


def _words(rng: random.Random, vocabulary: list[str], count: int) -> list[str]:
    # Zipf-like: the k-th word is drawn about 1/k as often as the first.
    weights = [1 / (k + 1) for k in range(len(vocabulary))]
    return rng.choices(vocabulary, weights=weights, k=count)


def _text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return " ".join(_words(rng, ENGLISH, rng.randint(8, 30))) + "."
    return "".join(_words(rng, CHINESE, rng.randint(6, 20))) + "。"


def _setup(database_url: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="chatsite.settings",
        DATABASE_URL=database_url,
        REDIS_URL="",
        ALLOWED_HOSTS="testserver",
    )
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _copy_rows(table: str, columns: list[str], rows: Iterator[tuple[Any, ...]]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY
        with raw.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _row_values(
    model: Any, given: dict[str, Any]
) -> tuple[list[str], Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """Every concrete column of `model`, filled from a row's values, else the
    field's default (so a new non-null column does not break the seeding)."""
    fields = [
        f for f in model._meta.concrete_fields if not f.primary_key or f.name in given
    ]
    columns = [f.column for f in fields]
    defaults = {f.attname: f.get_default() for f in fields}

    def values(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(f.attname, defaults[f.attname]) for f in fields)

    return columns, values


def seed(
    users: int,
    conversations: int,
    messages: int,
    text: Callable[[random.Random], str] = _text,
) -> list[int]:
    """The users' ids; their conversations and messages (each `text`) written
    with COPY."""
    from django.contrib.auth import get_user_model

    model = get_user_model()
    owners = model.objects.bulk_create(
        [model(username=f"reader{n}") for n in range(users)]
    )
    ids = [owner.pk for owner in owners]
    add_conversations(ids, conversations, messages // conversations, text)
    return ids


def add_conversations(
    owners: list[int],
    count: int,
    per: int,
    text: Callable[[random.Random], str] = _text,
) -> None:
    """`count` conversations of `per` messages each, dealt out to `owners`, last
    active at random over two years; written with COPY (ids after the last)."""
    from django.db import connection
    from django.db.models import Max
    from django.utils import timezone

    from chat.models import Conversation, Message

    rng = random.Random(SEED + count)
    now = timezone.now()
    first = (Conversation.objects.aggregate(m=Max("pk"))["m"] or 0) + 1
    next_message = (Message._base_manager.aggregate(m=Max("pk"))["m"] or 0) + 1
    columns, values = _row_values(Conversation, {"id": 0})
    starts: dict[int, datetime] = {}

    def conversation_rows() -> Iterator[tuple[Any, ...]]:
        for pk in range(first, first + count):
            start = now - timedelta(minutes=rng.randint(per, 2 * 365 * 24 * 60))
            starts[pk] = start
            yield values(
                {
                    "id": pk,
                    "owner_id": owners[pk % len(owners)],
                    "title": " ".join(_words(rng, ENGLISH, 4)),
                    "created_at": start,
                    "updated_at": start + timedelta(minutes=per),
                }
            )

    _copy_rows(Conversation._meta.db_table, columns, conversation_rows())
    columns, values = _row_values(Message, {"id": 0})

    def message_rows() -> Iterator[tuple[Any, ...]]:
        pk = next_message - 1
        for conversation in range(first, first + count):
            parent = None
            for n in range(per):
                pk += 1
                at = starts[conversation] + timedelta(minutes=n)
                yield values(
                    {
                        "id": pk,
                        "conversation_id": conversation,
                        "role": "user" if n % 2 == 0 else "assistant",
                        "content": text(rng),
                        "created_at": at,
                        "updated_at": at,
                        "shown_at": at,
                        "parent_id": parent,
                    }
                )
                parent = pk

    _copy_rows(Message._meta.db_table, columns, message_rows())
    with connection.cursor() as cursor:
        for table in (Conversation._meta.db_table, Message._meta.db_table):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT max(id) FROM {table}))"
            )
        cursor.execute("ANALYZE")


def _timed(calls: list[Callable[[], Any]]) -> list[float]:
    """Each call's wall time in ms."""
    times = []
    for call in calls:
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _client_for(user_id: int) -> Any:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(pk=user_id))
    return client


def _get(client: Any, url: str, **params: str) -> Callable[[], Any]:
    def call() -> Any:
        given = {name: value for name, value in params.items() if value}
        response = client.get(url, given, HTTP_HX_REQUEST="true")
        assert response.status_code == 200, (url, params, response.status_code)
        return response

    return call


def measure_search(
    owners: list[int], rounds: int, queries: tuple[str, ...] = QUERIES
) -> dict[str, list[float]]:
    from django.urls import reverse

    rng = random.Random(SEED + 1)
    url = reverse("search")
    times: dict[str, list[float]] = {}
    for query in queries:
        calls = [
            _get(_client_for(rng.choice(owners)), url, q=query) for _ in range(rounds)
        ]
        times[query] = _timed(calls)
    return times


def _row(name: str, times: list[float], budget: float | None) -> dict[str, Any]:
    p95 = percentile(times, 0.95)
    return {
        "scenario": name,
        "n": len(times),
        "p50_ms": percentile(times, 0.5),
        "p95_ms": p95,
        "max_ms": max(times),
        "budget_ms": budget,
        "ok": budget is None or p95 <= budget,
    }


def _pad(text: str, width: int) -> str:
    """`text` padded to `width` columns of a terminal (a CJK character takes two)."""
    columns = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(0, width - columns)


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'scenario':<44} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}  budget"
    )
    for row in rows:
        budget = "" if row["budget_ms"] is None else f"p95 <= {row['budget_ms']:g} ms"
        verdict = (
            "" if row["budget_ms"] is None else ("  ok" if row["ok"] else "  FAIL")
        )
        print(
            f"{_pad(row['scenario'], 44)} {row['n']:>5} {row['p50_ms']:>9.1f} "
            f"{row['p95_ms']:>9.1f} {row['max_ms']:>9.1f}  {budget}{verdict}"
        )


@contextmanager
def throwaway_postgres(bench: str) -> Iterator[None]:
    """A PostgreSQL of its own (tests/support/plugins/servers.py), the site migrated
    into it
    and Django set up on it, for as long as the block runs."""
    from tests.support.plugins import servers
    from tests.support.services import postgres

    servers.start_servers()
    if servers.STATE.postgres is None:
        raise SystemExit(f"{bench} needs PostgreSQL: " + "; ".join(servers.STATE.notes))
    try:
        import psycopg

        if servers.STATE.postgres.managed:
            with psycopg.connect(servers.STATE.postgres.dsn, autocommit=True) as db:
                db.execute(f"CREATE DATABASE {postgres.PG_DB_NAME}")
        _setup(os.environ["DATABASE_URL"])
        yield
    finally:
        servers.stop_servers()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--imports", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=40, help="requests per query")
    args = parser.parse_args()

    with throwaway_postgres("bench.data"):
        started = time.perf_counter()
        owners = seed(args.users, args.conversations, args.messages)
        seeded = time.perf_counter() - started
        print(
            f"Seeded {args.messages:,} messages in {args.conversations:,} "
            f"conversations of {args.users} users in {seeded:.0f} s "
            "(COPY, the indexes kept as it goes)."
        )
        rows: list[dict[str, Any]] = []
        for query, times in measure_search(owners, args.rounds).items():
            rows.append(_row(f"search “{query}”", times, SEARCH_BUDGET_MS))
        rows += measure_sidebar(owners, args.rounds)
        rows += measure_import(args.imports, args.rounds)
    print_table(rows)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "data.json").write_text(json.dumps(rows, indent=2))
    if not all(row["ok"] for row in rows):
        raise SystemExit(1)


SEARCH_BUDGET_MS = 200.0
SIDEBAR_BUDGET_MS = 50.0
IMPORT_BUDGET_MS = 60_000.0


def _cursors(owner_id: int, pages: int) -> list[str]:
    """The `after` cursors of the owner's first `pages` sidebar pages ("" for
    the first), walked with the sidebar's own paging."""
    from django.contrib.auth import get_user_model

    from chat.models.sidebar import sidebar_page

    owner = get_user_model().objects.get(pk=owner_id)
    cursors, after = [""], None
    for _ in range(pages - 1):
        after = sidebar_page(owner, after).next
        if after is None:
            break
        cursors.append(str(after))
    return cursors


def measure_sidebar(owners: list[int], rounds: int) -> list[dict[str, Any]]:
    from django.urls import reverse

    rng = random.Random(SEED + 2)
    url = reverse("sidebar_page")
    first, last = [], []
    for _ in range(rounds):
        owner = rng.choice(owners)
        cursors = _cursors(owner, 10)
        client = _client_for(owner)
        first.append(_get(client, url))
        last.append(_get(client, url, after=cursors[-1]))
    return [
        _row("sidebar: first page", _timed(first), SIDEBAR_BUDGET_MS),
        _row(
            "sidebar: last page (of ~200 conversations)",
            _timed(last),
            SIDEBAR_BUDGET_MS,
        ),
    ]


def measure_import(count: int, rounds: int) -> list[dict[str, Any]]:
    """Export a user's `count` conversations (10 messages each) as the ZIP the
    user page gives, import it into an empty account, then again."""
    import io

    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from chat.transfer.export import zip_stream
    from chat.transfer.imports import import_file

    users = get_user_model().objects
    exporter = users.create(username="exporter")
    add_conversations([exporter.pk], count, 10)
    started = time.perf_counter()
    archive = b"".join(zip_stream(exporter))
    exported = (time.perf_counter() - started) * 1000
    importer = users.create(username="importer")
    started = time.perf_counter()
    summary = import_file(importer, io.BytesIO(archive))
    imported = (time.perf_counter() - started) * 1000
    assert summary.conversations == count, summary
    started = time.perf_counter()
    again = import_file(importer, io.BytesIO(archive))
    repeated = (time.perf_counter() - started) * 1000
    assert again.conversations == 0, again
    print(
        f"Export ZIP of {count:,} conversations: {len(archive) / 1e6:.1f} MB; "
        f"imported {summary.conversations:,} conversations, "
        f"{summary.messages:,} messages"
    )
    # The importer's sidebar, far down: the page after its 4,000th conversation.
    cursors = _cursors(importer.pk, 81)
    client = _client_for(importer.pk)
    url = reverse("sidebar_page")
    deep = _timed([_get(client, url, after=cursors[-1]) for _ in range(rounds)])
    return [
        _row(
            f"sidebar: page {len(cursors)} of {count:,} conversations",
            deep,
            SIDEBAR_BUDGET_MS,
        ),
        _row(f"export ZIP, {count:,} conversations", [exported], None),
        _row(f"import, {count:,} conversations", [imported], IMPORT_BUDGET_MS),
        _row("the same file again (nothing new)", [repeated], IMPORT_BUDGET_MS),
    ]


if __name__ == "__main__":
    main()
