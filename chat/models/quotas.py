"""Quotas: answers and output tokens per UTC day or month, for each user (the
site's limit, each of their teams' member limit) and each team as a whole.

Usage is counted from the stored answers (the rows every process writes), so
every process sees the same figures; an answer counts as many answers as it
made model calls (a turn with tools makes one per round), from when it was asked,
whatever its end, except one refused or failed before its first word. Its
tokens are the server's own count when it sent one, else the estimate the
throughput page uses (characters of answer and thinking over four).

Checked at admission, before the model is asked (`chat.models.turn_rows`),
and again before each further model call of a turn with tools (`recheck`),
with the user's row (and their teams') locked, so turns begin one at a time
(`lock`). A running answer's own tokens are not known yet: under a token limit
it reserves what it may use as it is admitted (`reserve`: its `num_predict`,
else what its context leaves, at most what the limits leave), the model server
is asked for no more, and until it ends the quotas count the reservation (or
what it wrote, if more). Its end settles it: the real count replaces the
reservation, whatever the end (done, stopped, failed, or interrupted by the
orphan sweep when its process died), so answers asked at once cannot overrun a
limit, and a dead process's reservations do not outlive its answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Case, Exists, F, FloatField, OuterRef, Q, Sum, Value, When
from django.db.models.functions import Cast, Coalesce, Greatest, Least, Length
from django.utils import timezone
from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from chat.models.messages import Message
from chat.models.quota_periods import QuotaPeriod
from chat.models.site import SiteDefaults
from chat.models.teams import Membership, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from chat.models.profiles import ModelProfile

CHARS_PER_TOKEN = 4.0
# Shown near the composer from this share of a limit on.
WARN_FRACTION = 0.8
ANSWERS, TOKENS = "answers", "output tokens"


class QuotaReached(Exception):
    """A turn refused: one of the user's limits is used up (until `resets_at`)."""

    def __init__(self, message: str, resets_at: datetime | None = None) -> None:
        super().__init__(message)
        self.resets_at = resets_at


@dataclass(frozen=True)
class Limit:
    """One limit that applies to a user, and how much of it is used."""

    scope: str  # "you" or "team <name>"
    kind: str  # ANSWERS or TOKENS
    used: int
    allowed: int
    resets_at: datetime

    @property
    def fraction(self) -> float:
        return self.used / self.allowed if self.allowed else 0.0

    @property
    def reached(self) -> bool:
        return self.used >= self.allowed

    @property
    def label(self) -> str:
        """Whose limit, of what ("Yours, answers"), in the active language."""
        kind = _("answers") if self.kind == ANSWERS else _("output tokens")
        if self.scope == "you":
            return _("Yours, %(kind)s") % {"kind": kind}
        return _("Team %(team)s, %(kind)s") % {"team": self._team, "kind": kind}

    @property
    def _team(self) -> str:
        return self.scope.removeprefix("team ")

    @property
    def _figures(self) -> dict[str, str]:
        when = self.resets_at.strftime("%H:%M UTC")
        if self.resets_at.day == 1 and self.resets_at.hour == 0:
            day = date_format(self.resets_at, pgettext("a quota's reset day", "d M"))
            when = _("%(time)s on %(day)s") % {"time": when, "day": day}
        return {
            "team": self._team,
            "used": number_format(self.used, force_grouping=True),
            "allowed": number_format(self.allowed, force_grouping=True),
            "kind": _("answers") if self.kind == ANSWERS else _("output tokens"),
            "percent": f"{self.fraction:.0%}",
            "when": when,
        }

    def message(self) -> str:
        if self.scope == "you":
            text = _(
                "Your quota is reached (%(used)s of %(allowed)s %(kind)s); "
                "it resets at %(when)s."
            )
        else:
            text = _(
                "Your team %(team)s's quota is reached (%(used)s of %(allowed)s "
                "%(kind)s); it resets at %(when)s."
            )
        return text % self._figures

    def warning(self) -> str:
        """The quiet line near the composer (`warnings`)."""
        if self.reached:
            return self.message()
        if self.scope == "you":
            text = _(
                "Your quota is %(percent)s used (%(used)s of %(allowed)s "
                "%(kind)s); it resets at %(when)s."
            )
        else:
            text = _(
                "Your team %(team)s's quota is %(percent)s used (%(used)s of "
                "%(allowed)s %(kind)s); it resets at %(when)s."
            )
        return text % self._figures


