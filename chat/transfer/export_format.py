"""chatsite's export document: one JSON object that holds everything needed to
import its conversations again exactly (`chat.transfer.export` writes it,
`chat.transfer.chatsite` reads it).

Times are ISO 8601 with their offset. Messages are numbered from 1 within
their conversation in the order they were stored (a parent always before its
children), and refer to their parent by that number: the document has no
database ids, so an export of an import is the same document."""

from __future__ import annotations

from typing import Literal, TypedDict

FORMAT = "chatsite.conversations"
VERSION = 1


class FolderDoc(TypedDict):
    name: str
    created_at: str


class FiguresDoc(TypedDict):
    """An answer's figures (`Message.stats` and the history builder's account)."""

    queue_wait_ms: float | None
    first_token_ms: float | None
    first_answer_token_ms: float | None
    thinking_ms: float | None
    total_ms: float | None
    prompt_tokens: int | None
    prompt_eval_ms: float | None
    output_tokens: int | None
    eval_ms: float | None
    load_ms: float | None
    done_reason: str
    replaced_chars: int
    history_sent: int | None
    history_total: int | None
    prompt_tokens_estimate: int | None
    context_tokens: int | None
    prompt_chars: int | None


class MessageDoc(TypedDict):
    number: int  # 1, 2, ... within the conversation
    parent: int | None  # the parent's number
    role: Literal["user", "assistant"]
    content: str
    thinking: str
    status: str
    error_code: str
    error_detail: str
    client_id: str
    model_tag: str
    thinking_enabled: bool | None
    source: str
    written_by_asker: bool
    replaced: bool  # off the shown branch (another version is shown)
    shown_at: str
    created_at: str
    updated_at: str
    figures: FiguresDoc


class NoticeDoc(TypedDict):
    """A "Settings changed: …" line between the messages."""

    text: str
    created_at: str


class SettingsDoc(TypedDict):
    model: str | None  # the model profile's tag; None: the site default
    thinking: str
    system_prompt: str
    history_policy: str
    history_last_n: int | None
    temperature: float | None


class ConversationDoc(TypedDict):
    # Stable across exports, and the import key of what it is imported as
    # ("chatsite:<uuid>", or "open-webui:<id>" for one imported from there).
    key: str
    imported_from: str | None  # "open-webui", "chatgpt"; None: written here
    title: str
    created_at: str
    updated_at: str
    pinned_at: str | None
    archived_at: str | None
    folder: str | None  # a folder's name (see `Document.folders`)
    settings: SettingsDoc
    messages: list[MessageDoc]
    notices: list[NoticeDoc]


class Document(TypedDict):
    format: Literal["chatsite.conversations"]
    version: int
    exported_at: str
    owner: str  # the username, for the reader's information
    folders: list[FolderDoc]
    conversations: list[ConversationDoc]
