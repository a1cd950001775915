"""Conversations and the turn that starts an answer."""

from __future__ import annotations

from typing import NamedTuple

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse

from chat.models.messages import Message
from chat.models.profiles import HistoryPolicy, ModelProfile, ThinkingMode


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
    # Blank / null: the model profile's default, then the site's.
    history_policy = models.CharField(max_length=10, choices=HistoryPolicy, blank=True)
    history_last_n = models.PositiveIntegerField(null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
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
