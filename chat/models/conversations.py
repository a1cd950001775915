"""Conversations and the turn that starts an answer."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from django.conf import settings
from django.db import models, transaction
from django.db.models import Exists, OuterRef, Q, prefetch_related_objects
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chat.models.admission import Line
from chat.models.attachments import Attachment, files_by_message
from chat.models.compiled_queries import Prepared
from chat.models.effective import Effective, EffectiveSettings, History, Level
from chat.models.history import Prompt, build_prompt, estimate_tokens, message_chars
from chat.models.messages import Message, Sendable
from chat.models.notices import SettingsChange
from chat.models.paging import Page, newest_before, page_size
from chat.models.profiles import HistoryPolicy, ModelProfile, ThinkingMode
from chat.models.site import SiteDefaults
from chat.models.versions import (
    branch_above,
    branch_below,
    place,
    siblings_by_parent,
)

if TYPE_CHECKING:
    from chat.models.api_keys import ApiKey
    from chat.models.teams import Team


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
        from chat.models import quotas  # see begin_turn

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
    # begin_turn all ask these.

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

    def request_options(self, profile: ModelProfile) -> dict[str, Any]:
        """The model's options with this conversation's own on top."""
        options = profile.request_options(self.effective_thinking(profile).value)
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

    @transaction.atomic
    def begin_turn(
        self,
        content: str,
        client_id: str = "",
        *,
        attachments: Sequence[str] = (),
        truncate_documents: bool = False,
        files_of: Message | None = None,
        placed: Placed | None = None,
    ) -> Turn:
        """Store the user's message and a streaming placeholder for the answer;
        return both, the model to ask and the history to send it. The uploads
        `attachments` (ids) go with the question, or the files of the question
        `files_of` (a retry's).

        Refused (nothing stored) with NoModel, ModelForbidden, Busy,
        AttachmentRefused or, before the model is asked, `quotas.QuotaReached`."""
        profile = self.model_for_next_answer()
        self._lock_when_idle()
        return self._store_turn(
            profile,
            content,
            client_id,
            attachments=attachments,
            truncate_documents=truncate_documents,
            files_of=files_of,
            placed=placed,
        )

    @classmethod
    @transaction.atomic
    def begin_turn_of(
        cls,
        pk: int,
        content: str,
        client_id: str = "",
        *,
        attachments: Sequence[str] = (),
        truncate_documents: bool = False,
        placed: Placed | None = None,
    ) -> Turn:
        """`begin_turn` for the conversation `pk`, in as few trips to the
        database as it takes (docs/latency.md, rule 8): one trip that locks the
        site's row (the admission's; `chat.models.admission`) and reads the
        tickets, then reads the conversation, its model and its owner, locking
        the conversation's and the owner's rows and saying whether an answer is
        running, and the messages the question follows. `placed(turn, line)`
        runs before the question's row (unless it has files) and the answer's
        are written, in the same transaction: the answer's place in line
        (`chat.sockets.turns`), decided while they have no ids yet; what it
        returns runs once they are written and the title is set (the turn may
        be shown then, and the answer's ticket is written), before the
        conversation's own row is updated."""
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
        return conversation._store_turn(
            profile,
            content,
            client_id,
            attachments=attachments,
            truncate_documents=truncate_documents,
            site=site,
            locked=True,
            placed=placed,
            sent_files=conversation.sent_files,  # type: ignore[attr-defined]
            earlier_rows=earlier,
            line=line,
            # On no team (read with the owner's row, locked): no team's row to
            # lock or quotas to count.
            teams=None if conversation.on_teams else [],  # type: ignore[attr-defined]
        )

    def _store_turn(
        self,
        profile: ModelProfile,
        content: str,
        client_id: str,
        *,
        attachments: Sequence[str] = (),
        truncate_documents: bool = False,
        files_of: Message | None = None,
        site: SiteDefaults | None = None,
        locked: bool = False,
        placed: Placed | None = None,
        sent_files: bool = True,
        teams: list[Team] | None = None,
        earlier_rows: list[Any] | None = None,
        line: Line | None = None,
    ) -> Turn:
        """The rows of a turn (see `begin_turn`; `locked`: the owner's row is
        locked already; `sent_files`: False when no message of the conversation
        has files, which the caller read already; `teams`: the owner's teams when
        the caller knows them, locked; `earlier_rows`: `EARLIER`'s, read already
        under the conversation's lock; `line`: what the admission decides on,
        read already, given to `placed`)."""
        # Imported here: quotas counts teams' answers, and teams import this module.
        from chat.models import quotas

        if teams is None:
            teams = quotas.lock(self.owner, user_locked=locked)
        left = quotas.check(self.owner, site=site, teams=teams)
        if earlier_rows is None:
            earlier_rows = EARLIER.rows(self.pk)
        earlier: list[Sendable] = [SentRow(*row) for row in earlier_rows]
        # The question follows the shown branch's last message (read just now).
        question = Message(
            conversation=self,
            role=Message.Role.USER,
            content=content,
            client_id=client_id,
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
                    room_tokens=self._room_for_documents(profile, content),
                    truncate=truncate_documents,
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
        prompt = self.build_prompt(
            profile,
            site=site,
            messages=[*earlier, question],
            # No files sent before, none now: no need to look for them.
            files=None if sent_files or question.pk is not None else {},
        )
        answer = Message(
            conversation=self,
            role=Message.Role.ASSISTANT,
            status=Message.Status.STREAMING,
            model_tag=profile.tag,
            thinking_enabled=self.effective_thinking(profile).value,
            **prompt.figures(),
        )
        answer.files_with_question = len(question.files)
        options = self.request_options(profile)
        # Before `placed`: the model server may be asked from there.
        quotas.reserve(answer, profile, options, left)
        titled = not self.title
        turn = Turn(question, answer, profile, prompt.messages, titled, options)
        # The answer's place in line is decided before its rows are written
        # (docs/latency.md, rule 8): the model server may be asked meanwhile.
        then = placed(turn, line) if placed is not None else None
        if question.pk is None:
            question.save(root=not earlier)
        answer.parent_id = question.pk
        answer.save()
        if titled:  # set before `then`, which may show the turn (its title too)
            self.title = self.title_from(content)
        if then is not None:
            then()
        if self.model_profile_id is not None:
            # Its model was disabled: keep the one that answered. (No model at
            # all means "the site default", which it keeps following.)
            self.model_profile = profile
        self.save(update_fields=["title", "model_profile", "updated_at"])
        return turn

    def _room_for_documents(self, profile: ModelProfile, content: str) -> int:
        """Tokens of the model's context left for a question's attachments:
        less the answer's reserve, the system prompt and the question's text."""
        chars = message_chars(content)
        if self.system_prompt:
            chars += message_chars(self.system_prompt)
        used = estimate_tokens(chars, profile.estimated_chars_per_token)
        return profile.context_length - profile.answer_reserve_tokens() - used

    @classmethod
    @transaction.atomic
    def begin_api_turn(
        cls,
        api_key: ApiKey,
        profile: ModelProfile,
        messages: list[dict[str, str]],
        *,
        think: bool | None,
        store: bool,
        options: dict[str, Any],
    ) -> Turn:
        """An answer asked over the API (`chat.api`), in a conversation of its
        own: listed in the owner's list only when `store`, else kept for its
        figures (throughput, quotas) with the request's last question. The
        history sent is the request's own `messages`, as given.

        Refused (nothing stored) with ModelForbidden or, before the model is
        asked, `quotas.QuotaReached`: the same checks as `begin_turn`."""
        from chat.models import quotas  # see begin_turn

        owner = api_key.user
        if not (
            profile.enabled and profile.allowed_for(owner) and api_key.allows(profile)
        ):
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
        conversation = cls.objects.create(
            owner=owner,
            model_profile=profile,
            thinking=ThinkingMode.DEFAULT
            if think is None
            else (ThinkingMode.ON if think else ThinkingMode.OFF),
            system_prompt="\n\n".join(system),
            listed=store,
            title=cls.title_from(first),
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
        return Turn(question, answer, profile, messages, False, options)

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

    @transaction.atomic
    def begin_regenerate(
        self, answer_id: int | None = None, placed: Placed | None = None
    ) -> Retry:
        """Ask a shown answer's question again (the last one's by default): the
        question, its answer and everything after them leave the shown branch
        (kept: `replaced`), and a new version of the turn begins beside them,
        so what was replaced is not in the history sent to the model."""
        self._check_before_retry()
        if answer_id is None:
            question = self.messages.filter(role=Message.Role.USER).last()
        else:
            answer = self.messages.filter(
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
        return self._retry(question, question.content, placed=placed)

    @transaction.atomic
    def begin_edit(
        self,
        message_id: int,
        content: str,
        *,
        attachments: Sequence[str] | None = None,
        truncate_documents: bool = False,
        placed: Placed | None = None,
    ) -> Retry:
        """Ask a shown question again with new text: a new version of its turn,
        the old one and what followed it kept on their own branch. It keeps
        its files unless `attachments` (new uploads' ids) replace them.
        `placed`: as `begin_turn_of`'s, for regenerates and edits alike."""
        self._check_before_retry()
        question = self.messages.filter(pk=message_id, role=Message.Role.USER).first()
        if question is None:
            raise Conversation.NotAQuestion(
                _("Only your own questions in this conversation can be edited.")
            )
        if attachments is None:
            return self._retry(question, content, placed=placed)
        return self._retry(
            question,
            content,
            attachments=attachments,
            truncate_documents=truncate_documents,
            placed=placed,
        )

    def _lock_when_idle(self) -> None:
        # The row lock (PostgreSQL) makes two sends, retries or version switches
        # from two processes take turns.
        Conversation.objects.select_for_update().filter(pk=self.pk).first()
        if self.messages.filter(status=Message.Status.STREAMING).exists():
            raise Conversation.Busy(_("Wait for the current answer, or stop it."))

    def _check_before_retry(self) -> None:
        # The model first, so a missing one changes nothing; then the lock.
        self.model_for_next_answer()
        self._lock_when_idle()

    def _retry(
        self,
        question: Message,
        content: str,
        *,
        attachments: Sequence[str] | None = None,
        truncate_documents: bool = False,
        placed: Placed | None = None,
    ) -> Retry:
        """The question and everything after it on the shown branch make way
        for a new version of its turn: they are kept, marked replaced, so if
        the new answer fails nothing is lost, and they stay reachable with the
        turn's version control (`show_version`). The new question follows the
        old one's parent: after the others leave, it is the branch's last."""
        hidden = self.messages.filter(pk__gte=question.pk)
        removed = sorted(hidden.values_list("pk", flat=True))
        hidden.update(replaced=True)
        if attachments is None:
            # The new version asks with the same files (rows of its own that
            # share the stored files).
            turn = self.begin_turn(
                content, question.client_id, files_of=question, placed=placed
            )
        else:
            turn = self.begin_turn(
                content,
                question.client_id,
                attachments=attachments,
                truncate_documents=truncate_documents,
                placed=placed,
            )
        self.place_answers([turn.answer])
        return Retry(turn, removed)

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

    @transaction.atomic
    def show_version(self, question_id: int) -> VersionSwitch:
        """Show another version of a shown turn: the shown version and
        everything below it leave the shown branch (kept), and the chosen
        question comes back with the branch last viewed below it (the newest
        one if it was never left)."""
        self._lock_when_idle()
        chosen = Message.objects.filter(
            conversation=self, pk=question_id, role=Message.Role.USER
        ).first()
        shown = None
        if chosen is not None:
            shown = self.messages.filter(
                role=Message.Role.USER, parent_id=chosen.parent_id
            ).first()
        if chosen is None or shown is None:
            raise Conversation.NotAVersion(
                _("That is not a version of a question shown in this conversation.")
            )
        removed: list[int] = []
        if shown.pk != chosen.pk:
            hidden = self.messages.filter(pk__gte=shown.pk)
            removed = sorted(hidden.values_list("pk", flat=True))
            hidden.update(replaced=True)
            below = Message.objects.filter(conversation=self, pk__gt=chosen.pk)
            path = branch_below(
                chosen.pk, below.values_list("pk", "parent_id", "shown_at")
            )
            Message.objects.filter(pk__in=path).update(
                replaced=False, shown_at=timezone.now()
            )
        chosen_branch = self.messages.filter(pk__gte=chosen.pk).order_by("pk")
        messages = list(chosen_branch.prefetch_related("attachments"))
        self.place_answers(messages)
        Attachment.count_for_answers(messages)
        return VersionSwitch(removed, messages)

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


def _turn_read(pk: int) -> models.QuerySet[Conversation]:
    """The conversation a question is sent to, with its model and owner, their
    rows locked, and what `begin_turn_of` needs to know in the same trip."""
    streaming = Message.shown.filter(
        conversation=OuterRef("pk"), status=Message.Status.STREAMING
    )
    sent_files = Attachment.objects.filter(
        conversation=OuterRef("pk"), message__isnull=False
    )
    # Imported here: teams import this module.
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


# The answer's place in line, decided before its rows are written
# (`Conversation.begin_turn_of`): given the turn and the line its first trip read
# (`Line.read`; None if it did not), returns what runs once they are.
Placed = Callable[["Turn", Line | None], Callable[[], None]]


class Turn(NamedTuple):
    question: Message
    answer: Message
    profile: ModelProfile
    history: list[dict[str, Any]]
    titled: bool  # the conversation took its title from this question
    options: dict[str, Any] | None = None  # the request's options (num_ctx, ...)


class VersionSwitch(NamedTuple):
    removed: list[int]  # the messages the chosen version replaces, oldest first
    shown: list[Message]  # the chosen question and the branch below it, answers placed


class Retry(NamedTuple):
    turn: Turn
    removed: list[int]  # the messages the new turn replaces, oldest first
