"""Search (chat.models.search) on the database the suite runs on: PostgreSQL,
and SQLite again with the smoke tests (make test)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from chat.models import Conversation, Message
from chat.models import search as finder

pytestmark = [pytest.mark.django_db, pytest.mark.smoke]


def _conversation(owner: Any, title: str, *texts: str) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    roles = [Message.Role.USER, Message.Role.ASSISTANT]
    Message.objects.append_branch(
        [
            Message(conversation=conversation, role=roles[n % 2], content=text)
            for n, text in enumerate(texts)
        ]
    )
    return conversation


def _answer(conversation: Conversation, content: str, **fields: Any) -> None:
    Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role=Message.Role.ASSISTANT,
                content=content,
                **fields,
            )
        ]
    )


def _found(owner: Any, text: str, **options: Any) -> list[tuple[str, str]]:
    hits = finder.search(owner, finder.parse(text, **options))
    return [(hit.title, hit.text) for hit in hits]


@pytest.fixture
def library(alice: Any, bob: Any) -> dict[str, Conversation]:
    return {
        "sea": _conversation(
            alice,
            "Sea life",
            "Tell me about cephalopods",
            "Octopuses have three hearts and blue blood.",
        ),
        "maths": _conversation(
            alice,
            "Numbers",
            "Write the Fibonacci function in Python",
            "def fibonacci(n): return n if n < 2 else fibonacci(n-1) + fibonacci(n-2)",
        ),
        "chinese": _conversation(
            alice,
            "海洋",
            "鲸鱼是哺乳动物吗？",
            "是的，鲸鱼是哺乳动物，用肺呼吸。",
        ),
        "mixed": _conversation(
            alice,
            "GPU",
            "怎么用GPU加速推理？",
            "把模型放进显存，然后用CUDA内核运行。",
        ),
        "bob": _conversation(bob, "Bob's whales", "whales", "Whales are mammals. 鲸鱼"),
    }


def test_a_word_in_an_answer_finds_it(alice: Any, library: Any) -> None:
    assert _found(alice, "octopuses") == [
        ("Sea life", "Octopuses have three hearts and blue blood.")
    ]


def test_the_start_of_a_word_is_enough_and_case_does_not_matter(
    alice: Any, library: Any
) -> None:
    titles = [title for title, _ in _found(alice, "FIBONAC")]
    assert titles == ["Numbers", "Numbers"]  # the question and the answer


def test_every_term_must_match(alice: Any, library: Any) -> None:
    assert [t for t, _ in _found(alice, "three hearts")] == ["Sea life"]
    assert _found(alice, "three fibonacci") == []


def test_a_two_character_chinese_word(alice: Any, library: Any) -> None:
    found = _found(alice, "鲸鱼")
    assert {title for title, _ in found} == {"海洋"}
    assert len(found) == 2


def test_a_longer_chinese_phrase(alice: Any, library: Any) -> None:
    assert [t for t, _ in _found(alice, "用肺呼吸")] == ["海洋"]
    assert _found(alice, "用鳃呼吸") == []
    # Punctuation splits a phrase into terms, each to be found.
    assert _found(alice, "哺乳动物，用肺") == [
        ("海洋", "是的，鲸鱼是哺乳动物，用肺呼吸。")
    ]


def test_mixed_english_and_chinese(alice: Any, library: Any) -> None:
    # "GPU" sits inside Chinese text with no space around it.
    assert _found(alice, "GPU 加速") == [("GPU", "怎么用GPU加速推理？")]
    assert _found(alice, "cuda 显存") == [
        ("GPU", "把模型放进显存，然后用CUDA内核运行。")
    ]


def test_titles_match_first(alice: Any, library: Any) -> None:
    hits = finder.search(alice, finder.parse("sea"))
    assert (hits[0].message_id, hits[0].title) == (None, "Sea life")


def test_another_users_conversations_are_never_found(alice: Any, library: Any) -> None:
    assert _found(alice, "whales") == []
    assert all(title != "Bob's whales" for title, _ in _found(alice, "鲸鱼"))


def test_thinking_is_searched_only_when_asked(alice: Any) -> None:
    conversation = _conversation(alice, "Plans", "plan a trip")
    _answer(conversation, "Go to Lisbon.", thinking="They might like trams and 蛋挞")
    assert _found(alice, "trams") == []
    assert _found(alice, "蛋挞") == []
    assert _found(alice, "trams", thinking=True) == [
        ("Plans", "They might like trams and 蛋挞")
    ]
    assert _found(alice, "蛋挞", thinking=True) == [
        ("Plans", "They might like trams and 蛋挞")
    ]


def test_archived_conversations_are_found_and_say_so(alice: Any, library: Any) -> None:
    Conversation.objects.filter(pk=library["sea"].pk).update(
        archived_at=library["sea"].created_at
    )
    [hit] = finder.search(alice, finder.parse("octopuses"))
    assert hit.archived


def test_answers_asked_over_the_api_only_are_not_found(alice: Any) -> None:
    hidden = _conversation(alice, "", "api question zebra", "api answer zebra")
    Conversation.objects.filter(pk=hidden.pk).update(listed=False)
    assert _found(alice, "zebra") == []


def test_replaced_versions_are_not_found(alice: Any) -> None:
    conversation = _conversation(alice, "Edits", "first draft walrus", "old answer")
    conversation.messages.update(replaced=True)
    assert _found(alice, "walrus") == []


def test_a_message_edited_after_is_found_by_its_new_text(
    alice: Any, library: Any
) -> None:
    for name, text in (("sea", "Squids have beaks."), ("chinese", "不是，鲨鱼是鱼。")):
        answer = library[name].messages.get(role=Message.Role.ASSISTANT)
        answer.content = text
        answer.save()
    assert _found(alice, "octopuses") == []
    assert [t for t, _ in _found(alice, "squids")] == ["Sea life"]
    assert _found(alice, "哺乳") == [("海洋", "鲸鱼是哺乳动物吗？")]
    assert _found(alice, "鲨鱼") == [("海洋", "不是，鲨鱼是鱼。")]


def test_a_deleted_conversation_leaves_nothing_behind(alice: Any, library: Any) -> None:
    library["sea"].delete()
    assert _found(alice, "octopuses") == []


@pytest.mark.parametrize(
    "text",
    [
        'octopuses "',
        '"octopuses',
        "octopuses*",
        "-octopuses",
        "blood:octopuses",
        "octopuses^",
        "(octopuses, blood)",
        "(octopuses",
        "octopuses)",
        "{octopuses}",
        "'octopuses'",
        "octopuses\x00",
        "octopuses\ud800",
    ],
)
def test_operators_and_syntax_are_only_text(
    alice: Any, library: Any, text: str
) -> None:
    assert [t for t, _ in _found(alice, text)] == ["Sea life"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "!!! ... ???",
        '"""',
        "*",
        "'; DROP TABLE chat_message; --",
        "'; DELETE FROM chat_message; --",
        "%",
        "_",
        "\\",
    ],
)
def test_nothing_to_search_or_sql_finds_nothing_and_breaks_nothing(
    alice: Any, library: Any, text: str
) -> None:
    before = Message.objects.count()
    assert _found(alice, text) == []
    assert Message.objects.count() == before  # every row is still there


