"""The rows of a turn: a question and its answer's placeholder, for a sent
question, a regenerate, an edit or an answer asked over the API; and the
versions of a turn shown in its place.

Each begins in two steps, so that the answer's place in line can be decided
between them (`chat.live.engine.turn.beginning`, which owns the admission): `prepare_*`
checks
the turn (its model, whether an answer is running, the quotas, its files) and
returns it `Pending`, its rows not written yet (the answer has no id); then
`Pending.write` writes them and `Pending.close` the conversation's row, in the
caller's transaction. The model server may be asked between the two
(docs/latency.md, rule 8). `begin_turn`, `begin_regenerate` and `begin_edit`
do all three at once, for callers that place the answer in no line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import models, transaction
from django.db.models import Exists, OuterRef, prefetch_related_objects
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models.admission import Line
from chat.models.attachments import Attachment
from chat.models.conversations import Conversation, VersionSwitch
from chat.models.history import estimate_tokens, message_chars
from chat.models.messages import Message, Sendable
from chat.models.prepared import Prepared
from chat.models.profiles import ModelProfile, ThinkingMode
from chat.models.site import SiteDefaults
from chat.models.versions import branch_below

if TYPE_CHECKING:
    from chat.models.api_keys import ApiKey
    from chat.models.teams import Team


class Turn(NamedTuple):
    question: Message
    answer: Message
    profile: ModelProfile
    history: list[dict[str, Any]]
    titled: bool  # the conversation took its title from this question
    options: dict[str, Any] | None = None  # the request's options (num_ctx, ...)


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


def _done(pending: Pending) -> Any:
    pending.write()
    return pending.close()


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
    turn: Turn = _done(prepare_turn(conversation, asked))
    return turn


def prepare_turn(conversation: Conversation, asked: Asked) -> Pending:
    """`begin_turn`'s checks, its rows not written."""
    profile = conversation.model_for_next_answer()
    lock_when_idle(conversation)
    return _prepare(conversation, profile, asked)


@transaction.atomic
def begin_turn_of(pk: int, content: str, client_id: str = "") -> Turn:
    """`begin_turn` for the conversation `pk` (see `prepare_turn_of`)."""
    turn: Turn = _done(prepare_turn_of(pk, Asked(content, client_id)))
    return turn


def prepare_turn_of(pk: int, asked: Asked) -> Pending:
    """`prepare_turn` for the conversation `pk`, in as few trips to the
    database as it takes (docs/latency.md, rule 8): one trip that locks the
    site's row (the admission's; `chat.models.admission`) and reads the
    tickets, then reads the conversation, its model and its owner, locking the
    conversation's and the owner's rows and saying whether an answer is
    running, and the messages the question follows. The line it read is the
    pending turn's."""
    # One trip (`prepared.together`): the site's row locked (first: the
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


def api_profile(api_key: ApiKey, model: str) -> ModelProfile:
    """The enabled model profile named `model` that the key may ask (Ollama's
    "name" means "name:latest"); `ModelProfile.DoesNotExist` for none of that
    name, ModelForbidden for one the key or its owner may not use."""
    names = [model] if ":" in model else [model, f"{model}:latest"]
    for name in names:
        profile = api_key.usable_profiles().filter(tag=name).first()
        if profile is not None:
            return profile
    if ModelProfile.objects.filter(tag__in=names, enabled=True).exists():
        raise Conversation.ModelForbidden(
            f"The model {model} is not available to you with this key."
        )
    raise ModelProfile.DoesNotExist(f"The model {model} does not exist.")


def prepare_api_turn(
    api_key: ApiKey,
    profile: ModelProfile,
    messages: list[dict[str, str]],
    *,
    think: bool | None,
    store: bool,
    options: dict[str, Any],
) -> Pending:
    """An answer asked over the API (`chat.api`), in a conversation of its
    own: listed in the owner's list only when `store`, else kept for its
    figures (throughput, quotas) with the request's last question. The
    history sent is the request's own `messages`, as given. Its rows are
    written (`Pending.written`).

    Refused (nothing stored) with ModelForbidden or, before the model is
    asked, `quotas.QuotaReached`: the same checks as `begin_turn`."""
    from chat.models import quotas  # see _prepare

    owner = api_key.user
    if not (profile.enabled and profile.allowed_for(owner) and api_key.allows(profile)):
        raise Conversation.ModelForbidden(
            _("The model %(model)s is not available to this key.")
            % {"model": profile.tag}
        )
    quotas.lock(owner)
    left = quotas.check(owner)
    system = [m["content"] for m in messages if m["role"] == "system"]
    turns = [m for m in messages if m["role"] != "system"]
    questions = [m for m in turns if m["role"] == "user"]
    first = questions[0]["content"] if questions else ""
    conversation = Conversation.objects.create(
        owner=owner,
        model_profile=profile,
        thinking=ThinkingMode.DEFAULT
        if think is None
        else (ThinkingMode.ON if think else ThinkingMode.OFF),
        system_prompt="\n\n".join(system),
        listed=store,
        title=Conversation.title_from(first),
    )
    kept = turns if store else turns[-1:]
    rows = Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role=m["role"],
                content=m["content"],
                source=Message.Source.API,
                api_key=api_key,
                written_by_asker=m["role"] == Message.Role.ASSISTANT,
            )
            for m in kept
        ]
    )
    chars = sum(message_chars(m["content"]) for m in messages)
    answer = Message(
        conversation=conversation,
        parent=rows[-1] if rows else None,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        model_tag=profile.tag,
        thinking_enabled=think,
        source=Message.Source.API,
        api_key=api_key,
        history_sent=len(messages),
        history_total=len(messages),
        prompt_chars=chars,
        prompt_tokens_estimate=estimate_tokens(
            chars, profile.estimated_chars_per_token
        ),
        context_tokens=profile.context_length,
    )
    options = dict(options)
    quotas.reserve(answer, profile, options, left)
    answer.save()
    question = rows[-1] if rows else answer
    turn = Turn(question, answer, profile, messages, False, options)
    return Pending(conversation, turn, written=True)


