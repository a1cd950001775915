"""Site-wide defaults, one row, edited in the admin."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.compiled_queries import Prepared
from chat.models.profiles import HistoryPolicy, ModelProfile, ThinkingMode
from chat.models.quota_periods import QuotaPeriod


class SiteDefaults(models.Model):
    """What a new conversation gets when neither it nor its model profile says."""

    default_profile = models.ForeignKey(
        ModelProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        help_text=_(
            "Blank: the oldest enabled model profile. A new profile becomes "
            "the default only when chosen here."
        ),
        verbose_name=_("default profile"),
    )
    default_thinking = models.CharField(
        max_length=10,
        choices=ThinkingMode,
        default=ThinkingMode.DEFAULT,
        verbose_name=_("default thinking"),
    )
    default_history_policy = models.CharField(
        max_length=10,
        choices=HistoryPolicy,
        default=HistoryPolicy.ALL,
        verbose_name=_("default history policy"),
    )
    default_history_last_n = models.PositiveIntegerField(
        default=20, verbose_name=_("default history last n")
    )
    generations_per_user = models.PositiveIntegerField(
        default=3,
        help_text=_(
            "Answers one user may have running at once; more wait in a "
            "queue. 0 means no limit."
        ),
        verbose_name=_("generations per user"),
    )
    quota_period = models.CharField(
        max_length=5,
        choices=QuotaPeriod,
        default=QuotaPeriod.DAY,
        verbose_name=_("quota period"),
    )
    user_output_tokens = models.PositiveIntegerField(
        default=0,
        help_text=_(
            "Output tokens each user may use per period, whatever their "
            "teams. 0: no limit."
        ),
        verbose_name=_("user output tokens"),
    )
    user_answers = models.PositiveIntegerField(
        default=0,
        help_text=_("Answers each user may get per period. 0: no limit."),
        verbose_name=_("user answers"),
    )
    share_requires_sign_in = models.BooleanField(
        default=False,
        help_text=_("Shared links open only for signed-in users."),
        verbose_name=_("share requires sign in"),
    )
    # The API for scripts and tools (`chat.api`, `chat.models.api_keys`).
    api_enabled = models.BooleanField(
        _("API access"),
        default=True,
        help_text=_(
            "People may create personal API keys and use the OpenAI- and "
            "Ollama-compatible API. Off: every key is refused at once."
        ),
    )
    api_teams = models.ManyToManyField(
        "chat.Team",
        blank=True,
        related_name="+",
        verbose_name=_("API for teams"),
        help_text=_("Only members of these teams may use the API. None: everyone."),
    )

    class Meta:
        verbose_name = verbose_name_plural = _("site defaults")

    def __str__(self) -> str:
        return str(_("Site defaults"))

    def save(self, *args: object, **kwargs: object) -> None:
        self.pk = 1  # one row
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def model_profile(self) -> ModelProfile | None:
        """The model for a conversation that has none (or a disabled one)."""
        profile = self.default_profile
        if profile is not None and profile.enabled:
            return profile
        return ModelProfile.objects.default()

    @classmethod
    def load(cls) -> SiteDefaults:
        """The one row (made on first use). Read as retries and the API's
        answers are asked for: compiled once (`chat.models.compiled_queries`)."""
        try:
            return SITE_ROW.get(1)
        except SiteDefaults.DoesNotExist:
            obj, _created = cls.objects.get_or_create(pk=1)
            return obj


SITE_ROW: Prepared[SiteDefaults] = Prepared(
    lambda pk: SiteDefaults.objects.filter(pk=pk), at_start=True
)
# The row, locked until the transaction ends: read first, with the tickets, by
# a transaction that admits an answer (`chat.models.admission.Line`).
LOCKED_SITE_ROW: Prepared[SiteDefaults] = Prepared(
    lambda pk: SiteDefaults.objects.select_for_update().filter(pk=pk), at_start=True
)
