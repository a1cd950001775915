from __future__ import annotations

from datetime import timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone


class ThinkingMode(models.TextChoices):
    DEFAULT = "default", "Model default"
    ON = "on", "On"
    OFF = "off", "Off"


class ModelProfileQuerySet(models.QuerySet["ModelProfile"]):
    def default(self) -> ModelProfile | None:
        """The model for a conversation that has none: a real model before the demo."""
        return self.filter(enabled=True).order_by("is_demo", "pk").first()


class ModelProfile(models.Model):
    class Backend(models.TextChoices):
        OLLAMA = "ollama", "Ollama"
        OPENAI = "openai", "OpenAI-compatible"

    tag = models.CharField(
        max_length=200, help_text="Model name on the server, e.g. qwen3:14b"
    )
    display_name = models.CharField(max_length=200, blank=True)
    backend = models.CharField(max_length=10, choices=Backend, default=Backend.OLLAMA)
    base_url = models.URLField(max_length=500)
    enabled = models.BooleanField(default=True)
    is_demo = models.BooleanField(
        default=False, help_text="Served by the bundled simulator, not a real model."
    )
    supports_thinking = models.BooleanField(default=False)
    context_length = models.PositiveIntegerField(default=4096)
    default_thinking = models.CharField(
        max_length=10,
        choices=[(ThinkingMode.ON, "On"), (ThinkingMode.OFF, "Off")],
        default=ThinkingMode.ON,
    )
    options = models.JSONField(
        default=dict, blank=True, help_text="Sampling options sent with every request."
    )

    objects = ModelProfileQuerySet.as_manager()

    class Meta:
        ordering = ["display_name", "tag"]
        constraints = [
            models.UniqueConstraint(
                fields=["base_url", "tag"], name="unique_profile_per_server"
            )
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        name = self.display_name or self.tag
        return f"{name} (demo model)" if self.is_demo else name

    def think_flag(self, mode: str) -> bool | None:
        """The `think` value to send: None (omit it) for a model without thinking."""
        if not self.supports_thinking:
            return None
        if mode == ThinkingMode.DEFAULT:
            mode = self.default_thinking
        return mode == ThinkingMode.ON

    def request_options(self) -> dict[str, Any]:
        # num_ctx is always explicit so Ollama never truncates silently.
        return {**self.options, "num_ctx": self.context_length}


class Conversation(models.Model):
    class NoModel(Exception):
        pass

    class Busy(Exception):
        pass

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    model_profile = models.ForeignKey(
        ModelProfile, null=True, blank=True, on_delete=models.SET_NULL
    )
    thinking = models.CharField(
        max_length=10, choices=ThinkingMode, default=ThinkingMode.DEFAULT
    )
    system_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]

    def __str__(self) -> str:
        return self.display_title

    def get_absolute_url(self) -> str:
        return reverse("conversation", args=[self.pk])

    @property
    def display_title(self) -> str:
        return self.title or "New conversation"

    @property
    def group_name(self) -> str:
        return f"chat.{self.pk}"

    def title_from(self, text: str) -> str:
        words = " ".join(text.split())
        return words[:60] + ("…" if len(words) > 60 else "")

    def model_for_next_answer(self) -> ModelProfile:
        profile = self.model_profile
        if profile is None or not profile.enabled:
            profile = ModelProfile.objects.default()
        if profile is None:
            raise Conversation.NoModel(
                "No model is set up. An admin can add one under Model profiles."
            )
        return profile

    @transaction.atomic
    def begin_turn(self, content: str, client_id: str = "") -> Turn:
        """Store the user's message and a streaming placeholder for the answer;
        return both, the model to ask and the history to send it."""
        profile = self.model_for_next_answer()
        # The row lock (PostgreSQL) makes two sends from two processes take turns.
        Conversation.objects.select_for_update().filter(pk=self.pk).first()
        if self.messages.filter(status=Message.Status.STREAMING).exists():
            raise Conversation.Busy("Wait for the current answer, or stop it.")
        question = self.messages.create(
            role=Message.Role.USER, content=content, client_id=client_id
        )
        history = self.history_for_prompt()
        answer = self.messages.create(
            role=Message.Role.ASSISTANT,
            status=Message.Status.STREAMING,
            model_tag=profile.tag,
            thinking_enabled=profile.think_flag(self.thinking),
        )
        titled = not self.title
        if titled:
            self.title = self.title_from(content)
        self.model_profile = profile
        self.save(update_fields=["title", "model_profile", "updated_at"])
        return Turn(question, answer, profile, history, titled)

    def history_for_prompt(self) -> list[dict[str, str]]:
        """The messages to send: the system prompt, then every finished user and
        assistant message's answer text. Earlier thinking is never sent back."""
        prompt: list[dict[str, str]] = []
        if self.system_prompt:
            prompt.append({"role": "system", "content": self.system_prompt})
        for message in self.messages.exclude(status=Message.Status.STREAMING).order_by(
            "pk"
        ):
            if message.role == Message.Role.ASSISTANT and not message.content:
                continue  # a failed or empty answer teaches the model nothing
            prompt.append({"role": message.role, "content": message.content})
        return prompt


