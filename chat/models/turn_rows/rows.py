"""A turn's rows for a sent question (`begin_turn`, `prepare_turn_of`), the
types every turn shares (`Turn`, `Pending`), and a question's first reads
(`TURN_READ`, `EARLIER`). See the package's docstring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import models, transaction
from django.db.models import Exists, OuterRef, prefetch_related_objects
from django.utils.translation import gettext as _

from chat.models.admission import Line
from chat.models.attachments import Attachment
from chat.models.compiled_queries import Prepared
from chat.models.conversations import Conversation
from chat.models.history import estimate_tokens, message_chars
from chat.models.messages import Message, Sendable
from chat.models.profiles import ModelProfile
from chat.models.site import SiteDefaults

if TYPE_CHECKING:
    from chat.models.teams import Team


class ClientTools(NamedTuple):
    """Tools an API client offers the model and runs itself (`chat.api`; the
    site's own tools are for its own conversations): `tools` goes to the model
    server as given, in the function form (`chat.upstream` `chat(tools=...)`),
    with `choice` (`tool_choice`: None for the model's own choice, "required",
    or `{"type": "function", "function": {"name": ...}}`). Nothing is run: the
    turn ends with the model's first reply, its calls streamed to the client
    (`tool_call` and `tool_args` frames) and the reply finished with
    `done_reason="tool_calls"`. `parallel` False: the client takes only the
    reply's first call (`parallel_tool_calls`)."""

    tools: list[dict[str, Any]]
    choice: str | dict[str, Any] | None = None
    parallel: bool = True


class Turn(NamedTuple):
    question: Message
    answer: Message
    profile: ModelProfile
    history: list[dict[str, Any]]
    titled: bool  # the conversation took its title from this question
    options: dict[str, Any] | None = None  # the request's options (num_ctx, ...)
    client_tools: ClientTools | None = None  # an API client's own tools


class Retry(NamedTuple):
    turn: Turn
    removed: list[int]  # the messages the new turn replaces, oldest first


@dataclass
class Pending:
    """A turn checked and ready to be written (see the module's docstring).
    `line`: what the admission decides on, when the turn's first trip read it;
    `removed`: a retry's replaced messages; `written`: its rows are written
    already (an API turn's: its place in line is decided after them)."""

    conversation: Conversation
    turn: Turn
    line: Line | None = None
    removed: list[int] | None = None
    root: bool = False  # the question has no parent
    written: bool = False

    @property
    def owner_id(self) -> int:
        return self.conversation.owner_id

    def write(self) -> None:
        """The question's row (unless its files wrote it), the answer's, and
        the title the question gives (the turn may be shown then)."""
        if self.written:
            return
        question, answer = self.turn.question, self.turn.answer
        if question.pk is None:
            question.save(root=self.root)
        answer.parent_id = question.pk
        answer.save()
        if self.turn.titled:
            self.conversation.title = Conversation.title_from(question.content)

    def done(self) -> Any:
        """Written and closed at once (no line to place the answer in)."""
        self.write()
        return self.close()

    def close(self) -> Turn | Retry:
        """The conversation's own row: what it is asked with now."""
        if self.written:
            return self.turn
        conversation = self.conversation
        if conversation.model_profile_id is not None:
            # Its model was disabled: keep the one that answered. (No model at
            # all means "the site default", which it keeps following.)
            conversation.model_profile = self.turn.profile
        conversation.save(update_fields=["title", "model_profile", "updated_at"])
        if self.removed is None:
            return self.turn
        conversation.place_answers([self.turn.answer])
        return Retry(self.turn, self.removed)


class Asked(NamedTuple):
    """What a question says: its text, the page's id for it, and its files:
    uploads' ids (and whether documents may be truncated to fit), or the
    files of the question `files_of` (a retry's)."""

    content: str
    client_id: str = ""
    attachments: Sequence[str] = ()
    truncate_documents: bool = False
    files_of: Message | None = None


@transaction.atomic
def begin_turn(
    conversation: Conversation,
    content: str,
    client_id: str = "",
    *,
    attachments: Sequence[str] = (),
    truncate_documents: bool = False,
) -> Turn:
    """Store the user's message and a streaming placeholder for the answer;
    return both, the model to ask and the history to send it. The uploads
    `attachments` (ids) go with the question.

    Refused (nothing stored) with NoModel, ModelForbidden, Busy,
    AttachmentRefused or, before the model is asked, `quotas.QuotaReached`."""
    asked = Asked(content, client_id, attachments, truncate_documents)
    turn: Turn = prepare_turn(conversation, asked).done()
    return turn


def prepare_turn(conversation: Conversation, asked: Asked) -> Pending:
    """`begin_turn`'s checks, its rows not written."""
    profile = conversation.model_for_next_answer()
    lock_when_idle(conversation)
    return _prepare(conversation, profile, asked)


@transaction.atomic
def begin_turn_of(pk: int, content: str, client_id: str = "") -> Turn:
    """`begin_turn` for the conversation `pk` (see `prepare_turn_of`)."""
    turn: Turn = prepare_turn_of(pk, Asked(content, client_id)).done()
    return turn


def prepare_turn_of(pk: int, asked: Asked) -> Pending:
    """`prepare_turn` for the conversation `pk`, in as few trips to the
    database as it takes (docs/latency.md, rule 8): one trip that locks the
    site's row (the admission's; `chat.models.admission`) and reads the
    tickets, then reads the conversation, its model and its owner, locking the
    conversation's and the owner's rows and saying whether an answer is
    running, and the messages the question follows. The line it read is the
    pending turn's."""
    # One trip (`compiled_queries.together`): the site's row locked (first: the
    # lock order of `chat.models.admission`) with the tickets, the
    # conversation locked, and the messages the question follows.
    line, (read, earlier) = Line.read((TURN_READ, pk), (EARLIER, pk))
    conversation = TURN_READ.one(read)
    known = conversation.model_allowed  # type: ignore[attr-defined]
    if conversation.model_profile is not None and known:
        # Known now: `effective_model` need not ask again.
        conversation.model_profile.allowed_owner = conversation.owner_id
    site = line.site
    profile = conversation.effective_model(site).value
    if conversation.busy:  # type: ignore[attr-defined]  # annotated above
        raise Conversation.Busy(_("Wait for the current answer, or stop it."))
    return _prepare(
        conversation,
        profile,
        asked,
        site=site,
        locked=True,
        sent_files=conversation.sent_files,  # type: ignore[attr-defined]
        earlier_rows=earlier,
        line=line,
        # On no team (read with the owner's row, locked): no team's row to
        # lock or quotas to count.
        teams=None if conversation.on_teams else [],  # type: ignore[attr-defined]
    )


def _prepare(
    conversation: Conversation,
    profile: ModelProfile,
    asked: Asked,
    *,
    site: SiteDefaults | None = None,
    locked: bool = False,
    sent_files: bool = True,
    teams: list[Team] | None = None,
    earlier_rows: list[Any] | None = None,
    line: Line | None = None,
) -> Pending:
    """A turn's rows, not written yet (`locked`: the owner's row is locked
    already; `sent_files`: False when no message of the conversation has
    files, which the caller read already; `teams`: the owner's teams when the
    caller knows them, locked; `earlier_rows`: `EARLIER`'s, read already under
    the conversation's lock; `line`: what the admission decides on, read
    already)."""
    # Imported here: quotas counts teams' answers, and teams import conversations.
    from chat.models import quotas

    content, files_of, attachments = asked.content, asked.files_of, asked.attachments
    if teams is None:
        teams = quotas.lock(conversation.owner, user_locked=locked)
    left = quotas.check(conversation.owner, site=site, teams=teams)
    if earlier_rows is None:
        earlier_rows = EARLIER.rows(conversation.pk)
    earlier: list[Sendable] = [SentRow(*row) for row in earlier_rows]
    # The question follows the shown branch's last message (read just now).
    question = Message(
        conversation=conversation,
        role=Message.Role.USER,
        content=content,
        client_id=asked.client_id,
        parent_id=earlier[-1].pk if earlier else None,
    )
    if files_of is not None or attachments:
        # Its files are bound to its row (and may refuse the turn).
        question.save(root=not earlier)
        if files_of is not None:
            Attachment.copy_to(question, files_of, profile)
        else:
            Attachment.bind(
                question,
                attachments,
                profile,
                room_tokens=_room_for_documents(conversation, profile, content),
                truncate=asked.truncate_documents,
            )
        # Known now, in the database's thread: its frame is rendered on the loop.
        prefetch_related_objects([question], "attachments")
    else:  # nothing attached: no need to ask the database
        # Evaluated already: iterating `none()` still compiles its query
        # (about 0.5 ms, before the request and again on the loop).
        none = Attachment.objects.none()
        none._result_cache = []
        question._prefetched_objects_cache = {  # type: ignore[attr-defined]
            "attachments": none
        }
    prompt = conversation.build_prompt(
        profile,
        site=site,
        messages=[*earlier, question],
        # No files sent before, none now: no need to look for them.
        files=None if sent_files or question.pk is not None else {},
    )
    answer = Message(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        model_tag=profile.tag,
        thinking_enabled=conversation.effective_thinking(profile).value,
        **prompt.figures(),
    )
    answer.files_with_question = len(question.files)
    options = conversation.request_options(profile)
    # Before the answer is placed in line: the model server may be asked then.
    quotas.reserve(answer, profile, options, left)
    titled = not conversation.title
    turn = Turn(question, answer, profile, prompt.messages, titled, options)
    return Pending(conversation, turn, line, root=not earlier)


def _room_for_documents(
    conversation: Conversation, profile: ModelProfile, content: str
) -> int:
    """Tokens of the model's context left for a question's attachments:
    less the answer's reserve, the system prompt and the question's text."""
    chars = message_chars(content)
    if conversation.system_prompt:
        chars += message_chars(conversation.system_prompt)
    used = estimate_tokens(chars, profile.estimated_chars_per_token)
    return profile.context_length - profile.answer_reserve_tokens() - used


def lock_when_idle(conversation: Conversation) -> None:
    """Raises Busy while an answer of the conversation is streaming."""
    # The row lock (PostgreSQL) makes two sends, retries or version switches
    # from two processes take turns.
    Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if conversation.messages.filter(status=Message.Status.STREAMING).exists():
        raise Conversation.Busy(_("Wait for the current answer, or stop it."))


# A question's first reads.


def _turn_read(pk: int) -> models.QuerySet[Conversation]:
    """The conversation a question is sent to, with its model and owner, their
    rows locked, and what `prepare_turn_of` needs to know in the same trip."""
    streaming = Message.shown.filter(
        conversation=OuterRef("pk"), status=Message.Status.STREAMING
    )
    sent_files = Attachment.objects.filter(
        conversation=OuterRef("pk"), message__isnull=False
    )
    # Imported here: teams import conversations.
    from chat.models.teams import Membership

    on_teams = Membership.objects.filter(user=OuterRef("owner"))
    model_allowed = ModelProfile.objects.allowed_to(OuterRef("owner")).filter(
        pk=OuterRef("model_profile")
    )
    return (
        Conversation.objects.select_related("model_profile", "owner")
        .select_for_update(of=("self", "owner"))
        .annotate(
            # Whether an answer is running, whether any of its messages has
            # files, whether its owner is on a team, and whether the owner may
            # use its model.
            busy=Exists(streaming),
            sent_files=Exists(sent_files),
            on_teams=Exists(on_teams),
            model_allowed=Exists(model_allowed),
        )
        .filter(pk=pk)
    )


# Compiled once (`chat.models.compiled_queries`): the compiler costs more than the trip.
TURN_READ: Prepared[Conversation] = Prepared(_turn_read, at_start=True)

# The shown branch's messages a new question follows, by the conversation's id:
# the columns the history is built from, not whole messages (a long
# conversation's would cost milliseconds before the model is asked).
EARLIER: Prepared[Message] = Prepared(
    lambda pk: (
        Message.shown.filter(conversation_id=pk)
        .order_by("pk")
        .values_list("pk", "role", "content", "status")
    ),
    at_start=True,
)


class SentRow(NamedTuple):
    pk: int
    role: str
    content: str
    status: str
