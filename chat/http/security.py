"""Response headers Django 5.2 does not set by itself: the Content Security Policy.

(SecurityMiddleware already sends X-Content-Type-Options, Referrer-Policy and
Cross-Origin-Opener-Policy; XFrameOptionsMiddleware sends X-Frame-Options.)

Scripts and style sheets come from this site only: the templates have no inline
scripts or <style> elements. Style *attributes* are allowed, as KaTeX and table
alignment use them. Images from elsewhere are refused, so model output cannot
load tracking pixels. Sockets may connect back to this host only.
"""

from __future__ import annotations

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

POLICY = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "style-src-elem 'self'",
    "style-src-attr 'unsafe-inline'",
    # blob: the composer's preview of a picture before it is uploaded
    # (static/chat/attachments.js); only this page's scripts can make one.
    "img-src 'self' data: blob:",
    "font-src 'self'",
    # The installable app's manifest (templates/_base.html).
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
)


def content_security_policy(request: HttpRequest) -> str:
    try:
        host = request.get_host()
    except DisallowedHost:  # answered with a 400 anyway
        return "; ".join((*POLICY, "connect-src 'self'"))
    socket = f"{'wss' if request.is_secure() else 'ws'}://{host}"
    return "; ".join((*POLICY, f"connect-src 'self' {socket}"))


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    def process_response(
        self, request: HttpRequest, response: HttpResponse
    ) -> HttpResponse:
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request)
        return response