# Regenerates and edits: a new version of a shown turn.


@transaction.atomic
def begin_regenerate(conversation: Conversation, answer_id: int | None = None) -> Retry:
    """`prepare_regenerate`, written."""
    retry: Retry = _done(prepare_regenerate(conversation, answer_id))
    return retry


def prepare_regenerate(
    conversation: Conversation, answer_id: int | None = None
) -> Pending:
    """Ask a shown answer's question again (the last one's by default): the
    question, its answer and everything after them leave the shown branch
    (kept: `replaced`), and a new version of the turn begins beside them,
    so what was replaced is not in the history sent to the model."""
    _check_before_retry(conversation)
    if answer_id is None:
        question = conversation.messages.filter(role=Message.Role.USER).last()
    else:
        answer = conversation.messages.filter(
            pk=answer_id, role=Message.Role.ASSISTANT
        ).first()
        question = answer.parent if answer is not None else None
        if question is None or question.role != Message.Role.USER:
            raise Conversation.NothingToRegenerate(
                _("That answer is not one of this conversation's to regenerate.")
            )
    if question is None:
        raise Conversation.NothingToRegenerate(
            _("There is no answer to regenerate yet.")
        )
    return _retry(conversation, question, question.content)


@transaction.atomic
def begin_edit(
    conversation: Conversation,
    message_id: int,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Retry:
    """`prepare_edit`, written."""
    retry: Retry = _done(
        prepare_edit(
            conversation,
            message_id,
            content,
            attachments=attachments,
            truncate_documents=truncate_documents,
        )
    )
    return retry


def prepare_edit(
    conversation: Conversation,
    message_id: int,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Pending:
    """Ask a shown question again with new text: a new version of its turn,
    the old one and what followed it kept on their own branch. It keeps
    its files unless `attachments` (new uploads' ids) replace them."""
    _check_before_retry(conversation)
    question = conversation.messages.filter(
        pk=message_id, role=Message.Role.USER
    ).first()
    if question is None:
        raise Conversation.NotAQuestion(
            _("Only your own questions in this conversation can be edited.")
        )
    return _retry(
        conversation,
        question,
        content,
        attachments=attachments,
        truncate_documents=truncate_documents,
    )


def lock_when_idle(conversation: Conversation) -> None:
    """Raises Busy while an answer of the conversation is streaming."""
    # The row lock (PostgreSQL) makes two sends, retries or version switches
    # from two processes take turns.
    Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if conversation.messages.filter(status=Message.Status.STREAMING).exists():
        raise Conversation.Busy(_("Wait for the current answer, or stop it."))


def _check_before_retry(conversation: Conversation) -> None:
    # The model first, so a missing one changes nothing; then the lock.
    conversation.model_for_next_answer()
    lock_when_idle(conversation)


def _retry(
    conversation: Conversation,
    question: Message,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Pending:
    """The question and everything after it on the shown branch make way
    for a new version of its turn: they are kept, marked replaced, so if
    the new answer fails nothing is lost, and they stay reachable with the
    turn's version control (`show_version`). The new question follows the
    old one's parent: after the others leave, it is the branch's last."""
    hidden = conversation.messages.filter(pk__gte=question.pk)
    removed = sorted(hidden.values_list("pk", flat=True))
    hidden.update(replaced=True)
    if attachments is None:
        # The new version asks with the same files (rows of its own that
        # share the stored files).
        asked = Asked(content, question.client_id, files_of=question)
    else:
        asked = Asked(content, question.client_id, attachments, truncate_documents)
    pending = prepare_turn(conversation, asked)
    pending.removed = removed
    return pending


@transaction.atomic
def show_version(conversation: Conversation, question_id: int) -> VersionSwitch:
    """Show another version of a shown turn: the shown version and
    everything below it leave the shown branch (kept), and the chosen
    question comes back with the branch last viewed below it (the newest
    one if it was never left)."""
    lock_when_idle(conversation)
    chosen = Message.objects.filter(
        conversation=conversation, pk=question_id, role=Message.Role.USER
    ).first()
    shown = None
    if chosen is not None:
        shown = conversation.messages.filter(
            role=Message.Role.USER, parent_id=chosen.parent_id
        ).first()
    if chosen is None or shown is None:
        raise Conversation.NotAVersion(
            _("That is not a version of a question shown in this conversation.")
        )
    removed: list[int] = []
    if shown.pk != chosen.pk:
        hidden = conversation.messages.filter(pk__gte=shown.pk)
        removed = sorted(hidden.values_list("pk", flat=True))
        hidden.update(replaced=True)
        below = Message.objects.filter(conversation=conversation, pk__gt=chosen.pk)
        path = branch_below(chosen.pk, below.values_list("pk", "parent_id", "shown_at"))
        Message.objects.filter(pk__in=path).update(
            replaced=False, shown_at=timezone.now()
        )
    chosen_branch = conversation.messages.filter(pk__gte=chosen.pk).order_by("pk")
    messages = list(chosen_branch.prefetch_related("attachments"))
    conversation.place_answers(messages)
    Attachment.count_for_answers(messages)
    return VersionSwitch(removed, messages)


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


# Compiled once (`chat.models.prepared`): the compiler costs more than the trip.
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
