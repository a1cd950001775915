"""Conversations: their settings, the prompt sent with their next question,
and the messages they show (a turn's rows are `chat.models.turn_rows`')."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chat.models.attachments import Attachment, files_by_message
from chat.models.effective import Effective, EffectiveSettings, History, Level
from chat.models.history import Prompt, build_prompt
from chat.models.messages import Message, Sendable
from chat.models.notices import SettingsChange
from chat.models.paging import Page, newest_before, page_size
from chat.models.profiles import HistoryPolicy, ModelProfile, ThinkingMode
from chat.models.site import SiteDefaults
from chat.models.versions import (
    branch_above,
    place,
    siblings_by_parent,
)

# A search hit this many pages above the newest message or fewer opens on a page
# that reaches the newest (Conversation.timeline_around); one further up opens
# on a page of its own, and the composer waits for the newest.
AROUND_PAGES = 4


class Conversation(models.Model):
    class NoModel(Exception):
        pass

    class ModelForbidden(NoModel):
        """The model is limited to teams the owner is not on (never replaced
        silently by another: the owner chooses)."""

    class Busy(Exception):
        pass

    class NothingToRegenerate(Exception):
        pass

    class NotAQuestion(Exception):
        pass

    class NotAVersion(Exception):
        pass

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="conversations",
        verbose_name=gettext_lazy("owner"),
    )
    title = models.CharField(
        max_length=200, blank=True, verbose_name=gettext_lazy("title")
    )
    model_profile = models.ForeignKey(
        ModelProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=gettext_lazy("model profile"),
    )
    thinking = models.CharField(
        max_length=10,
        choices=ThinkingMode,
        default=ThinkingMode.DEFAULT,
        verbose_name=gettext_lazy("thinking"),
    )
    system_prompt = models.TextField(
        blank=True, verbose_name=gettext_lazy("system prompt")
    )
    # The tool sources and single tools the owner switched on or off here
    # (chat/web/conversations/tools_menu.py says the shape).
    tool_choices = models.JSONField(
        default=dict, blank=True, verbose_name=gettext_lazy("tool choices")
    )
    # Blank / null: the model profile's default, then the site's.
    history_policy = models.CharField(
        max_length=10,
        choices=HistoryPolicy,
        blank=True,
        verbose_name=gettext_lazy("history policy"),
    )
    history_last_n = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=gettext_lazy("history last n")
    )
    temperature = models.FloatField(
        null=True, blank=True, verbose_name=gettext_lazy("temperature")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )
    updated_at = models.DateTimeField(
        auto_now=True, verbose_name=gettext_lazy("updated at")
    )
    # False for an answer asked over the API and kept only for its figures
    # (`chat.api`): not in the owner's list, never shared.
    listed = models.BooleanField(default=True, verbose_name=gettext_lazy("listed"))
    # The sidebar (chat.web.sidebar): pinned on top, archived out of the list
    # (still found by search), or filed in one of the owner's folders. Set with
    # .update() so that filing a conversation does not count as activity.
    pinned_at = models.DateTimeField(
        null=True, blank=True, verbose_name=gettext_lazy("pinned at")
    )
    archived_at = models.DateTimeField(
        null=True, blank=True, verbose_name=gettext_lazy("archived at")
    )
    folder = models.ForeignKey(
        "chat.Folder",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
        verbose_name=gettext_lazy("folder"),
    )
    # An imported conversation (chat.transfer): where it came from, and the key
    # that makes a second import of the same file create nothing new.
    imported_from = models.CharField(
        max_length=20, blank=True, verbose_name=gettext_lazy("imported from")
    )
    import_key = models.CharField(
        max_length=200, blank=True, verbose_name=gettext_lazy("import key")
    )

    class Meta:
        verbose_name = gettext_lazy("conversation")
        verbose_name_plural = gettext_lazy("conversations")
        ordering = ["-updated_at", "-pk"]
        indexes = [
            # The sidebar's page: one owner's listed conversations by activity.
            models.Index(
                fields=["owner", "listed", "archived_at", "-updated_at", "-id"],
                name="conversation_sidebar",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "import_key"],
                condition=~models.Q(import_key=""),
                name="conversation_import_once",
            ),
        ]

    def __str__(self) -> str:
        return self.display_title

    def get_absolute_url(self) -> str:
        return reverse("conversation", args=[self.pk])

    @property
    def display_title(self) -> str:
        return self.title or self.untitled_title()

    @staticmethod
    def untitled_title() -> str:
        """What a conversation without a title is called."""
        return _("New conversation")

    @staticmethod
    def title_from(text: str) -> str:
        words = " ".join(text.split())
        return words[:60] + ("…" if len(words) > 60 else "")

    def model_for_next_answer(self) -> ModelProfile:
        return self.effective_model().value

    @classmethod
    def next_model(cls, pk: int) -> ModelProfile | None:
        """The model the conversation's next answer would use, if it has one
        (none over quota: a preload would load a model for nothing)."""
        from chat.models import quotas  # quotas counts teams', which import this

        conversation = cls.objects.select_related("model_profile").filter(pk=pk).first()
        if conversation is None:
            return None
        try:
            profile = conversation.model_for_next_answer()
            quotas.check(conversation.owner)
        except (Conversation.NoModel, quotas.QuotaReached):
            return None
        return profile

    # Effective settings: the conversation's own value, else its model's
    # default, else the site's. Resolved here only; views, the panel and
    # a turn's rows (`chat.models.turn_rows`) all ask these.

    @classmethod
    def start(cls, owner: Any) -> Conversation:
        """A new conversation with the owner's default model (their user page)
        while they may use it, else the site's for them; the site's other
        defaults."""
        site = SiteDefaults.load()
        # The user's default model (UserSettings), while they may use it.
        mine = getattr(owner, "chat_settings", None)  # (None: never saved)
        profile = mine.default_profile if mine is not None else None
        if profile is None or not (profile.enabled and profile.allowed_for(owner)):
            profile = cls.site_model_for(owner, site)
        return cls.objects.create(
            owner=owner,
            model_profile=profile,
            thinking=site.default_thinking,
        )

    @staticmethod
    def site_model_for(
        owner: Any, site: SiteDefaults | None = None
    ) -> ModelProfile | None:
        """The site's model for `owner`: the site default when they may use it
        (it may be for some teams only), else the oldest model they may use."""
        profile = (site or SiteDefaults.load()).model_profile()
        if profile is None or profile.allowed_for(owner):
            return profile
        return ModelProfile.objects.usable_by(owner).default()

    def effective_model(
        self, site: SiteDefaults | None = None
    ) -> Effective[ModelProfile]:
        """Raises NoModel, or ModelForbidden when the conversation's own model
        is not (or no longer) for its owner's teams."""
        profile = self.model_profile
        if profile is not None and profile.enabled:
            if not profile.allowed_for(self.owner):
                raise Conversation.ModelForbidden(
                    _(
                        "%(model)s is not available to you any more. Choose "
                        "another model in the conversation settings."
                    )
                    % {"model": profile.label}
                )
            return Effective(profile, Level.CONVERSATION)
        site = site or SiteDefaults.load()
        if site.model_profile() is None:
            raise Conversation.NoModel(
                _("No model is set up. An admin can add one under Model profiles.")
            )
        profile = self.site_model_for(self.owner, site)
        if profile is None:
            raise Conversation.ModelForbidden(
                _(
                    "None of the models is available to you. An admin can give "
                    "one of your teams access to one."
                )
            )
        return Effective(profile, Level.SITE)

    def effective_thinking(self, profile: ModelProfile) -> Effective[bool | None]:
        """Whether the model is asked to think (None: it cannot)."""
        level = (
            Level.MODEL if self.thinking == ThinkingMode.DEFAULT else Level.CONVERSATION
        )
        return Effective(profile.think_flag(self.thinking), level)

    def effective_history(
        self, profile: ModelProfile, site: SiteDefaults | None = None
    ) -> Effective[History]:
        if self.history_policy:
            return Effective(
                History(self.history_policy, self.history_last_n or 0),
                Level.CONVERSATION,
            )
        if profile.default_history_policy:
            last_n = profile.default_history_last_n or 0
            return Effective(
                History(profile.default_history_policy, last_n), Level.MODEL
            )
        site = site or SiteDefaults.load()
        return Effective(
            History(site.default_history_policy, site.default_history_last_n),
            Level.SITE,
        )

    def effective_temperature(self, profile: ModelProfile) -> Effective[float | None]:
        if self.temperature is not None:
            return Effective(self.temperature, Level.CONVERSATION)
        value = profile.options.get("temperature")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return Effective(float(value), Level.MODEL)
        return Effective(None, Level.SERVER)

    def effective_settings(self) -> EffectiveSettings:
        """What the next answer will use, and where each value comes from."""
        site = SiteDefaults.load()
        model = self.effective_model(site)
        return EffectiveSettings(
            model=model,
            thinking=self.effective_thinking(model.value),
            history=self.effective_history(model.value, site),
            temperature=self.effective_temperature(model.value),
            system_prompt=self.system_prompt,
        )

    def request_options(
        self, profile: ModelProfile, *, tools: bool = False
    ) -> dict[str, Any]:
        """The model's options with this conversation's own on top (for an
        answer that offers `tools`: as it thinks then, `ModelProfile.think_with`)."""
        think = profile.think_with(self.effective_thinking(profile).value, tools)
        options = profile.request_options(think)
        temperature = self.effective_temperature(profile)
        if temperature.level == Level.CONVERSATION:
            options["temperature"] = temperature.value
        return options

    def build_prompt(
        self,
        profile: ModelProfile | None = None,
        *,
        site: SiteDefaults | None = None,
        messages: Sequence[Sendable] | None = None,
        files: dict[int, list[Attachment]] | None = None,
    ) -> Prompt:
        """The history to send with the newest question, by the effective policy
        (`site`, `messages`, `files`: the site's defaults, the shown messages and
        the sent files by message, when the caller read them already)."""
        profile = profile or self.model_for_next_answer()
        history = self.effective_history(profile, site).value
        return build_prompt(
            self.messages.order_by("pk") if messages is None else messages,
            system_prompt=self.system_prompt,
            policy=history.policy,
            last_n=history.last_n,
            context_tokens=profile.context_length,
            answer_tokens=profile.answer_reserve_tokens(),
            chars_per_token=profile.estimated_chars_per_token,
            images=profile.supports_vision,
            files=files_by_message(self.pk) if files is None else files,
        )

    def timeline(self) -> list[Message | SettingsChange]:
        """The newest page of `timeline_page`."""
        return self.timeline_page().items

    def timeline_page(
        self, before: int | None = None, size: int | None = None
    ) -> Page[Message | SettingsChange]:
        """A page of messages (the newest below the message id `before`, or the
        newest of all) with the settings-change notices between them, in order;
        each answer knows its turn's versions. A notice goes after the messages
        stored before it (or with it), so each is on exactly one page."""
        page = newest_before(
            self.messages.prefetch_related("attachments"), before, size
        )
        shown = page.items
        self.place_answers(shown)
        Attachment.count_for_answers(shown)
        notices = self.settings_changes.all()
        if page.older is not None:
            notices = notices.filter(created_at__gte=shown[0].created_at)
        if before is not None:
            after = Message.objects.filter(conversation=self, pk__gte=before)
            upto = after.order_by("pk").values_list("created_at", flat=True).first()
            if upto is not None:
                notices = notices.filter(created_at__lt=upto)
        messages: list[Message | SettingsChange] = list(shown)
        items = list(heapq.merge(messages, list(notices), key=_created_at))
        return Page(items, page.older)

    def timeline_around(
        self, message_id: int
    ) -> tuple[Page[Message | SettingsChange], bool]:
        """The page that shows the message `message_id` (a search hit) with half
        a page above it: down to the newest message when those below it fit in
        AROUND_PAGES pages, else half a page below it and True (the newest are
        not on it). The newest page if the message is not a shown one."""
        shown = self.messages.all()
        if not shown.filter(pk=message_id).exists():
            return self.timeline_page(), False
        size = page_size()
        below = shown.filter(pk__gt=message_id).order_by("pk")
        later = list(below.values_list("pk", flat=True)[: AROUND_PAGES * size + 1])
        if len(later) <= AROUND_PAGES * size:
            return self.timeline_page(size=len(later) + 1 + size // 2), False
        return self.timeline_page(later[size // 2], size=size), True

    def place_answers(self, shown: list[Message]) -> None:
        """Tell each answer among `shown` (messages on the shown branch) where
        its question stands among its turn's versions, for the "‹ 2 / 3 ›"
        control: set on the answers of turns with more than one."""
        answers = [m for m in shown if m.role == Message.Role.ASSISTANT]
        if not answers:
            return
        question_ids = {a.parent_id for a in answers if a.parent_id is not None}
        parents = dict(
            Message.objects.filter(
                pk__in=question_ids, role=Message.Role.USER
            ).values_list("pk", "parent_id")
        )
        if not parents:
            return
        above = {p for p in parents.values() if p is not None}
        same_parent = Q(parent_id__in=above)
        if None in parents.values():
            same_parent |= Q(parent__isnull=True)
        siblings = siblings_by_parent(
            Message.objects.filter(same_parent, conversation=self, role="user")
            .order_by("pk")
            .values_list("pk", "parent_id")
        )
        for answer in answers:
            question_id = answer.parent_id
            if question_id in parents:
                group = siblings.get(parents[question_id], [])
                answer.versions = place(question_id, group)

    def branch_to(self, leaf_id: int) -> list[int]:
        """The ids of the branch from the first question down to `leaf_id`,
        shown or not (a snapshot link keeps the branch shown when it was made)."""
        rows = Message.objects.filter(conversation=self, pk__lte=leaf_id)
        return branch_above(leaf_id, dict(rows.values_list("pk", "parent_id")))

    def history_for_prompt(self) -> list[dict[str, Any]]:
        """The messages to send with the newest question: the system prompt, then
        what the history policy keeps (see `chat.models.history`)."""
        return self.build_prompt().messages


def _created_at(item: Message | SettingsChange) -> datetime:
    return item.created_at


class VersionSwitch(NamedTuple):
    removed: list[int]  # the messages the chosen version replaces, oldest first
    shown: list[Message]  # the chosen question and the branch below it, answers placed
