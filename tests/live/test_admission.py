"""Admission control: per-user and per-model limits, the fair queue and its
`queued` frames, on real PostgreSQL and Redis, in one process and across two
real Daphne processes."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from playwright.sync_api import expect

from chat.api import answers
from chat.api.requests import ChatRequest
from chat.live import admission
from chat.live.admission import Entry, plan
from chat.live.runner import runner
from chat.models import ApiKey, Conversation, Message, SiteDefaults, Ticket
from chat.sockets import turns
from tests.api.conftest import team_of
from tests.support.communicators import connect, frames_until, send
from tests.support.daphnes import frames_until as socket_frames_until
from tests.support.daphnes import open_socket
from tests.support.daphnes import send as socket_send
from tests.support.waiting import settled, ticket_released

# The decision itself (no database).


def entry(
    message_id: int,
    user: int,
    profile: int = 1,
    served: int | None = None,
    live: bool = True,
) -> Entry:
    return Entry(message_id, user, profile, served, live)


def test_plan_admits_up_to_the_model_slots_and_numbers_the_rest():
    decided = plan([entry(1, 10), entry(2, 11), entry(3, 12)], 0, {1: 1})
    assert decided.admit == [1]
    assert decided.positions == {2: 1, 3: 2}


def test_plan_round_robins_across_users_and_keeps_each_users_order():
    # Alice runs one and queued three; Bob then Carol asked once each.
    entries = [entry(1, 10, served=1), entry(2, 10), entry(3, 10)]
    entries += [entry(4, 11), entry(5, 10), entry(6, 12)]
    decided = plan(entries, 0, {1: 1})
    assert decided.admit == []
    assert decided.positions == {4: 1, 6: 2, 2: 3, 3: 4, 5: 5}


def test_plan_serves_the_user_served_longest_ago_first():
    # Alice's first answer just finished; her second asked before Bob's first.
    entries = [entry(1, 10, served=1, live=False), entry(2, 10), entry(3, 11)]
    entries += [entry(4, 12, served=2, live=False), entry(5, 12)]
    decided = plan(entries, 0, {1: 1})
    assert decided.admit == [3]
    assert decided.positions == {2: 1, 5: 2}


def test_plan_finished_answers_hold_no_slot():
    entries = [entry(1, 10, served=1, live=False), entry(2, 11, served=2, live=False)]
    decided = plan([*entries, entry(3, 10)], 1, {1: 1})
    assert decided.admit == [3] and decided.positions == {}


def test_plan_per_user_limit_counts_every_model_and_skips_to_the_next_user():
    entries = [entry(1, 10, profile=2, served=1), entry(2, 10), entry(3, 11)]
    decided = plan(entries, 1, {1: 0, 2: 0})
    assert decided.admit == [3]
    assert decided.positions == {2: 1}


def test_plan_without_limits_admits_everyone():
    decided = plan([entry(i, 10) for i in range(5)], 0, {1: 0})
    assert decided.admit == list(range(5)) and decided.positions == {}


def test_plan_queues_per_model():
    entries = [entry(1, 10, profile=1), entry(2, 11, profile=1)]
    entries += [entry(3, 12, profile=2), entry(4, 13, profile=2)]
    decided = plan(entries, 0, {1: 1, 2: 1})
    assert decided.admit == [1, 3]
    assert decided.positions == {2: 1, 4: 1}


# Through the socket, on the real database and channel layer.

on_database = pytest.mark.django_db(transaction=True)


@pytest.fixture
def limits(demo_profile):
    """Set the per-user limit and the model's slots (0: no limit)."""

    def set_limits(per_user: int, slots: int) -> None:
        SiteDefaults(generations_per_user=per_user).save()
        demo_profile.parallel_slots = slots
        demo_profile.save()

    return set_limits


@pytest.fixture
def conversations(demo_profile):
    def make(user, count: int = 1) -> list[Conversation]:
        return [
            Conversation.objects.create(owner=user, model_profile=demo_profile)
            for _ in range(count)
        ]

    return make


