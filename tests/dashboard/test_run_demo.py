"""``make run``'s script (scripts/run-demo.sh) as a person runs it: it sets up, prints
the sign-in it keeps in var/demo-login.txt, and serves; that sign-in works."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.dashboard.deployed import answering
from tests.dashboard.server import ROOT, ProxiedClient, free_port
from tests.support.optional import unavailable

if not (ROOT / ".venv" / "bin" / "python").exists():
    unavailable("the script runs the checkout's .venv/bin/python: make setup creates it")


def checkout_copy(where: Path) -> Path:
    """The script in a folder of its own, beside the checkout's manage.py and .venv: its
    var/ (the memory file, the dashboard database, the kept sign-in) is this test's."""
    (where / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "run-demo.sh", where / "scripts" / "run-demo.sh")
    for name in ("manage.py", ".venv"):
        (where / name).symlink_to(ROOT / name)
    return where


@contextmanager
def run_demo(checkout: Path, port: int) -> Iterator[str]:
    """The script serving on ``port``; yields what it printed."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    env.update(PORT=str(port), MEMORY_EMBEDDER="none", MEMORY_ADMIN_VAR_DIR=str(checkout / "var"))
    log = checkout / "run.log"
    with answering(
        ["bash", "scripts/run-demo.sh"], "run-demo.sh", cwd=checkout, env=env, log=log, port=port, timeout=120
    ):
        yield log.read_text()


def signs_in(url: str, username: str, password: str) -> bool:
    client = ProxiedClient(url)
    form = client.request("/accounts/login/", proxied=False)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token, form
    answer = client.request(
        "/accounts/login/",
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        proxied=False,
    )
    return answer.status == 302 and answer.headers.get("Location") == "/"


def test_the_printed_sign_in_works_even_when_the_password_starts_with_a_dash(tmp_path: Path) -> None:
    """A kept password is random URL-safe text, so one in 64 starts with "-": passed to
    memory_user as a word of its own, it read as an option and the script stopped."""
    checkout = checkout_copy(tmp_path / "checkout")
    (checkout / "var").mkdir()
    (checkout / "var" / "demo-login.txt").write_text("-Rs4a_kept-from-before\n")
    with run_demo(checkout, free_port()) as printed:
        assert "sign in as  demo         / -Rs4a_kept-from-before" in printed
        url = re.search(r"dashboard: (http://127\.0\.0\.1:\d+)/", printed)
        assert url, printed
        assert signs_in(url.group(1), "demo", "-Rs4a_kept-from-before")
        assert signs_in(url.group(1), "acme-viewer", "-Rs4a_kept-from-before")
        assert not signs_in(url.group(1), "demo", "Rs4a_kept-from-before")