def answer_tokens() -> Any:
    """An answer's output tokens: the server's count, else the estimate; while
    it runs, its reservation (or the estimate of what it wrote, if more).

    A finished answer without the server's count (stopped, cut, interrupted)
    counts its estimate, but never more than its reservation: the server was
    told to write no more (`num_predict`), and characters over
    CHARS_PER_TOKEN overestimate words of more than four letters (an answer
    interrupted under load counted 410 of a 300-token reservation:
    tests/live/engine/turn/test_quota_reservations.py)."""
    estimate = Cast(Length("content") + Length("thinking"), FloatField()) / Value(
        CHARS_PER_TOKEN
    )
    reserved = Cast(F("reserved_tokens"), FloatField())
    return Case(
        When(
            status=Message.Status.STREAMING,
            reserved_tokens__gt=0,
            then=Greatest(reserved, estimate),
        ),
        When(output_tokens__gt=0, then=Cast(F("output_tokens"), FloatField())),
        When(reserved_tokens__gt=0, then=Least(reserved, estimate)),
        default=estimate,
        output_field=FloatField(),
    )


def counted_answers(start: datetime, end: datetime) -> Any:
    """The answers a quota counts, asked in [start, end)."""
    refused = Q(status=Message.Status.ERROR, content="", thinking="")
    return (
        Message.objects.answers()
        .filter(created_at__gte=start, created_at__lt=end)
        .exclude(refused)
    )


def members_answers(team: Team, start: datetime, end: datetime) -> Any:
    """The answers a team counts: its present members', each from when they
    joined it (`Membership.joined_at`; blank: all)."""
    joined = Membership.objects.filter(
        Q(joined_at=None) | Q(joined_at__lte=OuterRef("created_at")),
        team=team,
        user_id=OuterRef("conversation__owner_id"),
    )
    return counted_answers(start, end).filter(Exists(joined))


def _used(answers: Any) -> tuple[int, int]:
    # An answer with tools counts each of its model calls (`model_calls`).
    totals = answers.aggregate(
        answers=Coalesce(Sum("model_calls"), 0),
        tokens=Coalesce(Sum(answer_tokens()), 0.0),
    )
    return int(totals["answers"]), int(round(totals["tokens"]))


def limits_for(
    user: AbstractBaseUser,
    now: datetime | None = None,
    *,
    site: SiteDefaults | None = None,
    teams: Iterable[Team] | None = None,
    without: int | None = None,
) -> list[Limit]:
    """Every limit that applies to `user` (none set: an empty list). `site` and
    `teams` (the user's): rows the caller read already (`chat.models.turn_rows`
    reads each once per turn); `without`: an answer left out of the counts
    (`recheck`'s own)."""
    now = now or timezone.now()
    limits: list[Limit] = []

    def add(scope: str, period: str, answers_of: Any, caps: dict[str, int]) -> None:
        if not any(caps.values()):
            return
        start, end = QuotaPeriod(period).window(now)
        counted = answers_of(start, end)
        if without is not None:
            counted = counted.exclude(pk=without)
        answers, tokens = _used(counted)
        for kind, used in ((ANSWERS, answers), (TOKENS, tokens)):
            if caps[kind]:
                limits.append(Limit(scope, kind, used, caps[kind], end))

    def own(start: datetime, end: datetime) -> Any:
        return counted_answers(start, end).filter(conversation__owner_id=user.pk)

    site = site or SiteDefaults.load()
    add(
        "you",
        site.quota_period,
        own,
        {ANSWERS: site.user_answers, TOKENS: site.user_output_tokens},
    )
    if teams is None:
        teams = Team.objects.of(user)  # type: ignore[arg-type]
    for team in teams:
        add(
            "you",
            team.quota_period,
            own,
            {ANSWERS: team.member_answers, TOKENS: team.member_output_tokens},
        )

        def team_answers(start: datetime, end: datetime, team: Team = team) -> Any:
            return members_answers(team, start, end)

        add(
            f"team {team.name}",
            team.quota_period,
            team_answers,
            {ANSWERS: team.team_answers, TOKENS: team.team_output_tokens},
        )
    return limits


def lock(user: AbstractBaseUser, *, user_locked: bool = False) -> list[Team]:
    """Make the turns counted against `user`'s limits begin one at a time, until
    the transaction ends: a check and the answer it lets in are then one step,
    so two tabs (or processes) cannot both take the last answer. The user's row
    first, then their teams' rows in order, so two turns never deadlock
    (callers hold only the site's row and their conversation's: the lock order
    of `chat.models.admission`).
    `user_locked`: the caller locked the user's row already (with its
    conversation's). Returns the teams, locked (for `check`)."""
    if not user_locked:
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    teams = Team.objects.of(user)  # type: ignore[arg-type]
    return list(teams.select_for_update(of=("self",)).order_by("pk"))


def check(
    user: AbstractBaseUser,
    now: datetime | None = None,
    *,
    site: SiteDefaults | None = None,
    teams: Iterable[Team] | None = None,
) -> int | None:
    """Raise QuotaReached, naming the first limit used up and when it resets
    (`site`, `teams`: as `limits_for`); else the output tokens the user's
    token limits leave, the least of them (None: no token limit), for
    `reserve`."""
    left: int | None = None
    for limit in limits_for(user, now, site=site, teams=teams):
        if limit.reached:
            raise QuotaReached(limit.message(), limit.resets_at)
        if limit.kind == TOKENS:
            free = limit.allowed - limit.used
            left = free if left is None else min(left, free)
    return left