@pytest.fixture
def one_slot(alice, limits, conversations, simulator):
    """One model slot, no per-user limit, slow answers: Alice's conversations."""

    async def setup(count: int, **answers: float) -> list[Conversation]:
        await sync_to_async(limits)(0, 1)
        slow_answers(simulator, **answers)
        return await sync_to_async(conversations)(alice, count)

    return setup


def slow_answers(simulator, tps: float = 40, tokens: int = 30) -> None:
    simulator.config.tps = tps
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = tokens


async def running(user, conversation, content: str = "Hello there"):
    """A socket whose answer has started streaming: (socket, frames so far)."""
    communicator = await connect(user, conversation)
    await send(communicator, content)
    return communicator, await frames_until(communicator, "content")


async def queued(user, conversation, content: str = "Hello there"):
    """A socket whose answer waits in line: (socket, frames up to `queued`)."""
    communicator = await connect(user, conversation)
    await send(communicator, content)
    return communicator, await frames_until(communicator, "queued")


# An answer that outlasts any setup, however slow the machine: a test that
# needs the queue to stay as it set it up ends it itself (`end_running`).
HELD_TOKENS = 100_000


async def end_running(communicator, simulator, tokens: int = 30) -> None:
    """Stop the socket's running answer; the answers after it are short."""
    simulator.config.answer_tokens = tokens
    await communicator.send_json_to({"type": "stop"})


def request_of(simulator, content: str):
    return next(
        e for e in simulator.log if e.body["messages"][-1]["content"] == content
    )


@on_database
async def test_model_slots_queue_the_next_answer_until_one_frees(
    alice, bob, limits, conversations, simulator
):
    await sync_to_async(limits)(0, 1)
    [mine] = await sync_to_async(conversations)(alice)
    [theirs] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tokens=HELD_TOKENS)
    first, _ = await running(alice, mine, "first")
    second, waited = await queued(bob, theirs, "second")

    kinds = [f["type"] for f in waited]
    assert kinds.index("start") < kinds.index("queued")
    assert waited[-1]["position"] == 1
    assert waited[-1]["message_id"] == waited[kinds.index("start")]["message_id"]
    await end_running(first, simulator)
    rest = await frames_until(second, "done")
    await frames_until(first, "done")
    await first.disconnect()
    await second.disconnect()

    assert rest[-1]["status"] == "done"
    assert (
        request_of(simulator, "second").started >= request_of(simulator, "first").ended
    )
    answer = await Message.objects.aget(pk=waited[-1]["message_id"])
    assert answer.queue_wait_ms > 0
    assert not await Ticket.objects.filter(served=None).aexists()


@on_database
async def test_per_user_limit_queues_that_user_only(
    alice, bob, limits, conversations, simulator
):
    await sync_to_async(limits)(1, 0)
    first_conv, second_conv = await sync_to_async(conversations)(alice, 2)
    [bobs] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tokens=HELD_TOKENS)
    first, _ = await running(alice, first_conv, "alice 1")
    second, waited = await queued(alice, second_conv, "alice 2")
    other, started = await running(bob, bobs, "bob 1")  # not held up by Alice

    assert waited[-1]["position"] == 1
    assert "queued" not in [f["type"] for f in started]
    await end_running(first, simulator)
    await other.send_json_to({"type": "stop"})
    ends = ((first, "stopped"), (second, "done"), (other, "stopped"))
    for communicator, status in ends:
        assert (await frames_until(communicator, "done"))[-1]["status"] == status
        await communicator.disconnect()
    assert (
        request_of(simulator, "alice 2").started
        >= request_of(simulator, "alice 1").ended
    )


