"""Running ``memory-admin`` as an operator would: commands and the production server as
subprocesses, with an environment of their own, and a small HTTP client that signs in."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "a long test passphrase"
ROOT = Path(__file__).resolve().parents[2]


def production_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment a deployment sets (docs/deploy.md), nothing inherited from the test run."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        MEMORY_ADMIN_VAR_DIR=str(var_dir),
        MEMORY_STORE_URL=f"sqlite:///{var_dir / 'memory.sqlite3'}",
    )
    env.update(extra)
    return env


def run(command: Sequence[str], env: Mapping[str, str], timeout: float = 300, cwd: Path | None = None) -> str:
    done = subprocess.run(
        list(command), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None


@contextlib.contextmanager
def serving(
    memory_admin: Sequence[str], env: Mapping[str, str], *extra: str, cwd: Path | None = None
) -> Iterator[Server]:
    """``memory-admin serve`` on a free port until the block ends, then SIGTERM; the
    server's output and exit status are on the yielded object afterwards.

    The output goes to files, not pipes: nobody reads a pipe while the server runs, and
    once an access log fills its buffer (64 KB, some hundreds of requests) every worker
    blocks writing its next line."""
    port = free_port()
    command = [*memory_admin, "serve", "--bind", f"127.0.0.1:{port}", "--workers", "2", *extra]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            command, env=dict(env), cwd=cwd, stdout=out, stderr=err, text=True, start_new_session=True
        )
        server = Server(f"http://127.0.0.1:{port}", process)
        try:
            try:
                _wait_until_up(server)
            except AssertionError as exc:
                out.seek(0)
                err.seek(0)
                raise AssertionError(f"{exc}:\n{out.read()}\n{err.read()}") from None
            yield server
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            server.returncode = process.returncode
            out.seek(0)
            err.seek(0)
            server.stdout, server.stderr = out.read(), err.read()


def _wait_until_up(server: Server, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"serve exited with {server.process.returncode}")
        try:
            with urllib.request.urlopen(f"{server.url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"serve did not answer /healthz within {timeout:g}s")


class _BehindTls(http.cookiejar.DefaultCookiePolicy):
    """The client stands where the TLS-terminating proxy would: the Secure cookies the
    dashboard sets travel back although this last hop is plain HTTP."""

    def return_ok_secure(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return True


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@dataclass
class Response:
    status: int
    url: str
    headers: Mapping[str, str]
    text: str


class ProxiedClient:
    """Requests as a reverse proxy forwards them (``X-Forwarded-Proto: https``)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.https_origin = "https://" + urllib.parse.urlsplit(base_url).netloc
        self.jar = http.cookiejar.CookieJar(policy=_BehindTls())
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects)

    def request(self, path: str, data: Mapping[str, str] | None = None, *, proxied: bool = True) -> Response:
        headers = {"X-Forwarded-Proto": "https", "Origin": self.https_origin} if proxied else {}
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base_url + path, data=body, headers=headers)
        try:
            with self._opener.open(request, timeout=30) as response:
                return Response(response.status, response.url, dict(response.headers), response.read().decode())
        except urllib.error.HTTPError as exc:
            return Response(exc.code, exc.url, dict(exc.headers), exc.read().decode())

    def headers(self) -> dict[str, str]:
        """What a request made outside this client needs to count as the signed-in user's."""
        cookies = "; ".join(f"{cookie.name}={cookie.value}" for cookie in self.jar)
        return {"Cookie": cookies, "X-Forwarded-Proto": "https"}

    def sign_in(self, username: str, password: str = PASSWORD) -> Response:
        form = self.request("/accounts/login/")
        assert form.status == 200, form
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token, "the sign-in form carries a CSRF token"
        return self.request(
            "/accounts/login/",
            {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        )
