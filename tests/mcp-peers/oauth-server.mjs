// An MCP server behind OAuth 2.1, for the OAuth tests of tool-sdk's MCP client: the
// TypeScript SDK's authorization server (metadata, dynamic client registration, PKCE, the
// token endpoint with refresh) and its bearer-token check, in front of one MCP tool. The only
// code here is the provider's storage, which approves every authorization at once (no login
// page: the test's "browser" is an HTTP GET that follows the redirect).
//
//   node oauth-server.mjs [--token-seconds N] [--deny] [--refresh-down]
//
// prints the MCP endpoint's URL (http://127.0.0.1:PORT/mcp) on stdout. Access tokens live
// N seconds (default 3600) and come with a refresh token, a new one at each refresh. With
// --deny, the authorization endpoint sends the user back with `error=access_denied`; with
// --refresh-down, the token endpoint answers every refresh with `temporarily_unavailable`.
// The tool `stats` tells how many registrations, authorizations, code exchanges and refreshes
// the server saw.

import { randomUUID } from 'node:crypto';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, TemporarilyUnavailableError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

const args = process.argv.slice(2);
const tokenSeconds = args.includes('--token-seconds')
  ? Number(args[args.indexOf('--token-seconds') + 1])
  : 3600;
const deny = args.includes('--deny');
const refreshDown = args.includes('--refresh-down');

const stats = { registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0, rejectedTokens: 0 };
const clients = new Map();
const codes = new Map();
const accessTokens = new Map();
const refreshTokens = new Map();

function issue(clientId, scopes, resource) {
  const access = randomUUID();
  const refresh = randomUUID();
  accessTokens.set(access, { clientId, scopes, resource, expiresAt: Date.now() / 1000 + tokenSeconds });
  refreshTokens.set(refresh, { clientId, scopes, resource });
  return {
    access_token: access,
    token_type: 'bearer',
    expires_in: tokenSeconds,
    refresh_token: refresh,
    scope: scopes.join(' '),
  };
}

const provider = {
  clientsStore: {
    async getClient(id) {
      return clients.get(id);
    },
    async registerClient(client) {
      stats.registrations += 1;
      clients.set(client.client_id, client);
      return client;
    },
  },
  async authorize(client, params, res) {
    stats.authorizations += 1;
    const back = new URL(params.redirectUri);
    if (deny) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'the user said no');
    } else {
      const code = randomUUID();
      codes.set(code, { client, params });
      back.searchParams.set('code', code);
    }
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    res.redirect(back.toString());
  },
  async challengeForAuthorizationCode(client, code) {
    const found = codes.get(code);
    if (!found) throw new InvalidGrantError('unknown authorization code');
    return found.params.codeChallenge;
  },
  async exchangeAuthorizationCode(client, code) {
    const found = codes.get(code);
    if (!found || found.client.client_id !== client.client_id) throw new InvalidGrantError('unknown authorization code');
    codes.delete(code);
    stats.codeExchanges += 1;
    return issue(client.client_id, found.params.scopes ?? [], found.params.resource);
  },
  async exchangeRefreshToken(client, refreshToken, scopes, resource) {
    if (refreshDown) throw new TemporarilyUnavailableError('refreshing is down for maintenance');
    const found = refreshTokens.get(refreshToken);
    if (!found || found.clientId !== client.client_id) throw new InvalidGrantError('unknown or spent refresh token');
    refreshTokens.delete(refreshToken);
    stats.refreshes += 1;
    return issue(client.client_id, scopes ?? found.scopes, resource ?? found.resource);
  },
  async verifyAccessToken(token) {
    const found = accessTokens.get(token);
    if (!found || found.expiresAt < Date.now() / 1000) {
      stats.rejectedTokens += 1;
      throw new Error('invalid or expired token');
    }
    return { token, clientId: found.clientId, scopes: found.scopes, expiresAt: Math.floor(found.expiresAt), resource: found.resource };
  },
};

const app = express();
const listener = app.listen(0, '127.0.0.1', () => {
  const origin = `http://127.0.0.1:${listener.address().port}`;
  const mcpUrl = new URL(`${origin}/mcp`);
  const noLimit = { rateLimit: false };
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(origin),
      resourceServerUrl: mcpUrl,
      scopesSupported: ['mcp:tools'],
      authorizationOptions: noLimit,
      tokenOptions: noLimit,
      clientRegistrationOptions: noLimit,
    }),
  );
  const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  });
  app.post('/mcp', express.json(), bearer, async (req, res) => {
    // Stateless: a server and a transport per request.
    const server = new McpServer({ name: 'oauth-test-server', version: '1.0.0' });
    server.registerTool('stats', { description: 'What the authorization server saw, as JSON.', annotations: { readOnlyHint: true } }, async () => ({
      content: [{ type: 'text', text: JSON.stringify({ ...stats, client: req.auth.clientId }) }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', bearer, (req, res) => res.status(405).set('Allow', 'POST').end());
  console.log(mcpUrl.href);
});