@on_database
async def test_queue_is_fair_across_users(alice, bob, limits, conversations, simulator):
    await sync_to_async(limits)(0, 1)
    a1, a2, a3 = await sync_to_async(conversations)(alice, 3)
    [b1] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tps=30, tokens=HELD_TOKENS)
    sockets = [(await running(alice, a1, "a1"))[0]]
    for conversation, content, position in ((a2, "a2", 1), (a3, "a3", 2)):
        communicator, waited = await queued(alice, conversation, content)
        assert waited[-1]["position"] == position
        sockets.append(communicator)
    # Bob's one question goes before Alice's second and third.
    bobs, waited = await queued(bob, b1, "b1")
    assert waited[-1]["position"] == 1
    moved = await frames_until(sockets[1], "queued")
    assert moved[-1]["position"] == 2
    sockets.append(bobs)
    await end_running(sockets[0], simulator, tokens=45)
    for communicator in sockets:
        await frames_until(communicator, "done", timeout=30)
        await communicator.disconnect()

    order = [e.body["messages"][-1]["content"] for e in simulator.log]
    assert order == ["a1", "b1", "a2", "a3"]


@on_database
async def test_positions_move_up_as_answers_finish(alice, one_slot, simulator):
    c1, c2, c3 = await one_slot(3, tokens=HELD_TOKENS)
    first, _ = await running(alice, c1)
    second, _ = await queued(alice, c2)
    third, waited = await queued(alice, c3)
    assert waited[-1]["position"] == 2

    await end_running(first, simulator)
    await frames_until(first, "done")
    moved = await frames_until(third, "queued")
    assert moved[-1]["position"] == 1
    assert "content" in [f["type"] for f in await frames_until(second, "done")]
    assert "content" in [f["type"] for f in await frames_until(third, "done")]
    for communicator in (first, second, third):
        await communicator.disconnect()


@on_database
async def test_stop_while_queued_cancels_the_wait_and_frees_the_place(
    alice, one_slot, simulator
):
    c1, c2, c3 = await one_slot(3)
    first, _ = await running(alice, c1, "runs")
    second, waited = await queued(alice, c2, "stopped in line")
    message_id = waited[-1]["message_id"]

    await second.send_json_to({"type": "stop"})
    closing = await frames_until(second, "message")
    assert closing[-2]["type"] == "done" and closing[-2]["status"] == "stopped"
    answer = await settled(message_id)
    assert answer.status == Message.Status.STOPPED and answer.content == ""
    # Its ticket goes right after the final save (and its frames).
    await ticket_released(message_id)

    await frames_until(first, "done")
    # The slot went back: the next answer starts without waiting.
    third, started = await running(alice, c3, "next")
    assert "queued" not in [f["type"] for f in started]
    await frames_until(third, "done")
    for communicator in (first, second, third):
        await communicator.disconnect()
    asked = [e.body["messages"][-1]["content"] for e in simulator.log]
    assert asked == ["runs", "next"]  # the stopped one never reached the model
    assert not await Ticket.objects.filter(served=None).aexists()


@on_database
async def test_a_reloaded_tab_sees_its_place_in_line(alice, one_slot, simulator):
    c1, c2 = await one_slot(2)
    first, _ = await running(alice, c1)
    second, waited = await queued(alice, c2)
    message_id = waited[-1]["message_id"]
    await second.disconnect()

    reloaded = await connect(alice, c2)
    await reloaded.send_json_to(
        {"type": "resume", "message_id": message_id, "offset": 0}
    )
    resumed = await frames_until(reloaded, "queued")
    assert [f["type"] for f in resumed] == ["start", "queued"]
    assert resumed[-1] == {"type": "queued", "message_id": message_id, "position": 1}
    rest = await frames_until(reloaded, "done")
    await frames_until(first, "done")
    await first.disconnect()
    await reloaded.disconnect()
    answer = await Message.objects.aget(pk=message_id)
    assert answer.status == Message.Status.DONE
    assert "".join(f["delta"] for f in rest if f["type"] == "content") == answer.content


@on_database
async def test_an_answer_started_without_a_ticket_takes_one_and_waits(
    alice, one_slot, simulator
):
    c1, c2 = await one_slot(2)
    first, _ = await running(alice, c1, "first")
    # Started by other means than a question on the socket: no ticket yet.
    turn = await sync_to_async(c2.begin_turn)("second")
    watcher = await connect(alice, c2)
    assert runner.claim(c2.pk)
    await runner.start(turn.profile, turn.answer, turn.history)

    waited = await frames_until(watcher, "queued")
    assert waited[-1] == {"type": "queued", "message_id": turn.answer.pk, "position": 1}
    assert (await frames_until(watcher, "done"))[-1]["status"] == "done"
    await frames_until(first, "done")
    await first.disconnect()
    await watcher.disconnect()
    assert (
        request_of(simulator, "second").started >= request_of(simulator, "first").ended
    )


