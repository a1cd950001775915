"""Signing in and out, the user's page (settings, password, API keys, tool
credentials) and the JavaScript catalogs of its languages."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from chat.web.account import (
    api_keys,
    languages,
    oidc_views,
    tool_credentials,
    views,
)
from chat.web.account.signin import SignInView

urlpatterns = [
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("jsi18n/<str:lang>/", languages.catalog, name="js_catalog"),
    # OpenID Connect sign-in (chat.web.account.oidc_views)
    path("oidc/authenticate/", oidc_views.start, name="oidc_authentication_init"),
    path("oidc/callback/", oidc_views.callback, name="oidc_authentication_callback"),
    path("account/", views.account, name="account"),
    path("account/theme/", views.set_theme, name="set_theme"),
    path(
        "account/password/",
        views.ChangePasswordView.as_view(),
        name="change_password",
    ),
    path("account/keys/new/", api_keys.create_api_key, name="create_api_key"),
    path(
        "account/keys/<int:pk>/revoke/",
        api_keys.revoke_api_key,
        name="revoke_api_key",
    ),
    path(
        "account/tools/<int:pk>/credential/",
        tool_credentials.set_tool_credential,
        name="set_tool_credential",
    ),
    path(
        "account/tools/<int:pk>/credential/clear/",
        tool_credentials.clear_tool_credential,
        name="clear_tool_credential",
    ),
]
