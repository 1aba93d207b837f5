"""Sign-in throttling (django-axes): a run of wrong passwords locks the username out from
that address for a cool-off — the right password then fails too, with a clear message —
and once the cool-off has passed, the right password works again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.urls import reverse

from tests.dashboard.conftest import make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-only"


def sign_in(client: Client, password: str, username: str = "vera", address: str = "10.0.0.7") -> int:
    response = client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)
    return response.status_code


def test_wrong_passwords_lock_out_until_the_cool_off() -> None:
    make_user("vera", "viewer", ("tenant=acme",))
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    assert 3 <= limit <= 10
    for _ in range(limit - 1):
        assert sign_in(client, "wrong") == 200  # the form again, "please enter a correct …"
    assert sign_in(client, "wrong") == 429
    refused = client.post(reverse("login"), {"username": "vera", "password": PASSWORD}, REMOTE_ADDR="10.0.0.7")
    assert refused.status_code == 429  # the right password fails during the cool-off
    page = refused.content.decode()
    assert "Too many wrong passwords" in page and "locked for 15 minutes" in page and 'role="alert"' in page
    assert 'value="vera"' in page and "_auth_user_id" not in client.session
    # another address is not locked out (the lock is on the username from that address)
    assert sign_in(Client(), PASSWORD, address="10.0.0.8") == 302
    # once the cool-off has passed, the right password works, and the count starts over
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16))
    assert sign_in(client, PASSWORD) == 302 and "_auth_user_id" in client.session
    assert not AccessAttempt.objects.filter(username="vera", ip_address="10.0.0.7").exists()


def test_a_right_password_before_the_limit_resets_the_count() -> None:
    make_user("vera", "viewer", ("tenant=acme",))
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "wrong")
    assert sign_in(client, PASSWORD) == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "wrong") == 200  # counted from zero again


def test_unknown_usernames_are_throttled_the_same_way() -> None:
    client = Client()
    statuses = [sign_in(client, "wrong", username="nobody") for _ in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert statuses[-1] == 429 and statuses[0] == 200