@on_database
async def test_a_question_hands_its_first_decision_to_the_answer(
    alice, conversation, simulator, monkeypatch
):
    """The decision taken with the ticket, in the turn's own transaction, is
    handed to the answer's wait (`Runner.start(plan=...)`): it does not decide again."""

    async def decided_again(*args: object) -> None:
        raise AssertionError("the answer's wait decided again")

    monkeypatch.setattr(admission, "enqueue", decided_again)
    communicator, _ = await running(alice, conversation)
    assert (await frames_until(communicator, "done"))[-1]["status"] == "done"
    await communicator.disconnect()


@pytest.mark.django_db
def test_an_answer_is_admitted_before_its_rows_are_written(
    alice, bob, limits, conversations
):
    """The decision comes before the turn's rows (docs/latency.md, rule 8): the
    admitted answer is handed on with no id yet, then stored with its ticket,
    and the plan given back names it by its id. One slot: Bob's answer, asked
    while Alice's holds it, waits, placed under its own id."""
    limits(0, 1)
    (first,) = conversations(alice)
    (second,) = conversations(bob)
    heard: list[tuple[object, object, list[int]]] = []

    def admitted(early: turns.Admitted) -> None:
        turn = early.turn
        heard.append((turn.question.pk, turn.answer.pk, early.plan.admit))

    turn, decided = turns.begin(first.pk, "first", "", admitted=admitted)
    assert heard == [(None, None, [admission.UNSTORED])]
    assert decided.admit == [turn.answer.pk] and decided.numbers == {turn.answer.pk: 1}
    assert Ticket.objects.get(message=turn.answer).served == 1
    assert turn.answer.parent_id == turn.question.pk
    waiting, placed = turns.begin(second.pk, "second", "", admitted=admitted)
    assert len(heard) == 1  # not admitted: told nobody early
    assert placed.admit == [] and placed.positions == {waiting.answer.pk: 1}
    assert Ticket.objects.get(message=waiting.answer).served is None


@pytest.mark.django_db
def test_a_question_is_admitted_after_one_trip_that_locks_the_sites_row_first(
    alice, limits, conversations
):
    """Before the model server is asked, a sent question reads four things (one
    trip on PostgreSQL, `compiled_queries.together`; Django's query log, on here, has
    them one by one): the site's row locked, first (the lock order of
    `chat.models.admission`), the tickets, the conversation locked with its
    owner, and the messages it follows. The decision reads nothing more."""
    limits(2, 1)
    (conversation,) = conversations(alice)
    asked_after: list[list[str]] = []

    with CaptureQueriesContext(connection) as queries:

        def admitted(early: turns.Admitted) -> None:
            asked_after.append([q["sql"] for q in queries.captured_queries])

        turns.begin(conversation.pk, "Hello", "", admitted=admitted)
    (before,) = asked_after
    # (This test's transaction makes the turn's a savepoint.)
    site, tickets, turn, earlier = [q for q in before if "SAVEPOINT" not in q]
    assert '"chat_sitedefaults"' in site
    assert '"chat_ticket"' in tickets
    assert '"chat_conversation"' in turn
    assert '"chat_message"' in earlier
    if connection.features.has_select_for_update:  # PostgreSQL (not SQLite)
        assert "FOR UPDATE" in site and "FOR UPDATE" in turn


@pytest.mark.smoke
@pytest.mark.django_db
def test_the_first_question_on_a_database_without_the_sites_row_makes_it(
    alice, conversations
):
    """A fresh database has no site's row to lock (`Line.read`): the first
    question makes it with the defaults, locks it and reads the line again,
    and is admitted on it, stored with its ticket."""
    (conversation,) = conversations(alice)
    SiteDefaults.objects.all().delete()
    heard: list[list[int]] = []

    turn, decided = turns.begin(
        conversation.pk, "first", "", admitted=lambda e: heard.append(e.plan.admit)
    )
    assert heard == [[admission.UNSTORED]]
    assert decided.admit == [turn.answer.pk]
    assert SiteDefaults.objects.get().pk == 1
    assert Ticket.objects.get(message=turn.answer).served == 1


