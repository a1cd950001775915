"""Messages: one row per question or answer, with the answer's figures."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy, ngettext

if TYPE_CHECKING:
    from chat.models.attachments import AttachmentView
    from chat.models.versions import Versions


class Sendable(Protocol):
    """What the history builder reads of a message (`chat.models.history`): a
    stored one, or a row of these columns alone, much cheaper to read than
    whole messages when a turn begins (`chat.models.turn_rows`)."""

    @property
    def pk(self) -> Any: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def status(self) -> str: ...


class MessageQuerySet(models.QuerySet["Message"]):
    def append_branch(self, rows: list[Message]) -> list[Message]:
        """Store new rows of one conversation as one branch, in a few queries
        however many: each follows the row before it, the first (unless told
        its parent) the conversation's last shown message."""
        if not rows:
            return []
        if rows[0].parent_id is None:
            rows[0].parent_id = Message.last_shown_id(rows[0].conversation_id)
        stored = self.bulk_create(rows)
        for parent, row in zip(stored, stored[1:], strict=False):
            row.parent = parent
        self.bulk_update(stored[1:], ["parent"], batch_size=1000)
        return stored

    def answers(self) -> MessageQuerySet:
        """Answers a model gave here: what quotas and throughput count. An
        assistant turn the asker wrote (an API request's history) is not one."""
        return self.filter(role=Message.Role.ASSISTANT, written_by_asker=False)

    def orphans(self, *, older_than: timedelta) -> MessageQuerySet:
        """Streaming answers whose owner stopped checkpointing (the heartbeat):
        their process died."""
        cutoff = timezone.now() - older_than
        return self.filter(status=Message.Status.STREAMING, updated_at__lt=cutoff)

    def mark_orphans_interrupted(self, *, older_than: timedelta) -> int:
        """Mark orphans interrupted, keeping their text."""
        return self.orphans(older_than=older_than).update(**_interrupted())

    def interrupt_orphans(
        self,
        *,
        older_than: timedelta,
        keep: Iterable[int] = (),
        among: Iterable[int] | None = None,
    ) -> list[Message]:
        """Mark orphans interrupted, keeping their text; return those marked.
        `keep`: answers known to be alive (the sweeping process's own);
        `among`: only these (those whose owner is known to be gone)."""
        orphans = self.orphans(older_than=older_than).exclude(pk__in=list(keep))
        if among is not None:
            orphans = orphans.filter(pk__in=list(among))
        ids = list(orphans.values_list("pk", flat=True))
        if not ids:
            return []
        # The status condition again: an owner may have finished meanwhile.
        self.orphans(older_than=older_than).filter(pk__in=ids).update(**_interrupted())
        return list(self.filter(pk__in=ids, status=Message.Status.INTERRUPTED))


