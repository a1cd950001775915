from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from chat.web import (
    account,
    api_keys,
    attachments,
    conversations,
    invitations,
    languages,
    model_picker,
    oidc_views,
    search,
    sharing_urls,
    sidebar_urls,
    transfer_urls,
)
from chat.web.signin import SignInView

urlpatterns = [
    path("", conversations.home, name="home"),
    path("setup/", conversations.setup, name="setup"),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("jsi18n/<str:lang>/", languages.catalog, name="js_catalog"),
    # OpenID Connect sign-in (chat.web.oidc_views)
    path("oidc/authenticate/", oidc_views.start, name="oidc_authentication_init"),
    path("oidc/callback/", oidc_views.callback, name="oidc_authentication_callback"),
    path("c/new/", conversations.new_conversation, name="new_conversation"),
    path("search/", search.search, name="search"),
    path("attachments/", attachments.upload, name="upload_attachment"),
    path("attachments/<str:public_id>/", attachments.attachment, name="attachment"),
    path(
        "attachments/<str:public_id>/thumbnail/",
        attachments.thumbnail,
        name="attachment_thumbnail",
    ),
    path("quota/line/", conversations.quota_line, name="quota_line"),
    path("c/<int:pk>/", conversations.conversation, name="conversation"),
    path("c/<int:pk>/thinking/", conversations.set_thinking, name="set_thinking"),
    path("models/loaded/", model_picker.loaded_models, name="loaded_models"),
    path(
        "c/<int:pk>/settings/",
        conversations.conversation_settings,
        name="conversation_settings",
    ),
    path("c/<int:pk>/item/", conversations.conversation_item, name="conversation_item"),
    path(
        "c/<int:pk>/rename/",
        conversations.rename_conversation,
        name="rename_conversation",
    ),
    path(
        "c/<int:pk>/delete/",
        conversations.delete_conversation,
        name="delete_conversation",
    ),
    path(
        "c/<int:pk>/messages/before/<int:before>/",
        conversations.older_messages,
        name="older_messages",
    ),
    path(
        "c/<int:pk>/messages/<int:message_id>/source/",
        conversations.message_source,
        name="message_source",
    ),
    path(
        "c/<int:pk>/messages/<int:message_id>/show/",
        conversations.show_version,
        name="show_version",
    ),
]

urlpatterns += sharing_urls.urlpatterns
urlpatterns += transfer_urls.urlpatterns
urlpatterns += sidebar_urls.urlpatterns

# The user page, password change, API keys, invitation links.
urlpatterns += [
    path("account/", account.account, name="account"),
    path("account/theme/", account.set_theme, name="set_theme"),
    path(
        "account/password/",
        account.ChangePasswordView.as_view(),
        name="change_password",
    ),
    path("account/keys/new/", api_keys.create_api_key, name="create_api_key"),
    path(
        "account/keys/<int:pk>/revoke/",
        api_keys.revoke_api_key,
        name="revoke_api_key",
    ),
    path("invite/<str:token>/", invitations.accept_invitation, name="invitation"),
]
