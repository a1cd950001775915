"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
# Build the HTTP app first: it sets Django up before the consumers import models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from chat.http.bounded_bodies import bound_request_bodies  # noqa: E402
from chat.http.daphne_protocol import close_with_a_code, write_through  # noqa: E402
from chat.sockets.origins import SameOriginValidator  # noqa: E402
from chat.sockets.routing import websocket_urlpatterns  # noqa: E402
from chat.sockets.wsauth import SessionUserMiddleware  # noqa: E402
from chat.work import warm  # noqa: E402

close_with_a_code()
write_through()
bound_request_bodies()  # after write_through: its connections write through too
application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(
            SessionUserMiddleware(URLRouter(websocket_urlpatterns))  # type: ignore[arg-type]
        ),
    }
)

# Everything built so far lives as long as the process: keep it out of the
# garbage collector's full passes, which otherwise walk it all and stall the
# event loop (and every stream) for tens of milliseconds.
gc.collect()
gc.freeze()

# The processes that read attachments, started while the site serves: the first
# file does not wait for them (`chat.work.warm`).
warm()