def reserve(
    answer: Message, profile: ModelProfile, options: dict[str, Any], left: int | None
) -> None:
    """Reserve for the new `answer`, in the transaction that `check`ed and
    stores it, what it may use: its `num_predict` when `options` (the request's)
    set one, else what the model's context leaves after its prompt (at least
    the answer's share that history trimming keeps free), and at most `left`
    (`check`'s). The reservation becomes its `num_predict`: the model server
    writes no more. Nothing under no token limit (`left` None)."""
    if left is None:
        return
    wanted = options.get("num_predict")
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted <= 0:
        prompt = answer.prompt_tokens_estimate or 0
        wanted = max(profile.context_length - prompt, profile.answer_reserve_tokens())
    answer.reserved_tokens = max(1, min(wanted, left))
    options["num_predict"] = answer.reserved_tokens


def recheck(
    answer_id: int, owner_id: int, *, calls: int, spent: int, wanted: int | None
) -> int | None:
    """Before a further model call of a turn with tools
    (`chat.live.engine.turn.tools`): raise QuotaReached when the owner's
    limits, counting the turn's own `calls` and `spent` tokens so far rather
    than its row (whose reservation and figures lag behind), leave no room for
    one more call. Else the output tokens that call may use, at most `wanted`
    (None: no token limit), reserved on the answer's row (`spent` plus those)
    in the transaction that checked them, as `reserve` does for the first
    call: answers asked meanwhile count them."""
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=owner_id)
        teams = lock(user, user_locked=True)
        left: int | None = None
        for limit in limits_for(user, teams=teams, without=answer_id):
            used = limit.used + (calls if limit.kind == ANSWERS else spent)
            reached = replace(limit, used=used)
            if reached.reached:
                raise QuotaReached(reached.message(), limit.resets_at)
            if limit.kind == TOKENS:
                free = limit.allowed - used
                left = free if left is None else min(left, free)
        if left is None:
            return None
        allowed = left if wanted is None else max(1, min(wanted, left))
        Message.objects.filter(pk=answer_id).update(reserved_tokens=spent + allowed)
        return allowed


def warnings(user: AbstractBaseUser, now: datetime | None = None) -> list[Limit]:
    """The limits at or above WARN_FRACTION (for the line near the composer)."""
    return [limit for limit in limits_for(user, now) if limit.fraction >= WARN_FRACTION]


# --- A team's usage for its admins (the team page, chat.web.teams.manage) ---


@dataclass(frozen=True)
class MemberUsage:
    membership: Any  # a chat.models.teams.Membership, its user selected
    answers: int
    tokens: int

    @property
    def user(self) -> Any:
        return self.membership.user


@dataclass(frozen=True)
class TeamUsage:
    """The team's use of its current period, whole and per member, beside its
    limits (0: none)."""

    start: datetime
    end: datetime
    answers: int
    tokens: int
    members: list[MemberUsage]
    team_answers: int
    team_tokens: int
    member_answers: int
    member_tokens: int


def team_usage(team: Team, now: datetime | None = None) -> TeamUsage:
    """Counted as `limits_for` counts: a team's figure is its present members'
    answers in the period, whichever team they asked them for."""
    start, end = QuotaPeriod(team.quota_period).window(now or timezone.now())
    memberships = list(
        team.memberships.select_related("user").order_by("user__username")
    )
    answered = members_answers(team, start, end)
    answers, tokens = _used(answered)  # the team's limit's own figures
    per_owner = {
        row["conversation__owner_id"]: row
        for row in answered.values("conversation__owner_id").annotate(
            answers=Coalesce(Sum("model_calls"), 0), tokens=Sum(answer_tokens())
        )
    }
    members = []
    for m in memberships:
        row = per_owner.get(m.user_id, {})
        members.append(
            MemberUsage(
                membership=m,
                answers=int(row.get("answers") or 0),
                tokens=int(round(row.get("tokens") or 0.0)),
            )
        )
    return TeamUsage(
        start=start,
        end=end,
        answers=answers,
        tokens=tokens,
        members=members,
        team_answers=team.team_answers,
        team_tokens=team.team_output_tokens,
        member_answers=team.member_answers,
        member_tokens=team.member_output_tokens,
    )


# ---- the user page's plain counts (chat.web.account) ----------------------


def usage(
    user: AbstractBaseUser, period: str, now: datetime | None = None
) -> tuple[int, int]:
    """(answers, output tokens) of `user`'s own in the period that holds `now`,
    counted as the quotas count them."""
    start, end = QuotaPeriod(period).window(now or timezone.now())
    return _used(counted_answers(start, end).filter(conversation__owner_id=user.pk))
