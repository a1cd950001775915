"""The site's sign-in page: the password form, throttled
(`chat.accounts.throttle`), and the identity providers' buttons."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.utils.translation import gettext_lazy as _

from chat.accounts.local import password_form_shown
from chat.accounts.throttle import THROTTLED, ThrottledAuthenticationForm

LOCAL_SIGNIN_OFF = _("Signing in with a password of this site is switched off here.")


class SignInView(LoginView):
    form_class = ThrottledAuthenticationForm

    # The OpenID Connect button; the password form for local accounts
    # (CHATSITE_LOCAL_SIGNIN) and the directory's (LDAP).
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["oidc_enabled"] = bool(settings.OIDC_ISSUER)
        context["oidc_provider_name"] = settings.OIDC_PROVIDER_NAME
        context["local_signin"] = settings.CHATSITE_LOCAL_SIGNIN
        context["password_form"] = password_form_shown()
        context["ldap_enabled"] = bool(settings.LDAP_AUTH_URL)
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not password_form_shown():
            return HttpResponseForbidden(str(LOCAL_SIGNIN_OFF))
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, THROTTLED):
            response.status_code = 429
        return response
