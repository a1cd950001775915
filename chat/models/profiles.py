"""Model profiles: one model on one model server, and how to ask it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from chat.models.offering import OfferedQuerySet
from chat.models.sampling import (
    QWEN3_SAMPLING,
    SAMPLING_OPTIONS,
    ThinkingSwitch,
    ThinkTags,
    validate_keep_alive,
    validate_options,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from chat.models.messages import Message

DEFAULT_CHARS_PER_TOKEN = 4.0
# Text runs from about 1 (CJK) to 5 (English prose) characters a token. A higher
# ratio means the server counted only the tokens it evaluated, not those reused
# from its prompt cache (Ollama before 0.2.x, and again for a while with its
# llama-server engine: ollama/ollama#5371, #16428; llama.cpp's `prompt_n`).
PLAUSIBLE_CHARS_PER_TOKEN = (1.0, 6.0)
# Each answer moves the learnt ratio this far towards what it measured.
LEARNING_RATE = 0.3
# An answer that measured within this share of the learnt ratio is not written:
# it would move the ratio by a third of that, far less than the estimate's own
# error, and the write would hold the database thread (and the profile's row,
# shared by every answer of the model) for nothing.
SETTLED = 0.01


def _stepped(current: Any, observed: Any) -> Any:
    """The learnt ratio moved LEARNING_RATE of the way towards what an answer
    measured: the same arithmetic on numbers (this object's copy) and on
    expressions (the row's, in the UPDATE of `ModelProfile.learn_from`)."""
    return current + LEARNING_RATE * (observed - current)


class ServerSettings(TypedDict):
    """What the model-server seam takes of a profile: plain values, so that
    `chat.upstream` needs no model (the keyword arguments of
    `chat.upstream.ClientPool.client_for`)."""

    backend: str
    base_url: str
    thinking_switch: str
    think_tags: str


class ThinkingMode(models.TextChoices):
    DEFAULT = "default", _("Model default")
    ON = "on", _("On")
    OFF = "off", _("Off")


class HistoryPolicy(models.TextChoices):
    ALL = "all", _("All messages")
    LAST_N = "last_n", _("Last N messages")
    FIT = "fit", _("Fit the model's context")
    NONE = "none", _("None (each question alone)")


def validate_server_url(value: str) -> None:
    """An http(s) address with a host. Unlike Django's URL check, a single-label
    host name (`http://gpu-box:11434`), as model servers on a team's own network
    have, is fine."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port  # raises for a port that is not a number
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        ok = ok and (port is None or 0 < port < 65536)
    except ValueError:
        ok = False
    if not ok:
        raise ValidationError(
            _(
                "Enter the model server's address with http:// or https://, a host "
                "and, if needed, a port, e.g. http://gpu-box:11434."
            ),
            code="invalid",
        )


class ModelProfileQuerySet(OfferedQuerySet["ModelProfile"]):
    """Who may use a profile: `allowed_to`, `usable_by` (the rule tool servers
    share, `chat.models.offering`)."""

    def default(self) -> ModelProfile | None:
        """The model when the site default is blank: the oldest enabled profile.
        Adding a profile (the demo's first real model, or one whose server is not
        up yet) never changes the model of the conversations that follow the
        site default: choosing it there does (see SiteDefaults)."""
        return self.filter(enabled=True).order_by("pk").first()


def default_first_token_timeout() -> int:
    return int(settings.UPSTREAM_FIRST_TOKEN_TIMEOUT)


class ModelProfile(models.Model):
    class Backend(models.TextChoices):
        OLLAMA = "ollama", "Ollama"  # i18n: not text (a name)
        OPENAI = "openai", _("OpenAI-compatible")

    tag = models.CharField(
        max_length=200,
        help_text=_("Model name on the server, e.g. qwen3:14b"),
        verbose_name=_("tag"),
    )
    display_name = models.CharField(
        max_length=200, blank=True, verbose_name=_("display name")
    )
    backend = models.CharField(
        max_length=10,
        choices=Backend,
        default=Backend.OLLAMA,
        verbose_name=_("backend"),
    )
    base_url = models.CharField(
        max_length=500,
        validators=[validate_server_url],
        help_text=_("e.g. http://gpu-box:11434"),
        verbose_name=_("base url"),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    teams = models.ManyToManyField(
        "chat.Team",
        blank=True,
        related_name="profiles",
        help_text=_("Only members of these teams may use the model. None: everyone."),
        verbose_name=_("teams"),
    )
    is_demo = models.BooleanField(
        default=False,
        help_text=_("Served by the bundled simulator, not a real model."),
        verbose_name=_("is demo"),
    )
    supports_thinking = models.BooleanField(
        default=False, verbose_name=_("supports thinking")
    )
    # Ollama: from `/api/show` capabilities ("vision"), set by discovery; an
    # OpenAI-compatible server does not say, so an admin sets it.
    supports_vision = models.BooleanField(
        default=False,
        help_text=_(
            "The model accepts images. Read from Ollama's capabilities; set it "
            "by hand for an OpenAI-compatible server."
        ),
        verbose_name=_("supports vision"),
    )
    # Like vision: Ollama's `/api/show` capabilities ("tools"), by discovery.
    supports_tools = models.BooleanField(
        default=False,
        help_text=_(
            "The model can call tools. Read from Ollama's capabilities; set it "
            "by hand for an OpenAI-compatible server (with its tool parser on)."
        ),
        verbose_name=_("supports tools"),
    )
    think_with_tools = models.BooleanField(
        default=False,
        help_text=_(
            "Keep thinking on in answers that offer tools. Off: they are asked "
            "without thinking. Qwen3 with both on is a known source of lost "
            "tool calls: on Ollama, empty replies (ollama/ollama#10976) and a "
            "thinking block that never closed (open-webui/open-webui#13322)."
        ),
        verbose_name=_("think with tools"),
    )
    image_max_side = models.PositiveIntegerField(
        default=1568,
        help_text=_(
            "Images are downscaled so that their longer side is at most this "
            "many pixels before they are sent."
        ),
        verbose_name=_("image max side"),
    )
    context_length = models.PositiveIntegerField(
        default=4096, verbose_name=_("context length")
    )
    default_thinking = models.CharField(
        max_length=10,
        choices=[(ThinkingMode.ON, _("On")), (ThinkingMode.OFF, _("Off"))],
        default=ThinkingMode.ON,
        verbose_name=_("default thinking"),
    )
    parallel_slots = models.PositiveIntegerField(
        default=0,
        help_text=_(
            "Answers the server runs at once (e.g. OLLAMA_NUM_PARALLEL); "
            "more wait in a queue. 0 means no limit."
        ),
        verbose_name=_("parallel slots"),
    )
    default_history_policy = models.CharField(
        max_length=10,
        choices=HistoryPolicy,
        blank=True,
        help_text=_("Blank: the site default."),
        verbose_name=_("default history policy"),
    )
    default_history_last_n = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=_("default history last n")
    )
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Sampling options sent with every request."),
        verbose_name=_("options"),
    )
    # Learnt from the server's prompt token counts (see `learn_from`).
    chars_per_token = models.FloatField(
        null=True,
        blank=True,
        help_text=_(
            "Characters per token, measured from the server's prompt token "
            "counts; blank until the first answer (then about 4 is assumed)."
        ),
        verbose_name=_("chars per token"),
    )
    keep_alive = models.CharField(
        max_length=20,
        blank=True,
        help_text=_(
            "Ollama: how long the model stays loaded after an answer, "
            'e.g. "30m", "-1" (always). Blank: the server\'s default.'
        ),
        verbose_name=_("keep alive"),
    )
    thinking_switch = models.CharField(
        max_length=10,
        choices=ThinkingSwitch,
        default=ThinkingSwitch.TEMPLATE,
        help_text=_("OpenAI-compatible servers: how thinking is turned on and off."),
        verbose_name=_("thinking switch"),
    )
    think_tags = models.CharField(
        max_length=10,
        choices=ThinkTags,
        default=ThinkTags.PARSE,
        help_text=_(
            "OpenAI-compatible servers: reasoning inline in the answer. "
            "Qwen3-Thinking-2507 and DeepSeek-R1 only close the tag."
        ),
        verbose_name=_("think tags"),
    )
    # Read from the model server by discovery (see chat.ops.discovery).
    family = models.CharField(max_length=100, blank=True, verbose_name=_("family"))
    parameter_size = models.CharField(
        max_length=40, blank=True, verbose_name=_("parameter size")
    )
    quantization = models.CharField(
        max_length=40, blank=True, verbose_name=_("quantization")
    )
    first_token_timeout = models.PositiveIntegerField(
        default=default_first_token_timeout,
        help_text=_(
            "Seconds to wait for the first token before giving up; a model "
            "still loading gets its load time on top."
        ),
        verbose_name=_("first token timeout"),
    )

    objects = ModelProfileQuerySet.as_manager()

    class Meta:
        verbose_name = _("model profile")
        verbose_name_plural = _("model profiles")
        ordering = ["display_name", "tag"]
        constraints = [
            models.UniqueConstraint(
                fields=["base_url", "tag"], name="unique_profile_per_server"
            )
        ]

    # A user known to be allowed, read with the row (not a column: a turn reads
    # it with its conversation, `turn_rows.prepare_turn_of`).
    allowed_owner: int | None = None

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        name = self.display_name or self.tag
        if self.is_demo:
            return _("%(name)s (demo model)") % {"name": name}
        return name

    def allowed_for(self, user: AbstractBaseUser | AnonymousUser) -> bool:
        """Whether `user` may use the model (enabled or not: that is `enabled`)."""
        if user.pk is not None and user.pk == self.allowed_owner:
            return True
        return ModelProfile.objects.allowed_to(user.pk or 0).filter(pk=self.pk).exists()

    def think_flag(self, mode: str) -> bool | None:
        """The `think` value to send: None (omit it) for a model without thinking."""
        if not self.supports_thinking:
            return None
        if mode == ThinkingMode.DEFAULT:
            mode = self.default_thinking
        return mode == ThinkingMode.ON

    def think_with(self, think: bool | None, tools: bool) -> bool | None:
        """The `think` of an answer (`think_flag`'s) when it offers `tools`:
        off unless the profile keeps thinking with tools (`think_with_tools`)."""
        if tools and think and not self.think_with_tools:
            return False
        return think

    def tools_reason(self) -> str:
        """Why the model is offered no tools ("" when it can call them)."""
        if self.supports_tools:
            return ""
        if self.backend == ModelProfile.Backend.OLLAMA:
            return gettext("its server does not list tools among its capabilities.")
        return gettext("an admin has not marked it as able to call tools.")

    def vision_reason(self) -> str:
        """Why the model takes no images ("" when it does)."""
        if self.supports_vision:
            return ""
        if self.backend == ModelProfile.Backend.OLLAMA:
            return gettext("its server does not list vision among its capabilities.")
        return gettext("an admin has not marked it as a vision model.")

    # The history builder's token estimates.

    @property
    def estimated_chars_per_token(self) -> float:
        return self.chars_per_token or DEFAULT_CHARS_PER_TOKEN

    def answer_reserve_tokens(self) -> int:
        """Context left free for the answer: `num_predict` when the options set
        it, else a quarter of the context (at most 4096 tokens)."""
        limit = self.options.get("num_predict")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            return min(limit, self.context_length // 2)
        return min(self.context_length // 4, 4096)

    def teaching_ratio(self, message: Message) -> float | None:
        """The characters per token an answer's prompt figures (our characters
        sent, the server's token count) measured, if they teach the profile
        anything: None when a figure is missing, when the ratio is outside a
        plausible range (see `PLAUSIBLE_CHARS_PER_TOKEN`), or when it agrees
        with the ratio already learnt (`SETTLED`). Asks nothing of the
        database: the caller skips the trip to its thread when it is None."""
        chars, tokens = message.prompt_chars, message.prompt_tokens
        if not chars or not tokens:
            return None
        observed = chars / tokens
        if not PLAUSIBLE_CHARS_PER_TOKEN[0] <= observed <= PLAUSIBLE_CHARS_PER_TOKEN[1]:
            return None
        current = self.chars_per_token
        if current is not None and abs(observed - current) <= SETTLED * current:
            return None
        return observed

    def learn_from(self, message: Message) -> bool:
        """Fold what an answer measured (`teaching_ratio`) into
        `chars_per_token`; False if it teaches nothing.

        One UPDATE computes the new ratio from the row's own: two answers
        finishing at once (in two processes) both count, and the database
        thread is free again after one round trip. It runs after the answer's
        `done`, often just as the next question comes in on the same thread
        (docs/latency.md, rule 8). This object gets the same step from the
        value it holds.
        """
        observed = self.teaching_ratio(message)
        if observed is None:
            return False
        ModelProfile.objects.filter(pk=self.pk).update(
            chars_per_token=Coalesce(
                _stepped(F("chars_per_token"), Value(observed)), Value(observed)
            )
        )
        current = self.chars_per_token
        self.chars_per_token = (
            observed if current is None else _stepped(current, observed)
        )
        return True

    def clean(self) -> None:
        errors = {}
        for name, validate in (
            ("options", validate_options),
            ("keep_alive", validate_keep_alive),
        ):
            try:
                validate(getattr(self, name))
            except ValidationError as error:
                errors[name] = error.error_list
        if errors:
            raise ValidationError(errors)

    def request_options(self, think: bool | None = None) -> dict[str, Any]:
        """The options of one request, named as Ollama names them (the OpenAI
        client renames them): Qwen3's recommended sampling for the `think` mode
        when the profile sets none, then the profile's options; `num_ctx`
        always, so Ollama never truncates silently."""
        options: dict[str, Any] = {}
        if self.is_qwen3 and not any(name in self.options for name in SAMPLING_OPTIONS):
            thinking = think if think is not None else "instruct" not in self.tag
            options.update(QWEN3_SAMPLING[bool(thinking)])
        options.update(self.options)
        options["num_ctx"] = self.context_length
        return options

    def server_settings(self) -> ServerSettings:
        """Where the model is served, in which wire format, and how thinking is
        switched there (for `chat.upstream.ClientPool.client_for`)."""
        return ServerSettings(
            backend=self.backend,
            base_url=self.base_url,
            thinking_switch=self.thinking_switch,
            think_tags=self.think_tags,
        )

    @property
    def is_qwen3(self) -> bool:
        return "qwen3" in self.tag.lower().replace("-", "")

    @property
    def keep_alive_value(self) -> str | int | None:
        """`keep_alive` as Ollama takes it: seconds as a number, else a duration."""
        value = self.keep_alive.strip()
        if not value:
            return None
        try:
            return int(value)
        except ValueError:
            return value
