"""`GET /metrics`: Prometheus metrics (the `prometheus_client` library).

Access: staff signed in, or `Authorization: Bearer <METRICS_TOKEN>`; anyone else
gets 403.

Two kinds of figures (see README, "Metrics"):

* Global gauges, counted from the database when scraped, so every process gives
  the same answer: answers streaming now, per model (`chatsite_active_streams`),
  answers waiting for a model slot (`chatsite_queue_length`), and answers
  running their tools with their slot given back (`chatsite_paused_answers`:
  a paused ticket, `chat.live.engine.turn.slots`; neither streaming nor
  queued).
* Per-process counters and histograms, counted when an answer of this process
  finishes (`observe_answer`, which `chat.apps` registers with the engine's
  `chat.live.engine.observers`: one call after its final save, nothing per token):
  answers by status, output and prompt tokens, time to first token, decode rate,
  answer duration and queue wait, per model; model calls and tool time per
  model, and the tool calls by source and tool (from the answer's stored
  steps). Scrape every process; sum across instances in queries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Case, CharField, Count, Q, Value, When
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from chat.models import Message
from chat.ops.health import bearer_token_matches

logger = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()

_MODEL = ["model"]
ANSWERS = Counter(
    "chatsite_answers",
    "Answers finished by this process, by model, final status and source "
    "(chat: the site's pages; api: the API, chat.api).",
    ["model", "status", "source"],
    registry=REGISTRY,
)
OUTPUT_TOKENS = Counter(
    "chatsite_output_tokens",
    "Output tokens reported by the model server for this process's answers.",
    _MODEL,
    registry=REGISTRY,
)
PROMPT_TOKENS = Counter(
    "chatsite_prompt_tokens",
    "Prompt tokens reported by the model server for this process's answers.",
    _MODEL,
    registry=REGISTRY,
)
FIRST_TOKEN = Histogram(
    "chatsite_first_token_seconds",
    "Time from the request to the model server to its first token.",
    _MODEL,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)
DECODE_RATE = Histogram(
    "chatsite_decode_tokens_per_second",
    "Output tokens per second of each answer (the server's figures when reported).",
    _MODEL,
    buckets=(1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 500, 1000),
    registry=REGISTRY,
)
ANSWER_TIME = Histogram(
    "chatsite_answer_seconds",
    "Time from the request to the model server to the end of the answer.",
    _MODEL,
    buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
QUEUE_WAIT = Histogram(
    "chatsite_queue_wait_seconds",
    "Time an answer waited for a free model slot before its request was sent.",
    _MODEL,
    buckets=(0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
MODEL_CALLS = Counter(
    "chatsite_model_calls",
    "Model calls of this process's answers (an answer with tools makes one per "
    "round of tool calls, and one more).",
    _MODEL,
    registry=REGISTRY,
)
TOOL_TIME = Histogram(
    "chatsite_answer_tool_seconds",
    "Time an answer spent running tools (and waiting for their approval), "
    "apart from the model's; answers that ran a tool only.",
    _MODEL,
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
_TOOL = ["source", "tool"]
TOOL_CALLS = Counter(
    "chatsite_tool_calls",
    "Tool calls of this process's answers, by source and tool (the name the "
    "model called it by; a call of no known tool: source none, tool unknown) "
    "and whether it gave a result (ok: true) or an error.",
    [*_TOOL, "ok"],
    registry=REGISTRY,
)
TOOL_CALL_TIME = Histogram(
    "chatsite_tool_call_seconds",
    "Duration of each tool call (with any wait for the user's approval).",
    _TOOL,
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)


def observe_answer(message: Message) -> None:
    """Count a finished answer (called once, after its final save)."""
    try:
        _observe(message)
    except Exception:  # metrics must never cost an answer
        logger.warning("metrics: answer %s not counted", message.pk, exc_info=True)


def _observe(message: Message) -> None:
    model = message.model_tag or "unknown"
    ANSWERS.labels(model, message.status, message.source or "chat").inc()
    if message.output_tokens:
        OUTPUT_TOKENS.labels(model).inc(message.output_tokens)
    if message.prompt_tokens:
        PROMPT_TOKENS.labels(model).inc(message.prompt_tokens)
    if message.first_token_ms is not None:
        FIRST_TOKEN.labels(model).observe(message.first_token_ms / 1000)
    if message.total_ms is not None:
        ANSWER_TIME.labels(model).observe(message.total_ms / 1000)
    if message.queue_wait_ms is not None:
        QUEUE_WAIT.labels(model).observe(message.queue_wait_ms / 1000)
    # A stopped or failed answer's rate says nothing about the model's speed.
    rate = message.decode_tps
    if message.status == Message.Status.DONE and rate is not None:
        DECODE_RATE.labels(model).observe(rate)
    MODEL_CALLS.labels(model).inc(message.model_calls)
    if message.tool_ms:
        TOOL_TIME.labels(model).observe(message.tool_ms / 1000)
    for step in message.steps or ():
        if step.get("kind") == "tool":
            _observe_call(step)


def _observe_call(step: dict[str, object]) -> None:
    """One call as stored in `Message.steps`. A call of no tool the turn had
    (no source) is labelled unknown: the model may write any name, and each
    would be a series of its own."""
    source = str(step.get("source") or "")
    labels = (source, str(step.get("name") or "")) if source else ("none", "unknown")
    TOOL_CALLS.labels(*labels, "true" if step.get("ok") else "false").inc()
    ms = step.get("ms")
    if isinstance(ms, int | float):
        TOOL_CALL_TIME.labels(*labels).observe(ms / 1000)


def queue_length() -> int:
    """Answers waiting for a model slot, in all processes
    (`chat.live.engine.admission`)."""
    return Message.objects.filter(_unfinished(), _queued()).count()


STREAMING, QUEUED, PAUSED = "streaming", "queued", "paused"


def _unfinished() -> Q:
    return Q(status=Message.Status.STREAMING)


def _paused() -> Q:
    """Its ticket gave its slot back while its tools run: out of line
    (`served` None, not waiting)."""
    return Q(ticket__paused=True)


def _queued() -> Q:
    """Its ticket waits for a slot (a paused one's again once its tools are
    done)."""
    return Q(ticket__isnull=False, ticket__served=None, ticket__paused=False)


def _state() -> Case:
    """An unfinished answer's state: paused, queued, else streaming
    (admitted, or from before admission tickets)."""
    return Case(
        When(_paused(), then=Value(PAUSED)),
        When(_queued(), then=Value(QUEUED)),
        default=Value(STREAMING),
        output_field=CharField(),
    )


class DatabaseCollector(Collector):
    """Gauges every process reports alike: counted in the database at scrape
    time, in one query."""

    def collect(self) -> Iterator[Metric]:
        streams = GaugeMetricFamily(
            "chatsite_active_streams",
            "Answers being written now, in all processes, by model.",
            labels=_MODEL,
        )
        paused = GaugeMetricFamily(
            "chatsite_paused_answers",
            "Answers running their tools, their model slot given back, in all "
            "processes, by model.",
            labels=_MODEL,
        )
        queued = 0
        counts = (
            Message.objects.filter(_unfinished())
            .annotate(state=_state())
            .values_list("model_tag", "state")
            .annotate(n=Count("pk"))
            .order_by("model_tag", "state")
        )
        for tag, state, count in counts:
            if state == QUEUED:
                queued += count
            else:
                family = streams if state == STREAMING else paused
                family.add_metric([tag or "unknown"], count)
        yield streams
        yield paused
        yield GaugeMetricFamily(
            "chatsite_queue_length",
            "Answers waiting for a free model slot, in all processes.",
            value=queued,
        )


REGISTRY.register(DatabaseCollector())


@require_safe
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    allowed = bearer_token_matches(request, settings.METRICS_TOKEN) or bool(
        getattr(request.user, "is_staff", False)
    )
    if not allowed:
        return HttpResponse(
            "Metrics are for staff, or callers with the metrics token.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(REGISTRY), content_type=content_type)


# Included by `chatsite.urls` at "metrics".
urlpatterns = [path("", metrics, name="metrics")]