@pytest.mark.django_db
def test_a_regenerate_locks_the_sites_row_first_and_reads_the_line_once(
    alice, limits, conversations
):
    """A retry's transaction locks the site's row before any other (the lock
    order), and its answer is placed on what that first read found: the
    tickets are read once before the model server is asked."""
    limits(2, 1)
    (conversation,) = conversations(alice)
    first, _ = turns.begin(conversation.pk, "Hello", "")
    Message.objects.filter(pk=first.answer.pk).update(status="done")
    asked_after: list[list[str]] = []

    with CaptureQueriesContext(connection) as queries:

        def admitted(early: turns.Admitted) -> None:
            asked_after.append([q["sql"] for q in queries.captured_queries])

        turns.begin_retry(
            conversation.pk,
            lambda c, placed: c.begin_regenerate(None, placed),
            admitted,
        )
    (before,) = asked_after
    sites = [i for i, q in enumerate(before) if 'FROM "chat_sitedefaults"' in q]
    locks = [i for i, q in enumerate(before) if "FOR UPDATE" in q]
    assert len([q for q in before if 'FROM "chat_ticket"' in q]) == 1
    if connection.features.has_select_for_update:  # PostgreSQL (not SQLite)
        assert min(locks) == sites[0]


@pytest.mark.django_db(transaction=True)
def test_answers_asked_at_once_by_every_path_never_wait_in_a_cycle(
    alice, bob, limits, conversations
):
    """Every transaction that admits an answer locks the site's row first
    (`chat.models.admission`, the lock order): a sent question's first trip
    does, before the conversation's, the owner's and the team's rows. Two
    members of one team (their team's row is locked for its quotas) ask at once
    through the socket, a regenerate and the API, round after round: on
    PostgreSQL a path taking the site's row after the others would sooner or
    later hold a row another waits for while waiting for one it holds, and one
    of them would end in a deadlock error."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL's (SQLite has one writer at a time)")
    limits(0, 0)
    team_of("GPU", alice, bob)
    asking, regenerating = conversations(alice)[0], conversations(bob)[0]
    first, _ = turns.begin(regenerating.pk, "to be asked again", "")
    Message.objects.filter(pk=first.answer.pk).update(status="done")
    key, _ = ApiKey.issue(bob, "script")
    model = asking.model_profile.tag
    request = ChatRequest(model, [{"role": "user", "content": "Hi"}], stream=True)
    rounds = 12

    def send() -> int:
        return turns.begin(asking.pk, "Hello", "")[0].answer.pk

    def regenerate() -> int:
        retry, _ = turns.begin_retry(
            regenerating.pk, lambda c, placed: c.begin_regenerate(None, placed)
        )
        return retry.turn.answer.pk

    def api() -> int:
        turn, _ = answers._begin(key, request, False, lambda admitted: None)
        return turn.answer.pk

    start = threading.Barrier(3)
    errors: list[str] = []

    def ask(path: Callable[[], int]) -> None:
        try:
            for _ in range(rounds):
                start.wait(timeout=30)
                answer = path()
                # Over before the next round, as the runner would end it.
                Message.objects.filter(pk=answer).update(status="done")
        except Exception as exc:  # reported below
            errors.append(f"{path.__name__}: {type(exc).__name__}: {exc}")
            start.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(p,)) for p in (send, regenerate, api)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Ticket.objects.filter(served__isnull=False).count() == 1 + 3 * rounds


@on_database
async def test_a_shutdown_while_queued_keeps_the_answer_as_interrupted(
    alice, one_slot, simulator
):
    c1, c2 = await one_slot(2, tokens=400)
    first, _ = await running(alice, c1)
    second, waited = await queued(alice, c2)
    message_id = waited[-1]["message_id"]

    await runner.shutdown()
    answer = await settled(message_id)
    assert answer.status == Message.Status.INTERRUPTED
    assert answer.error_detail  # the reader is told why
    await ticket_released(message_id)
    assert [e.body["messages"][-1]["content"] for e in simulator.log] == ["Hello there"]
    await first.disconnect()
    await second.disconnect()


# Two real Daphne processes sharing the database and Redis.


@pytest.fixture
def one_slot_two_processes(daphnes, alice, bob, limits, conversations, session_cookie):
    """One model slot; Alice's socket on process 0, Bob's on process 1."""

    async def open_both():
        await sync_to_async(limits)(0, 1)
        sockets = []
        for daphne, user in ((daphnes[0], alice), (daphnes[1], bob)):
            [conversation] = await sync_to_async(conversations)(user)
            cookie = await sync_to_async(session_cookie)(user)
            sockets.append(await open_socket(daphne, conversation, cookie))
        return sockets

    return open_both


async def first_runs_second_waits(alices, bobs, first: str, second: str):
    """Alice's answer runs; Bob's waits in line: (Alice's, Bob's frames)."""
    await socket_send(alices, first)
    started = await socket_frames_until(alices, "content")
    await socket_send(bobs, second)
    waited = await socket_frames_until(bobs, "queued")
    assert waited[-1]["position"] == 1
    return started, waited


@on_database
async def test_two_processes_share_the_model_slots(one_slot_two_processes, simulator):
    alices, bobs = await one_slot_two_processes()
    slow_answers(simulator)
    await first_runs_second_waits(alices, bobs, "on process 0", "on process 1")

    assert (await socket_frames_until(alices, "done"))[-1]["status"] == "done"
    rest = await socket_frames_until(bobs, "done")
    await alices.close()
    await bobs.close()
    assert "content" in [f["type"] for f in rest] and rest[-1]["status"] == "done"
    assert (
        request_of(simulator, "on process 1").started
        >= request_of(simulator, "on process 0").ended
    )


@on_database
async def test_a_killed_process_gives_its_slot_back(
    daphnes,
    one_slot_two_processes,
    simulator,
):
    alices, bobs = await one_slot_two_processes()
    slow_answers(simulator, tps=20, tokens=2000)
    started, waited = await first_runs_second_waits(alices, bobs, "dies", "waits")

    daphnes[0].stop(signal.SIGKILL)
    # The survivor's sweep marks the silent answer interrupted; that frees the slot.
    simulator.config.answer_tokens = 20
    rest = await socket_frames_until(bobs, "done", timeout=40)
    await bobs.close()
    assert "content" in [f["type"] for f in rest] and rest[-1]["status"] == "done"
    dead = await Message.objects.aget(pk=started[-1]["message_id"])
    assert dead.status == Message.Status.INTERRUPTED
    assert rest[-1]["message_id"] == waited[-1]["message_id"]


# In the browser.


@on_database
def test_the_page_shows_the_place_in_line_also_after_a_reload(
    live_server_url, page, context, login, alice, limits, conversations, simulator
):
    limits(0, 1)
    first, second = conversations(alice, 2)
    slow_answers(simulator, tps=20, tokens=400)
    login(page, alice)
    page.goto(live_server_url + first.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.fill("#composer-input", "Runs first")
    page.press("#composer-input", "Enter")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)

    other = context.new_page()
    other.goto(live_server_url + second.get_absolute_url())
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    other.fill("#composer-input", "Waits its turn")
    other.press("#composer-input", "Enter")
    waiting = other.locator('article.assistant[data-status="streaming"]')
    expect(waiting.locator(".live-figures")).to_have_text("Queued — position 1")
    expect(other.locator("#stop-button")).to_be_visible()

    other.reload()
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    expect(waiting.locator(".live-figures")).to_have_text("Queued — position 1")

    simulator.config.tps = 200
    page.click("#stop-button")
    done = other.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=20_000)
    expect(done.locator(".live-figures")).to_have_count(0)
    answer = Message.objects.get(conversation=second, role="assistant")
    assert answer.status == Message.Status.DONE and answer.content
    assert answer.content.split()[0] in done.locator(".answer").inner_text()
