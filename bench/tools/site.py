"""The tools bench's site: the relay bench's (bench/relay/site.py: the
simulator and one Daphne process on a throwaway SQLite database), with the
sources of `bench.tools.serve` and a model that calls tools (`qwen3-demo:8b`)
on the OpenAI-compatible side."""

from __future__ import annotations

from bench.common import SHELL_SIGN_IN, manage, spawn, spawn_simulator, wait_until_up
from bench.relay.site import Site

MODEL = "qwen3-demo:8b"


class ToolSite(Site):
    def __init__(self) -> None:
        super().__init__(backend="openai")

    def start(self) -> None:
        manage(self.env, "migrate", "--noinput", "-v", "0")
        self.processes.append(
            spawn_simulator(self.env, self.sim_port, "--record-times")
        )
        self.processes.append(
            spawn(
                self.env,
                *("-m", "bench.tools.serve", "-b", "127.0.0.1"),
                *("-p", str(self.web_port)),
            )
        )
        wait_until_up(f"{self.sim_url}/api/version", timeout=90)
        wait_until_up(f"{self.web_url}/healthz", timeout=90)
        self.cookie, self.api_key = self._setup_data()

    def _setup_data(self) -> tuple[str, str]:
        script = (
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import ModelProfile, SiteDefaults;"
            "u = User.objects.create_user('bench', password='x');"
            "SiteDefaults(generations_per_user=0).save();"
            f"ModelProfile.objects.create(tag='{MODEL}', "
            f"backend='openai', base_url='{self.profile_url}');"
            "print(signed_in(u))"
        )
        session = manage(self.env, "shell", "-v", "0", "-c", script).strip()
        return "sessionid=" + session, ""

    def with_tools(self, conversations: list[int], source: str) -> None:
        """Switch `source` on in these conversations (the tools menu's choice)."""
        script = (
            "from chat.models import Conversation;"
            f"Conversation.objects.filter(pk__in={conversations!r})"
            f".update(tool_choices={{'sources': {{{source!r}: True}}}})"
        )
        manage(self.env, "shell", "-v", "0", "-c", script)