def test_operator_words_are_words(alice: Any, library: Any) -> None:
    assert [t for t, _ in _found(alice, "octopuses AND blood")] == ["Sea life"]
    assert _found(alice, "octopuses OR squids") == []  # not an OR
    assert [t for t, _ in _found(alice, "octopuses -blood")] == ["Sea life"]  # nor NOT


def test_sql_like_text_is_searched_as_words(alice: Any) -> None:
    _conversation(alice, "SQL", "why DROP TABLE is dangerous", "It deletes a table.")
    assert [t for t, _ in _found(alice, "'; DROP TABLE chat_message; --")] == []
    assert [t for t, _ in _found(alice, "'; DROP TABLE --")] == ["SQL"]


def test_a_query_too_long_is_refused_with_the_numbers() -> None:
    with pytest.raises(finder.QueryTooLong, match="at most 200 characters"):
        finder.parse("a" * 201)
    assert finder.parse("a" * 200).terms


def test_snippets_are_escaped_and_marked(alice: Any) -> None:
    _conversation(alice, "HTML", "<script>alert(1)</script> octopus & co", "ok")
    hits = finder.search(alice, finder.parse("octopus"))
    snippet = hits[0].snippet(finder.parse("octopus"))
    assert "<script>" not in snippet
    assert "&lt;script&gt;" in snippet
    assert "<mark>octopus</mark> &amp; co" in snippet


