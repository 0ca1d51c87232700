"""An OAuth-protected MCP server on the official Python SDK (`mcp` 2.3): the SDK's own
authorization server routes (metadata, dynamic client registration, /authorize with
PKCE, /token, /revoke) and its resource server side (protected resource metadata, the
Bearer check with the token's resource, WWW-Authenticate), over streamable HTTP, with an
in-memory provider that approves every authorization request at once (the "browser" of
a test only follows the redirect). For evolve's login tests (mini/tests/mcp_oauth.rs).

    python oauth_server.py [--expires-in SECS]

Listens on 127.0.0.1 on a free port and prints `oauth-server: listening on PORT` on
stderr. `POST /test/revoke` (no auth) revokes every token, as a user revoking the grant
at the provider would.
"""

import argparse
import secrets
import socket
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

SCOPE = "mcp:tools"


class Provider:
    """Clients, codes and tokens in dicts; every authorization is approved."""

    def __init__(self, expires_in: int):
        self.expires_in = expires_in
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        code = self.codes.get(authorization_code)
        return code if code and code.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.expires_in,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.expires_in,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.clear()
        self.refresh.clear()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expires-in", type=int, default=3600)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    provider = Provider(args.expires_in)
    server = MCPServer(
        name="python-oauth",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=[SCOPE],
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says hello from the Python SDK."""
        return "hello from the Python SDK, with a valid token"

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(_: Request):
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    print(f"oauth-server: listening on {port}", file=sys.stderr, flush=True)
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
