from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks, and the receivers closing sockets.
        from chat import checks  # noqa: F401
        from chat.live.engine.observers import on_answer_finished
        from chat.ops.metrics import observe_answer
        from chat.sockets import session_sockets  # noqa: F401

        # The operators' counters hear of each finished answer (the engine
        # imports nothing of chat.ops).
        on_answer_finished(observe_answer)

        # The audit log hears of sign-ins, failed ones and sign-outs.
        from chat.accounts import signals as audit_signals

        audit_signals.connect()

        # The request bodies each front door takes, kept by the server at the
        # headers (chat.http imports neither the pages nor the API).
        from chat.api.bodies import api_route
        from chat.http.request_bodies import use_routes
        from chat.web.bodies import page_route, upload_route

        use_routes(upload_route, api_route, page_route)
