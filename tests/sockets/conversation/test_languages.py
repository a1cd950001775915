"""A conversation's socket speaks its page's language (chat.web.languages
`socket_language`): the signed-in user's choice kept in the session, else the
browser's Accept-Language, else English; the answers its turns render too."""

from __future__ import annotations

import pytest

from chatsite.asgi import application
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    frames_until,
    send,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def _open(user, conversation, *, language=b"", session=None):
    headers = [ORIGIN]
    if language:
        headers.append((b"accept-language", language))
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=headers
    )
    communicator.scope["user"] = user
    if session is not None:
        communicator.scope["session"] = session
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def _empty_message_detail(communicator) -> str:
    await communicator.send_json_to({"type": "send", "content": "  "})
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["code"] == "empty_message"
    return frame["detail"]


async def test_the_browsers_language(alice, conversation):
    chinese = await _open(alice, conversation, language=b"zh-CN,zh;q=0.9")
    assert await _empty_message_detail(chinese) == "请先输入消息再发送。"
    english = await _open(alice, conversation, language=b"en-US,en;q=0.9")
    assert await _empty_message_detail(english) == "Type a message before sending."
    neither = await _open(alice, conversation)
    assert await _empty_message_detail(neither) == "Type a message before sending."


async def test_the_stored_choice_in_the_session_wins(alice, conversation):
    session = {"chat_language": "zh-hans"}
    communicator = await _open(alice, conversation, language=b"en", session=session)
    assert await _empty_message_detail(communicator) == "请先输入消息再发送。"


async def test_the_answer_its_turn_renders_is_in_its_language(
    alice, conversation, simulator
):
    simulator.config.tps = 0
    simulator.config.think_tokens = 0
    simulator.config.answer_text = "Copy Send Stop"
    communicator = await _open(alice, conversation, language=b"zh-CN")
    await send(communicator, "Hello")
    await frames_until(communicator, "done")
    final = (await frames_until(communicator, "message"))[-1]["message"]
    await communicator.disconnect()
    assert final["role"] == "assistant" and final["status"] == "done"
    assert final["content"] == "Copy Send Stop"  # the model's words, as written
    assert 'aria-label="以 Markdown 格式复制回答"' in final["html"]
    assert "Copy Send Stop" in final["html"]


@pytest.mark.parametrize(
    ("language", "leads"),
    [(b"zh-CN", "无法连接到模型服务器。（"), (b"en", "The model server at ")],
)
async def test_a_model_servers_failure_is_told_in_the_sockets_language(
    alice, conversation, demo_profile, language, leads
):
    # The seam (chat/upstream) words it in English around the server's text:
    # in Chinese the code's sentence comes first (chat/live/engine/finish.py).
    demo_profile.base_url = "http://127.0.0.1:9"  # nothing listens there
    await demo_profile.asave()
    communicator = await _open(alice, conversation, language=language)
    await send(communicator, "Hello")
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    error = next(frame for frame in frames if frame["type"] == "error")
    assert error["code"] == "upstream_unreachable"
    assert error["detail"].startswith(leads)
    assert "http://127.0.0.1:9 did not answer" in error["detail"]
    answer = await conversation.messages.filter(role="assistant").aget()
    assert answer.error_detail == error["detail"]  # stored as it was told
