"""A provider's identity to an account (`chat.accounts.provisioning`): made on the
first sign-in, found by the provider's identifier afterwards, never a half
account when refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from chat.accounts.provisioning import Identity, Refused, provision
from chat.models import AuditEvent, ExternalAccount, GroupRule, Team

pytestmark = pytest.mark.django_db


def _identity(**changes: Any) -> Identity:
    fields: dict[str, Any] = {
        "method": "oidc",
        "subject": "sub-123",
        "username": "carol",
        "email": "carol@example.org",
        "first_name": "Carol",
        "last_name": "Jones",
        "groups": ("gpu-users",),
    }
    fields.update(changes)
    return Identity(**fields)


def test_first_sign_in_makes_the_account_later_ones_update_it() -> None:
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    user = provision(_identity(), address="192.0.2.7")
    assert (user.username, user.email, user.get_full_name()) == (
        "carol",
        "carol@example.org",
        "Carol Jones",
    )
    assert not user.has_usable_password()
    assert list(gpu.members.all()) == [user]
    kinds = set(AuditEvent.objects.values_list("kind", flat=True))
    assert kinds == {"account_created", "membership_changed"}

    # The provider renamed her and changed her address: same account.
    again = provision(
        _identity(username="cjones", email="c.jones@example.org", groups=()),
    )
    assert again.pk == user.pk
    again.refresh_from_db()
    assert (again.username, again.email) == ("carol", "c.jones@example.org")
    assert not gpu.members.exists()
    assert ExternalAccount.objects.get().last_sign_in is not None


def test_an_existing_local_account_of_that_name_is_not_taken_over(alice: Any) -> None:
    with pytest.raises(Refused, match="already exists"):
        provision(_identity(username=alice.username))
    assert not ExternalAccount.objects.exists()
    assert AuditEvent.objects.get().kind == "sign_in_failed"


@pytest.mark.parametrize(
    "username", ["PV_LOCAL", "pv_local ", "pv_loсal", "ｐｖ_local"]
)
def test_a_name_that_looks_like_a_local_account_s_is_refused(
    django_user_model: Any, username: str
) -> None:
    """Upper case, a trailing space, a Cyrillic с, full-width letters: an
    identity gets no account beside one it could pass for."""
    django_user_model.objects.create_user("pv_local")
    with pytest.raises(Refused, match="or one that looks like it"):
        provision(_identity(username=username))
    assert list(django_user_model.objects.values_list("username", flat=True)) == [
        "pv_local"
    ]
    assert not ExternalAccount.objects.exists()


def test_a_name_mixing_scripts_to_pass_for_another_is_refused() -> None:
    with pytest.raises(Refused, match="mixes scripts"):
        provision(_identity(username="pаypal"))  # a Cyrillic а
    assert not get_user_model().objects.exists()


def test_a_new_name_is_stored_normalised() -> None:
    assert provision(_identity(username=" ｃａｒｏｌ ")).username == "carol"
    assert provision(_identity(subject="s-2", username="张三")).username == "张三"


def test_unverified_email_is_refused_with_nothing_made() -> None:
    with pytest.raises(Refused, match="not verified"):
        provision(_identity(email_verified=False))
    assert not get_user_model().objects.exists()


def test_only_allowed_email_domains_get_an_account(settings: Any) -> None:
    settings.CHATSITE_ALLOWED_EMAIL_DOMAINS = ["example.com"]
    with pytest.raises(Refused, match="example.com"):
        provision(_identity())
    with pytest.raises(Refused):
        provision(_identity(email=""))
    assert not get_user_model().objects.exists()
    assert provision(_identity(email="carol@EXAMPLE.com")).username == "carol"


def test_a_switched_off_account_is_refused_and_keeps_its_teams() -> None:
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    user = provision(_identity())
    user.is_active = False
    user.save()
    with pytest.raises(Refused, match="switched off"):
        provision(_identity(groups=()))
    assert list(gpu.members.all()) == [user]  # the refused sign-in changed nothing


def test_a_failure_in_the_group_rules_leaves_no_half_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("rules broke")

    monkeypatch.setattr(GroupRule, "apply", broken)
    with pytest.raises(RuntimeError):
        provision(_identity())
    assert not get_user_model().objects.exists()
    assert not ExternalAccount.objects.exists()