class Turn(NamedTuple):
    question: Message
    answer: Message
    profile: ModelProfile
    history: list[dict[str, str]]
    titled: bool  # the conversation took its title from this question


class MessageQuerySet(models.QuerySet["Message"]):
    def orphans(self, *, older_than: timedelta) -> MessageQuerySet:
        """Streaming answers whose owner stopped checkpointing (the heartbeat):
        their process died."""
        cutoff = timezone.now() - older_than
        return self.filter(status=Message.Status.STREAMING, updated_at__lt=cutoff)

    def mark_orphans_interrupted(self, *, older_than: timedelta) -> int:
        """Mark orphans interrupted, keeping their text."""
        return self.orphans(older_than=older_than).update(**_interrupted())

    def interrupt_orphans(self, *, older_than: timedelta) -> list[Message]:
        """Mark orphans interrupted, keeping their text; return those marked."""
        ids = list(self.orphans(older_than=older_than).values_list("pk", flat=True))
        if not ids:
            return []
        # The status condition again: an owner may have finished meanwhile.
        self.orphans(older_than=older_than).filter(pk__in=ids).update(**_interrupted())
        return list(self.filter(pk__in=ids, status=Message.Status.INTERRUPTED))


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        STREAMING = "streaming"
        DONE = "done"
        STOPPED = "stopped"
        ERROR = "error"
        INTERRUPTED = "interrupted"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=10, choices=Role)
    content = models.TextField(blank=True)
    thinking = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status, default=Status.DONE)
    error_code = models.CharField(max_length=40, blank=True)
    error_detail = models.TextField(blank=True)
    client_id = models.CharField(max_length=64, blank=True)
    model_tag = models.CharField(max_length=200, blank=True)
    thinking_enabled = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Generation figures: ours (milliseconds, from our clock) ...
    queue_wait_ms = models.FloatField(null=True)
    first_token_ms = models.FloatField(null=True)
    first_answer_token_ms = models.FloatField(null=True)
    thinking_ms = models.FloatField(null=True)
    total_ms = models.FloatField(null=True)
    # ... and the server's own, when it reports them.
    prompt_tokens = models.PositiveIntegerField(null=True)
    prompt_eval_ms = models.FloatField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    eval_ms = models.FloatField(null=True)
    load_ms = models.FloatField(null=True)
    done_reason = models.CharField(max_length=20, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["status", "updated_at"])]

    def __str__(self) -> str:
        return f"{self.role} #{self.pk}"

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
    def is_finished(self) -> bool:
        return self.status != Message.Status.STREAMING

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
        }


def _interrupted() -> dict[str, Any]:
    return {
        "status": Message.Status.INTERRUPTED,
        "error_code": "interrupted",
        "error_detail": "The server restarted while this answer was being written.",
    }