class ShownMessages(models.Manager["Message"]):
    """The default manager, so `conversation.messages` too: the messages a
    regenerate or an edit replaced are kept (nothing is lost, and the throughput
    figures still count them) but left out of the conversation."""

    def get_queryset(self) -> models.QuerySet[Message]:
        return super().get_queryset().filter(replaced=False)


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", gettext_lazy("User")
        ASSISTANT = "assistant", gettext_lazy("Assistant")

    class Source(models.TextChoices):
        CHAT = "chat", gettext_lazy("Chat")
        API = "api", gettext_lazy("API")

    class Status(models.TextChoices):
        STREAMING = "streaming", gettext_lazy("Streaming")
        DONE = "done", gettext_lazy("Done")
        STOPPED = "stopped", gettext_lazy("Stopped")
        ERROR = "error", gettext_lazy("Error")
        INTERRUPTED = "interrupted", gettext_lazy("Interrupted")

    # A streaming answer's owner saves it about once a second, its heartbeat
    # (chat/live/engine/checkpoints.py, whose intervals must stay below this); one
    # whose last save is older than this belongs to a process that died.
    ORPHAN_AFTER: ClassVar[timedelta] = timedelta(seconds=10)
    # Files of an answer's question (not a column: see `question_files`).
    files_with_question: int = 0

    conversation = models.ForeignKey(
        "chat.Conversation",
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name=gettext_lazy("conversation"),
    )
    role = models.CharField(
        max_length=10, choices=Role, verbose_name=gettext_lazy("role")
    )
    content = models.TextField(blank=True, verbose_name=gettext_lazy("content"))
    thinking = models.TextField(blank=True, verbose_name=gettext_lazy("thinking"))
    # The answer's steps in order, as structured parts (docs/tools.md):
    # thinking, content and tool calls with their results.
    steps = models.JSONField(
        default=list, blank=True, verbose_name=gettext_lazy("steps")
    )
    status = models.CharField(
        max_length=12,
        choices=Status,
        default=Status.DONE,
        verbose_name=gettext_lazy("status"),
    )
    error_code = models.CharField(
        max_length=40, blank=True, verbose_name=gettext_lazy("error code")
    )
    error_detail = models.TextField(
        blank=True, verbose_name=gettext_lazy("error detail")
    )
    client_id = models.CharField(
        max_length=64, blank=True, verbose_name=gettext_lazy("client id")
    )
    model_tag = models.CharField(
        max_length=200, blank=True, verbose_name=gettext_lazy("model tag")
    )
    thinking_enabled = models.BooleanField(
        null=True, verbose_name=gettext_lazy("thinking enabled")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )
    updated_at = models.DateTimeField(
        auto_now=True, verbose_name=gettext_lazy("updated at")
    )

    # Generation figures: ours (milliseconds, from our clock) ...
    queue_wait_ms = models.FloatField(
        null=True, verbose_name=gettext_lazy("queue wait ms")
    )
    first_token_ms = models.FloatField(
        null=True, verbose_name=gettext_lazy("first token ms")
    )
    first_answer_token_ms = models.FloatField(
        null=True, verbose_name=gettext_lazy("first answer token ms")
    )
    thinking_ms = models.FloatField(null=True, verbose_name=gettext_lazy("thinking ms"))
    total_ms = models.FloatField(null=True, verbose_name=gettext_lazy("total ms"))
    # ... and the server's own, when it reports them.
    prompt_tokens = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("prompt tokens")
    )
    prompt_eval_ms = models.FloatField(
        null=True, verbose_name=gettext_lazy("prompt eval ms")
    )
    output_tokens = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("output tokens")
    )
    eval_ms = models.FloatField(null=True, verbose_name=gettext_lazy("eval ms"))
    load_ms = models.FloatField(null=True, verbose_name=gettext_lazy("load ms"))
    done_reason = models.CharField(
        max_length=20, blank=True, verbose_name=gettext_lazy("done reason")
    )
    # Output tokens held for the answer by the quotas while it runs: what it
    # may use, asked of the model server as its limit (`chat.models.quotas`;
    # 0: no token quota applied).
    reserved_tokens = models.PositiveIntegerField(
        default=0, verbose_name=gettext_lazy("reserved tokens")
    )
    # Characters of the server's text that could not be stored (NUL, lone
    # surrogates), kept as U+FFFD (`chat.upstream.events.cleaned`).
    replaced_chars = models.PositiveIntegerField(
        default=0, verbose_name=gettext_lazy("replaced chars")
    )
    # What was sent with the question (the history builder's account).
    history_sent = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("history sent")
    )
    history_total = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("history total")
    )
    prompt_tokens_estimate = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("prompt tokens estimate")
    )
    context_tokens = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("context tokens")
    )
    prompt_chars = models.PositiveIntegerField(
        null=True, verbose_name=gettext_lazy("prompt chars")
    )  # calibrates the estimate

    # The model calls the turn made (one, plus one per round of tool calls):
    # the quotas count each (`chat.models.quotas`).
    model_calls = models.PositiveSmallIntegerField(
        default=1, verbose_name=gettext_lazy("model calls")
    )
    # Time spent running tools (and waiting for their approval), apart from the
    # model's; None when no tool ran.
    tool_ms = models.FloatField(null=True, verbose_name=gettext_lazy("tool ms"))

    # Where the question came from: the chat page, or the API with a key.
    source = models.CharField(
        max_length=4,
        choices=Source,
        default=Source.CHAT,
        verbose_name=gettext_lazy("source"),
    )
    api_key = models.ForeignKey(
        "chat.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        verbose_name=gettext_lazy("api key"),
    )

    # An assistant turn sent as history in an API request and stored with it:
    # kept to show the conversation, never counted as an answer given here.
    written_by_asker = models.BooleanField(
        default=False, verbose_name=gettext_lazy("written by asker")
    )

    # The conversation is a tree: each message's parent is the one it follows
    # (a question's, the answer before it; an answer's, its question). An edit
    # or a regenerate adds a sibling question under the same parent, a version
    # of that turn (`chat.models.versions`).
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        verbose_name=gettext_lazy("parent"),
    )
    # Off the branch shown: kept (nothing is lost, the figures still count it),
    # not shown, never sent. The shown branch is the rows without this mark;
    # as a child's id is always above its parent's, they read in id order.
    replaced = models.BooleanField(default=False, verbose_name=gettext_lazy("replaced"))
    # When this message was last put on the shown branch: switching to a turn's
    # version shows below it the branch last viewed there.
    shown_at = models.DateTimeField(
        default=timezone.now, verbose_name=gettext_lazy("shown at")
    )

    shown = ShownMessages()  # first: the default manager
    objects = MessageQuerySet.as_manager()  # every row

    # Set on a shown answer whose turn has other versions (the "‹ 2 / 3 ›"
    # control): see `Conversation.place_answers`.
    versions: Versions | None = None

    class Meta:
        verbose_name = gettext_lazy("message")
        verbose_name_plural = gettext_lazy("messages")
        ordering = ["pk"]
        indexes = [
            models.Index(fields=["status", "updated_at"]),
            # The throughput page counts answers by when they were asked.
            models.Index(fields=["created_at"]),
            # Conversation pages read a page of the newest shown messages below
            # an id (chat.models.paging), and count the shown ones before it.
            models.Index(fields=["conversation", "replaced", "id"]),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.pk}"

    def save(self, *args: Any, root: bool = False, **kwargs: Any) -> None:
        """A new message follows the shown branch's last one, unless told its
        parent: an edit or a regenerate first takes the turn and what follows
        off the branch (`chat.models.turn_rows`), so its question lands beside the
        old one. `root`: it has none, as its caller knows from the branch it
        read (a conversation's first question: no query to find it again)."""
        if self._state.adding and self.parent_id is None and not root:
            self.parent_id = Message.last_shown_id(self.conversation_id)
        super().save(*args, **kwargs)

    @staticmethod
    def last_shown_id(conversation_id: int) -> int | None:
        """The shown branch's last message: where a new one goes."""
        shown = Message.shown.filter(conversation_id=conversation_id)
        return shown.order_by("-pk").values_list("pk", flat=True).first()

    @property
    def dom_id(self) -> str:
        return f"message-{self.pk}"

    @property
    def decode_tps(self) -> float | None:
        """Output tokens per second: the server's count and time when reported."""
        if self.output_tokens and self.eval_ms:
            return self.output_tokens / (self.eval_ms / 1000)
        return None

    @property
    def history_summary(self) -> str:
        """What was sent with the question, e.g. "14 of 52 messages, ~6.1k of 8k
        tokens"."""
        if self.history_sent is None or self.history_total is None:
            return ""
        total = self.history_total
        parts = [
            ngettext(
                "%(sent)s of %(total)s message", "%(sent)s of %(total)s messages", total
            )
            % {"sent": self.history_sent, "total": total}
        ]
        if self.prompt_tokens_estimate is not None and self.context_tokens:
            context = self.context_tokens
            parts.append(
                ngettext(
                    "~%(used)s of %(context)s token",
                    "~%(used)s of %(context)s tokens",
                    context,
                )
                % {
                    "used": spoken_tokens(self.prompt_tokens_estimate),
                    "context": spoken_tokens(context),
                }
            )
        files = self.question_files()
        if files:
            parts.append(
                ngettext(
                    "%(count)s file with the question",
                    "%(count)s files with the question",
                    files,
                )
                % {"count": files}
            )
        return ", ".join(parts)

    def question_files(self) -> int:
        """How many files went with this answer's question: counted when the
        answer is stored (`chat.models.turn_rows`) or read with it
        (`files_with_question`, an annotation); never a query here."""
        if self.role != Message.Role.ASSISTANT:
            return 0
        return self.files_with_question

    @property
    def is_finished(self) -> bool:
        return self.status != Message.Status.STREAMING

    def place_among_versions(self) -> None:
        """An answer sent on its own (a resume from the store) learns where it
        stands among its turn's versions, for its control
        (`Conversation.place_answers`)."""
        self.conversation.place_answers([self])

    @property
    def files(self) -> list[AttachmentView]:
        """The files sent with this question, as its owner sees them: only
        those loaded with it (`prefetch_related("attachments")`), so that
        rendering a message or a frame never queries (frames are rendered on
        the event loop)."""
        loaded = getattr(self, "_prefetched_objects_cache", {})
        if self.role != Message.Role.USER or "attachments" not in loaded:
            return []
        return [attachment.view() for attachment in loaded["attachments"]]

    def stats(self) -> dict[str, Any]:
        return {
            "queue_wait_ms": self.queue_wait_ms,
            "first_token_ms": self.first_token_ms,
            "first_answer_token_ms": self.first_answer_token_ms,
            "thinking_ms": self.thinking_ms,
            "total_ms": self.total_ms,
            "prompt_tokens": self.prompt_tokens,
            "prompt_eval_ms": self.prompt_eval_ms,
            "output_tokens": self.output_tokens,
            "eval_ms": self.eval_ms,
            "load_ms": self.load_ms,
            "decode_tps": self.decode_tps,
            "done_reason": self.done_reason,
            "replaced_chars": self.replaced_chars,
            "model_calls": self.model_calls,
            "tool_ms": self.tool_ms,
        }


def spoken_tokens(count: int) -> str:
    """A token count the way context sizes are spoken of: 8192 is "8k"."""
    if count < 1000:
        return str(count)
    thousands = count / 1024
    text = f"{thousands:.1f}" if thousands < 10 else f"{thousands:.0f}"
    return text.removesuffix(".0") + "k"


def _interrupted() -> dict[str, Any]:
    return {
        "status": Message.Status.INTERRUPTED,
        "error_code": "interrupted",
        "error_detail": "The server restarted while this answer was being written.",
    }
