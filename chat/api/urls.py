"""The API's paths: OpenAI's under /v1/, Ollama's under /api/ (as the model
servers have them, so a client needs only the site's address)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from chat.api import ollama, openai
from chat.api.errors import ApiError


# No CSRF: a client POSTing to a path the API lacks gets a 404 in its shape,
# not the pages' CSRF page.
@csrf_exempt
def unknown_openai(request: HttpRequest) -> HttpResponse:
    error = ApiError(404, "not_found", f"{request.path} is not part of this API.")
    return error.openai_response()


@csrf_exempt
def unknown_ollama(request: HttpRequest) -> HttpResponse:
    error = ApiError(404, "not_found", f"{request.path} is not part of this API.")
    return error.ollama_response()


urlpatterns = [
    path("v1/models", openai.models, name="api_openai_models"),
    path("v1/chat/completions", openai.chat_completions, name="api_openai_chat"),
    re_path(r"^v1/", unknown_openai),
    path("api/version", ollama.version, name="api_ollama_version"),
    path("api/tags", ollama.tags, name="api_ollama_tags"),
    path("api/show", ollama.show, name="api_ollama_show"),
    path("api/chat", ollama.chat, name="api_ollama_chat"),
    re_path(r"^api/", unknown_ollama),
]
