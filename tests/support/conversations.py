"""Long conversations made in bulk, for the paging and search tests."""

from __future__ import annotations

from chat.models import Conversation, Message


def add_messages(conversation: Conversation, count: int, start: int = 0) -> list[int]:
    """`count` questions and answers, in bulk; their ids, oldest first."""
    Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role="assistant" if n % 2 else "user",
                content=f"**m{n}**" if n % 2 else f"m{n}",
                thinking=f"thought {n}" if n % 2 else "",
                model_tag="qwen3-demo:8b",
            )
            for n in range(start, start + count)
        ]
    )
    ids = conversation.messages.order_by("pk").values_list("pk", flat=True)
    return list(ids)[-count:]
