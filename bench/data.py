"""A team's data at scale: search, the sidebar and import on PostgreSQL.

1,000,000 messages over 20,000 conversations of 100 users (``--messages``,
``--conversations``, ``--users``) are written with COPY into a throwaway
PostgreSQL (tests/servers.py), half of the text English and half Chinese, each
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
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import ROOT, percentile

SEED = 15
ENGLISH = (
    "the model answer question token server context memory thinking stream "
    "python function error request latency queue batch cache vector index "
    "database query search result folder export import user team admin link "
    "share prompt history window length speed throughput kernel driver gpu "
    "cpu core thread process socket relay frame browser page sidebar button "
    "octopus fibonacci whale glacier volcano nebula quartz saffron tundra "
    "lantern harbor meadow compass orchard falcon canyon ember prism atlas"
).split()
CHINESE = (
    "模型 回答 问题 服务器 上下文 内存 思考 数据库 查询 搜索 结果 文件夹 导出 导入 "
    "用户 团队 管理员 链接 分享 历史 窗口 长度 速度 吞吐量 内核 驱动 显卡 处理器 "
    "线程 进程 浏览器 页面 按钮 章鱼 斐波那契 鲸鱼 冰川 火山 星云 石英 藏红花 灯笼 "
    "港口 草地 指南针 果园 猎鹰 峡谷 余烬 棱镜 地图集 量子 晶体 瀑布 沙漠 森林"
).split()
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


def _row_values(model: Any, given: dict[str, Any]) -> tuple[list[str], Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """Every concrete column of `model`, filled from a row's values, else the
    field's default (so a new non-null column does not break the seeding)."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key or f.name in given]
    columns = [f.column for f in fields]
    defaults = {f.attname: f.get_default() for f in fields}

    def values(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(f.attname, defaults[f.attname]) for f in fields)

    return columns, values


def seed(users: int, conversations: int, messages: int) -> list[int]:
    """The users' ids, their conversations and messages written with COPY."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from chat.models import Conversation, Message

    rng = random.Random(SEED)
    model = get_user_model()
    owners = model.objects.bulk_create(
        [model(username=f"reader{n}") for n in range(users)]
    )
    now = timezone.now()
    per = messages // conversations
    columns, values = _row_values(Conversation, {"id": 0})
    starts: dict[int, datetime] = {}

    def conversation_rows() -> Iterator[tuple[Any, ...]]:
        for pk in range(1, conversations + 1):
            start = now - timedelta(minutes=rng.randint(0, 2 * 365 * 24 * 60))
            starts[pk] = start
            yield values(
                {
                    "id": pk,
                    "owner_id": owners[pk % users].pk,
                    "title": " ".join(_words(rng, ENGLISH, 4)),
                    "created_at": start,
                    "updated_at": start + timedelta(minutes=per),
                }
            )

    _copy_rows(Conversation._meta.db_table, columns, conversation_rows())
    columns, values = _row_values(Message, {"id": 0})

    def message_rows() -> Iterator[tuple[Any, ...]]:
        pk = 0
        for conversation in range(1, conversations + 1):
            parent = None
            for n in range(per):
                pk += 1
                at = starts[conversation] + timedelta(minutes=n)
                yield values(
                    {
                        "id": pk,
                        "conversation_id": conversation,
                        "role": "user" if n % 2 == 0 else "assistant",
                        "content": _text(rng),
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
    return [owner.pk for owner in owners]


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
        response = client.get(url, params)
        assert response.status_code == 200, (url, params, response.status_code)
        return response

    return call


def measure_search(owners: list[int], rounds: int) -> dict[str, list[float]]:
    from django.urls import reverse

    rng = random.Random(SEED + 1)
    url = reverse("search")
    times: dict[str, list[float]] = {}
    for query in QUERIES:
        calls = [
            _get(_client_for(rng.choice(owners)), url, q=query) for _ in range(rounds)
        ]
        times[query] = _timed(calls)
    return times
