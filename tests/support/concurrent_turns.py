"""Run as ``python -m tests.support.concurrent_turns <conversations> <turns each>`` with
DATABASE_URL naming a fresh SQLite file: migrates it, then stores that many
turns at once, from one thread per conversation (as sockets on two processes
would), each through the engine's own `chat.live.engine.turn.beginning.store`. Prints
the
JSON summary {"stored": N, "errors": [...]}."""

from __future__ import annotations

import json
import os
import sys
import threading

import django


def main(conversations: int, turns: int) -> dict[str, object]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    from chat.live.engine.turn.beginning import Question, store
    from chat.models import Conversation, Message, ModelProfile

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("load", password="x")
    profile = ModelProfile.objects.create(tag="demo:1b", base_url="http://127.0.0.1:9")
    ids = [
        Conversation.objects.create(owner=user, model_profile=profile).pk
        for _ in range(conversations)
    ]
    connections.close_all()
    start = threading.Barrier(conversations)
    errors: list[str] = []

    def send(conversation_id: int) -> None:
        start.wait()
        try:
            for n in range(turns):
                turn, _ = store(Question(conversation_id, f"question {n}", f"c{n}"))
                # The answer ends before the next question (as the runner would).
                Message.objects.filter(pk=turn.answer.pk).update(status="done")
        except Exception as exc:  # reported, not raised: the summary says it
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(pk,)) for pk in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = Message.objects.filter(role="user").count()
    return {"stored": stored, "errors": errors}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))) + "\n")
