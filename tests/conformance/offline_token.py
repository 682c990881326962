"""A pytest plugin for running sigstore-conformance's own runner offline.

The suite's `client` fixture downloads an OIDC token for every test, verification tests
included, which never use it. This plugin answers that one download with a placeholder, so
the bundle-verification cases run without network. Any other request is refused.
"""

TOKEN_URL = (
    "https://storage.googleapis.com/sigstore-conformance-testing-token/untrusted-testing-token.txt"
)


def _placeholder_token():
    """An unsigned JWT-shaped placeholder: the runner reads its claims and nothing more."""
    import base64
    import json

    def part(value):
        return base64.b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"email": "offline@example.invalid", "iss": "https://offline.invalid", "exp": 4102444800}
    return ".".join([part({"alg": "none"}), part(claims), ""])


class _Placeholder:
    data = _placeholder_token().encode()


def _request(method, url, **_kwargs):
    if method == "GET" and url == TOKEN_URL:
        return _Placeholder()
    raise RuntimeError(f"offline run: refusing {method} {url}")


def pytest_plugin_registered(plugin, manager):
    """Replace the suite's conftest `request` (urllib3) once pytest loads it."""
    if hasattr(plugin, "identity_token") and hasattr(plugin, "request"):
        plugin.request = _request