def test_a_snippet_is_a_window_around_the_match(alice: Any) -> None:
    long = "word " * 200 + "needle " + "word " * 200
    _conversation(alice, "Long", long, "ok")
    [hit] = finder.search(alice, finder.parse("needle"))
    snippet = hit.snippet(finder.parse("needle"))
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "<mark>needle</mark>" in snippet
    assert len(snippet) < finder.SNIPPET_CHARS + 40


def test_the_best_match_comes_first_among_many(alice: Any) -> None:
    for n in range(30):
        _conversation(
            alice, f"c{n}", f"question {n}", "a long answer " * 20 + "with kelp once"
        )
    _conversation(alice, "target", "kelp kelp kelp forest", "ok")
    hits = finder.search(alice, finder.parse("kelp"))
    assert hits[0].text == "kelp kelp kelp forest"


def test_the_index_is_kept_by_the_database(alice: Any) -> None:
    """The index is the database's own (a generated column, or triggers), so
    rows written in bulk are found too."""
    conversation = Conversation.objects.create(owner=alice, title="Bulk")
    Message.objects.bulk_create(
        [Message(conversation=conversation, role="user", content="narwhal tusk")]
    )
    assert [t for t, _ in _found(alice, "narwhal")] == ["Bulk"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'chat_message'"
            )
            names = {row[0] for row in cursor.fetchall()}
        assert {"chat_message_search", "chat_message_trigram"} <= names
    else:  # a migration that makes chat_message anew drops them (0021 has to)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name = 'chat_message'"
            )
            names = {row[0] for row in cursor.fetchall()}
        assert {
            f"chat_message_search_{on}" for on in ("insert", "update", "delete")
        } <= names


# Short CJK terms (one or two characters, below a trigram): on PostgreSQL the
# index of CJK grams finds the candidates (chat/migrations/0022_short_cjk_search.py).

RUN = "是的，鲸鱼是哺乳动物，用肺呼吸。"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("鲸", True),  # a run's first character
        ("吸", True),  # the text's last
        ("乳", True),  # inside a run
        ("鲸鱼", True),  # a pair from a run's start
        ("哺乳", True),
        ("乳动", True),  # a pair at an odd place in the run, across two words
        ("鱼是", True),
        ("呼吸", True),  # the text's last two
        ("动肺", False),  # both there, not side by side
        ("物用", False),  # on each side of a comma
        ("鲲", False),
        ("鲲鹏", False),
    ],
)
def test_one_or_two_chinese_characters_inside_longer_runs(
    alice: Any, bob: Any, text: str, found: bool
) -> None:
    _conversation(alice, "Run", RUN)
    _conversation(alice, "Other", "鲨鱼呢？", "鲨鱼是鱼。")
    _conversation(bob, "Bob's", RUN)
    hits = _found(alice, text)
    assert (("Run", RUN) in hits) == found
    assert ("Bob's", RUN) not in hits


def test_short_terms_at_a_boundary_with_latin_letters(alice: Any, library: Any) -> None:
    question = ("GPU", "怎么用GPU加速推理？")
    assert _found(alice, "用加") == []  # "GPU" between them: not side by side
    assert _found(alice, "u加") == [question]  # a letter and a character
    assert _found(alice, "用g") == [question]
    assert _found(alice, "用x") == []
    assert _found(alice, "加速") == [question]


