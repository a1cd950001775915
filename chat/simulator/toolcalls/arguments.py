"""A call's arguments, made from the tool's JSON Schema and the question, and
their JSON text cut into the pieces a tokenizer would give."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_URL = re.compile(r"https?://[^\s<>\"']+")
_PLACE = re.compile(r"\b(?:in|at|for|near)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_PLACE_NAMES = ("location", "city", "place", "town", "country", "region")
# A word with the whitespace before it, or a run of punctuation with its own:
# `{"query": "café hours"}` -> `{"`, `query`, `":`, ` "`, `café`, ` hours`, `"}`.
_JSON_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]+|\s+")
_EXAMPLE_URL = "https://example.com/"


def json_pieces(text: str) -> list[str]:
    """`text` (a call's JSON) in token-like pieces that join back to it."""
    return _JSON_PIECE.findall(text)


def arguments_for(
    parameters: Any,
    question: str,
    names: Sequence[str],
    others: Sequence[str] = (),
) -> dict[str, Any]:
    """Plausible arguments for a tool whose JSON Schema is `parameters`, asked
    `question`, which names it as one of `names` (left out of the text it is
    given) and other tools called in the same reply as `others`: each gets
    the part of the question from its own mention to the next one ("use echo
    to say hi, then get_weather in Paris")."""
    schema = parameters if isinstance(parameters, Mapping) else {}
    part = _part(question, names, others)
    return _Filler(part if _topic(part, names) else question, names).object(schema)


def mention_of(names: Sequence[str]) -> re.Pattern[str]:
    """Any of `names` as a whole word (a tool's name may hold "-"), case aside."""
    words = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.IGNORECASE)


def _part(question: str, names: Sequence[str], others: Sequence[str]) -> str:
    own = mention_of(names).search(question)
    if own is None or not others:
        return question
    after = mention_of(others).search(question, own.end())
    part = question[own.start() : after.start() if after else len(question)]
    return re.sub(r"[\s,;]*(?:and then|and|then)?[\s,;]*$", "", part, flags=re.I)


class _Filler:
    """Fills a schema's required properties from one question: numbers in the
    order they appear, a URL, a place named after "in", an enum value the
    question names, else the question's text without the mention of the tool."""

    def __init__(self, question: str, names: Sequence[str]) -> None:
        self.question = question
        self.numbers: Iterator[str] = iter(_NUMBER.findall(question))
        self.topic = _topic(question, names) or question.strip() or "hello"

    def object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        wanted = [str(n) for n in required] if isinstance(required, list) else []
        if not wanted and properties:
            # Nothing required: a model still fills the tool's first property.
            wanted = [next(iter(properties))]
        return {name: self.value(name, properties.get(name)) for name in wanted}

    def value(self, name: str, schema: Any) -> Any:
        if not isinstance(schema, Mapping):
            return self.topic
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            named = [v for v in enum if str(v).lower() in self.question.lower()]
            return (named or enum)[0]
        if "default" in schema:
            return schema["default"]
        kind = _kind(schema)
        if kind in ("integer", "number"):
            return self.number(schema, kind)
        if kind == "boolean":
            return True
        if kind == "array":
            return [self.value(name, schema.get("items"))]
        if kind == "object":
            return self.object(schema)
        return self.text(name, schema)

    def number(self, schema: Mapping[str, Any], kind: str) -> int | float:
        found = next(self.numbers, None)
        if found is not None:
            value = float(found)
        else:
            low = schema.get("minimum")
            value = float(low) if isinstance(low, int | float) else 1.0
        return int(value) if kind == "integer" else value

    def text(self, name: str, schema: Mapping[str, Any]) -> str:
        lowered = name.lower()
        if schema.get("format") in ("uri", "url") or lowered.endswith(("url", "uri")):
            url = _URL.search(self.question)
            return url.group().rstrip(".,;:!?)") if url else _EXAMPLE_URL
        if lowered in _PLACE_NAMES:
            place = _PLACE.search(self.question)
            if place:
                return place.group(1)
        return self.topic


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if not isinstance(kind, str):
        return "object" if "properties" in schema else "string"
    return kind


def _topic(question: str, names: Sequence[str]) -> str:
    """The question without its mention of the tool ("use X to ...")."""
    text = question
    for name in names:
        mention = re.escape(name)
        text = re.sub(
            rf"\b(?:please\s+)?(?:use|call|run|using|with|via)\s+(?:the\s+)?"
            rf"{mention}(?:\s+tool)?(?:\s+to)?\b",
            " ",
            text,
            flags=re.IGNORECASE,
        )
        text = re.sub(rf"(?<!\w){mention}(?!\w)", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s+", " ", text))
    text = re.sub(r"^(?:to|and|then)\s+", "", text.strip(" .,;:!"), flags=re.I)
    return text
