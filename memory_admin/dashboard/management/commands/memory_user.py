"""Create dashboard users and manage their role and scope grants."""

from __future__ import annotations

import json
import secrets
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memory_admin.dashboard.models import IdentityLink, ProviderGrant
from memory_admin.dashboard.permissions import (
    ROLES,
    ROLES_BY_SLUG,
    Role,
    add_grants,
    grants_of,
    remove_grants,
    role_named,
    role_of,
    set_role,
)
from memory_admin.errors import MemoryValidationError
from memory_admin.scope import Scope, format_scope, parse_scope_text

ROLE_HELP = "; ".join(f"{role.slug}: {role.summary}" for role in ROLES)


class Command(BaseCommand):
    help = (
        "Manage dashboard users: create NAME --role ROLE --grant tenant=acme [--password P]; "
        "role NAME ROLE; grant NAME SCOPE…; revoke NAME SCOPE…; show NAME; list."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        assert isinstance(parser, CommandParser)
        sub = parser.add_subparsers(dest="action", required=True, parser_class=CommandParser)
        create = sub.add_parser("create", help="create a user with a role and grants")
        create.add_argument("username")
        create.add_argument("--role", required=True, help=ROLE_HELP)
        create.add_argument(
            "--grant", action="append", default=[], metavar="SCOPE", help="a scope grant (repeatable): tenant=acme"
        )
        create.add_argument("--password", help="the password (default: a random one, printed once)")
        create.add_argument("--email", default="")
        create.add_argument(
            "--update", action="store_true", help="if the user exists, set role, grants and password instead of failing"
        )
        role = sub.add_parser("role", help="set a user's role")
        role.add_argument("username")
        role.add_argument("role", help=ROLE_HELP)
        for name, text in (("grant", "add scope grants"), ("revoke", "remove scope grants")):
            cmd = sub.add_parser(name, help=text)
            cmd.add_argument("username")
            cmd.add_argument("scopes", nargs="+", metavar="SCOPE")
        show = sub.add_parser("show", help="a user's role and grants")
        show.add_argument("username")
        sub.add_parser("list", help="every user with role and grants")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self._create(options)
        elif action == "role":
            user = self._user(options["username"])
            set_role(user, self._role(options["role"]))
            self._show(user)
        elif action in ("grant", "revoke"):
            user = self._user(options["username"])
            scopes = [self._scope(text) for text in options["scopes"]]
            if action == "grant":
                add_grants(user, scopes)
            else:
                remove_grants(user, scopes)
            self._show(user)
        elif action == "show":
            self._show(self._user(options["username"]))
        else:
            for user in User.objects.order_by("username"):
                self._show(user)

    @transaction.atomic
    def _create(self, options: dict[str, Any]) -> None:
        role = self._role(options["role"])
        scopes = [self._scope(text) for text in options["grant"]]
        user = User.objects.filter(username=options["username"]).first()
        existed = user is not None
        if user is not None and not options["update"]:
            raise CommandError(f"User {options['username']!r} exists; pass --update to change it.")
        password = options["password"] or secrets.token_urlsafe(12)
        if user is None:
            user = User.objects.create_user(username=options["username"], email=options["email"], password=password)
        else:
            user.set_password(password)
            user.save(update_fields=["password"])
        set_role(user, role)
        add_grants(user, scopes)
        verb = "Updated" if existed else "Created"
        self.stdout.write(self.style.SUCCESS(f"{verb} {user.get_username()}."))
        if not options["password"]:
            self.stdout.write(f"Password: {password}")
        if role.slug != "admin" and not scopes and not grants_of(user):
            self.stdout.write(self.style.WARNING("No scope grants: this user sees nothing until granted a scope."))
        self._show(user)

    def _show(self, user: User) -> None:
        role = role_of(user)
        grants = grants_of(user)
        if role is not None and role.slug == "admin":
            where = "every tenant"
        else:
            where = ", ".join(format_scope(g) for g in grants) or "no scopes"
        line = f"{user.get_username()}: {role.group if role else 'no role'} — sees {where}"
        link = IdentityLink.objects.filter(user=user).first()
        if link is not None:
            given = [ROLES_BY_SLUG[slug].group for slug in link.managed_roles if slug in ROLES_BY_SLUG]
            marked = ProviderGrant.objects.filter(grant__user=user).values_list("grant__scope_json", flat=True)
            given += [format_scope(json.loads(text)) for text in marked]
            line += f" (single sign-on; from the provider: {', '.join(given) or 'nothing'})"
        self.stdout.write(line)

    @staticmethod
    def _user(username: str) -> User:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; create it with: memory_user create {username} --role viewer")
        return user

    @staticmethod
    def _role(name: str) -> Role:
        try:
            return role_named(name)
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    @staticmethod
    def _scope(text: str) -> Scope:
        try:
            return parse_scope_text(text)
        except MemoryValidationError as exc:
            raise CommandError(f"{text!r}: {exc.message}") from None
