"""A throwaway Debian nginx running the shipped `deploy/nginx.conf`, for the test
of the production recipe (`tests/live/engine/processes/test_nginx.py`).

The file is read as shipped and changed only where a test run must differ: the
port (plain HTTP on 127.0.0.1 instead of TLS on 443, so no redirect server and
no certificates), the paths nginx writes (pid, logs, temp files, in the run's
own directory) and the upstream's servers (the test's Daphne processes). Each
change must match the shipped text exactly once: a file whose shape changed
fails here instead of testing something else.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx

from tests.support.waiting import until_sync

ROOT = Path(__file__).resolve().parents[3]
NGINX = Path(os.environ.get("NGINX", "/usr/sbin/nginx"))
SHIPPED = ROOT / "deploy" / "nginx.conf"
START_TIMEOUT = 30.0  # seconds: a bound for a loaded machine, not a budget


def _once(pattern: str, replacement: str, text: str, flags: int = 0) -> str:
    changed, count = re.subn(pattern, replacement, text, flags=flags)
    assert count == 1, f"deploy/nginx.conf: {pattern!r} matched {count} times"
    return changed


def render(
    directory: Path, port: int, upstream_ports: list[int], *, buffering: bool = False
) -> str:
    """The shipped configuration for this run. `buffering`: the API's location
    holds answers back, as a proxy set up for pages would: the recipe's test
    must see it."""
    text = SHIPPED.read_text()
    text = _once(r"^pid [^;]+;", f"pid {directory}/nginx.pid;", text, re.M)
    if os.geteuid() == 0:  # workers keep root's access to this run's directory
        text = "user root;\n" + text
    temp_paths = "".join(
        f"    {kind}_temp_path {directory}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    text = _once(r"^http \{\n", "http {\n" + temp_paths, text, re.M)
    text = _once(
        r"access_log /var/log/nginx/[^;]+;", f"access_log {directory}/access.log;", text
    )
    text = _once(
        r"error_log /var/log/nginx/[^; ]+", f"error_log {directory}/error.log", text
    )
    servers = "".join(
        f"        server 127.0.0.1:{p} max_fails=3 fail_timeout=10s;\n"
        for p in upstream_ports
    )
    text = _once(
        r"(        server 10\.0\.0\.\d+:\d+ max_fails=3 fail_timeout=10s;\n)+",
        servers,
        text,
    )
    # The port-80 server only redirects to TLS.
    text = _once(
        r"    server \{\n        listen 80;.*?return 301 [^\n]*\n    \}\n",
        "",
        text,
        re.S,
    )
    text = _once(r"listen 443 ssl;", f"listen 127.0.0.1:{port};", text)
    text = _once(r"\n *listen \[::\]:443 ssl;", "", text)
    text, count = re.subn(r"\n *ssl_[a-z_]+ [^;]+;", "", text)
    assert count >= 2, "deploy/nginx.conf: no ssl_ lines"
    if buffering:
        # What a proxy set up for pages does to a stream: buffer it (the
        # answer's own `X-Accel-Buffering: no` ignored) and compress it.
        text = _once(
            r"(location ~ \^/\(v1\|api\)/ \{\n\s+proxy_pass http://chatsite;\n\s+)"
            r"proxy_buffering off;\n(\s+)gzip off;",
            r"\1proxy_buffering on;\n\2proxy_ignore_headers X-Accel-Buffering;"
            r"\n\2gzip on;\n\2gzip_types text/event-stream;",
            text,
        )
    return text


class Nginx:
    def __init__(self, directory: Path, port: int, config: str) -> None:
        self.directory, self.port = directory, port
        self.config = directory / "nginx.conf"
        self.config.write_text(config)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def options(self) -> list[str | Path]:
        # -e: the log of nginx's own start, before it reads error_log.
        log = self.directory / "start.log"
        return ["-p", self.directory, "-c", self.config, "-e", log]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Nginx:
        test = subprocess.run(
            [NGINX, "-t", *self.options],
            capture_output=True,
            text=True,
        )
        assert test.returncode == 0, test.stderr
        self.process = subprocess.Popen(
            [NGINX, *self.options, "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        until_sync(self._answers, "nginx answering", timeout=START_TIMEOUT)
        return self

    def _answers(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.errors()
        try:
            httpx.get(f"{self.url}/healthz", timeout=2)
        except httpx.HTTPError:
            return False
        return True

    def errors(self) -> str:
        log = self.directory / "error.log"
        return log.read_text()[-3000:] if log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)