def test_short_chinese_terms_with_english_words(alice: Any, library: Any) -> None:
    assert _found(alice, "gpu 加") == [("GPU", "怎么用GPU加速推理？")]
    assert _found(alice, "cuda 显") == [("GPU", "把模型放进显存，然后用CUDA内核运行。")]
    assert _found(alice, "cuda 加") == []  # each in another message
    assert _found(alice, "鲸 哺乳 肺") == [("海洋", "是的，鲸鱼是哺乳动物，用肺呼吸。")]
    assert _found(alice, "鲸 显存") == []


def test_short_japanese_and_korean_terms(alice: Any) -> None:
    _conversation(alice, "Kana", "クジラは哺乳類です", "고래는 포유류입니다")
    assert [t for t, _ in _found(alice, "ジラ")] == ["Kana"]
    assert [t for t, _ in _found(alice, "は")] == ["Kana"]
    assert [t for t, _ in _found(alice, "고래")] == ["Kana"]
    assert _found(alice, "래고") == []


def test_a_streaming_answer_is_found_by_a_short_term(alice: Any) -> None:
    conversation = _conversation(alice, "Live", "讲讲章鱼")
    _answer(conversation, "章鱼有三颗心脏", status=Message.Status.STREAMING)
    assert {text for _, text in _found(alice, "心脏")} == {"章鱼有三颗心脏"}
    assert len(_found(alice, "章鱼")) == 2
    # Once it ends, it is found the same.
    Message.objects.filter(status=Message.Status.STREAMING).update(
        status=Message.Status.DONE, content="章鱼有三颗心脏和蓝色的血"
    )
    assert {text for _, text in _found(alice, "蓝色")} == {"章鱼有三颗心脏和蓝色的血"}
    assert _found(alice, "心脏")[0][1] == "章鱼有三颗心脏和蓝色的血"


@pytest.mark.postgres
def test_every_short_term_of_a_text_has_its_grams_in_the_index(alice: Any) -> None:
    """The index's function and the query's grams agree: for every one or two
    characters of a text, the text's grams hold the query's, so the index
    never hides a message that has the term."""
    text = "用GPU加速,鲸鱼是哺乳动物 クジラ 고래는。ａ中ｂ人々x"
    terms = {text[i : i + n].lower() for n in (1, 2) for i in range(len(text))}
    queries = [finder.parse(term) for term in sorted(terms)]
    wanted = [finder.short_grams(q) for q in queries if finder.short_grams(q)]
    assert ["鲸鱼"] in wanted and ["用"] in wanted
    with connection.cursor() as cursor:
        for grams in wanted:
            cursor.execute("SELECT chat_cjk_grams(%s) @> %s::text[]", [text, grams])
            assert cursor.fetchone() == (True,), grams
        cursor.execute("SELECT chat_cjk_grams(%s) @> %s::text[]", [text, ["用加"]])
        assert cursor.fetchone() == (False,)


@pytest.mark.parametrize("text", ["鲸", "鲸鱼", "鲸鱼 模型"])
@pytest.mark.postgres
def test_a_short_chinese_term_is_read_from_the_grams_index(
    alice: Any, library: Any, text: str
) -> None:
    # Enough of the owner's messages without the term for the statistics to
    # tell that it is rare, and an English word in all of them (so "gpu" is
    # no help); bench/short_cjk.py has the real sizes.
    conversations = Conversation.objects.bulk_create(
        [Conversation(owner=alice, title=f"c{n}") for n in range(100)]
    )
    Message.objects.bulk_create(
        [
            Message(conversation=c, role="user", content=f"GPU 模型的回答 {n}")
            for c in conversations
            for n in range(20)
        ]
    )
    sql, params = finder._postgres_sql(alice.pk, finder.parse(text), 20)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chat_message")
        cursor.execute("ANALYZE chat_conversation")
        # Still a small table: a sequential scan would win.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "chat_message_cjk_grams" in plan, plan
