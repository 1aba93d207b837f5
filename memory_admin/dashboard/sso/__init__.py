"""Single sign-on through any OpenID Connect provider.

Off unless ``OIDC_ISSUER`` is set. The provider says *who* someone is and which of its
groups they are in; the dashboard's own roles and scope grants (``permissions.py``)
stay the only thing that decides what they may see and do, and the groups are mapped
onto them on every sign-in and every re-check (``claims.py``, ``sync.py``).

- ``config``: the settings, read once per call from Django's settings (environment
  variables by default), and the origins the Content-Security-Policy lets forms reach;
- ``provider``: discovery (``/.well-known/openid-configuration``) and the signing keys
  (JWKS), fetched and cached, refetched when a token names a key not seen yet;
- ``backend``: the authentication backend (mozilla-django-oidc's, with the issuer,
  audience and key checks it leaves out) and the local password backend the
  ``MEMORY_ADMIN_LOCAL_SIGNIN`` switch governs;
- ``claims``: groups claim → roles and grants (pure);
- ``sync``: applying them within what the provider manages, each change audited;
- ``session``: what a signed-in session keeps, and the re-check that ends access the
  provider no longer vouches for;
- ``failures``: every way a sign-in can fail, as the page a person reads.
"""
