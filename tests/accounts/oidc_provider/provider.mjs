// A real OpenID provider (the npm `oidc-provider` package) for chatsite's
// sign-in tests: `node provider.mjs CONFIG.json`, started and stopped by
// tests/accounts/oidc_server.py.
//
// CONFIG: {"port", "issuer", "clients": [...client metadata], "accounts": PATH}.
// The accounts file is read at every look-up, so a test changes a person's
// groups, or removes the person, by rewriting it:
//   {"<login>": {"password", "sub", ...claims ("email", "groups", ...)}}
// The login page is ours (below): a wrong password or an unknown login sends
// the browser back to the client with error=access_denied, as a provider that
// removed the person would.
import { readFileSync } from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function accounts() {
  return JSON.parse(readFileSync(config.accounts, 'utf8'));
}

function accountBySub(sub) {
  return Object.values(accounts()).find((account) => account.sub === sub);
}

const provider = new Provider(config.issuer, {
  clients: config.clients,
  // PKCE is required of every client: a sign-in without it fails here.
  pkce: { methods: ['S256'], required: () => true },
  features: { devInteractions: { enabled: false } },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  async findAccount(ctx, sub) {
    const account = accountBySub(sub);
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        const { password, ...claims } = accountBySub(sub) ?? account;
        return claims;
      },
    };
  },
  // First-party client: no consent page, every requested scope is granted.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['chatsite-test-provider-cookie-key'] },
});
provider.proxy = false;

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function body(req) {
  let data = '';
  for await (const chunk of req) data += chunk;
  return new URLSearchParams(data);
}

async function interaction(req, res, uid) {
  if (req.method === 'GET') {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'consent') {
      // Native clients (the browser test's) always get this prompt
      // (oidc-provider's `native_client_prompt` check): granted at once.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({
          accountId: details.session.accountId,
          clientId: details.params.client_id,
        });
      grant.addOIDCScope('openid email profile groups');
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
      return;
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Test provider sign-in</title>
<h1>Test provider</h1>
<form method="post" action="/interaction/${escape(details.uid)}">
<label for="login">Login</label><input id="login" name="login" autofocus>
<label for="password">Password</label><input id="password" name="password" type="password">
<button type="submit">Continue</button></form>`);
    return;
  }
  const form = await body(req);
  const account = accounts()[form.get('login') ?? ''];
  const result = account && account.password === form.get('password')
    ? { login: { accountId: account.sub } }
    : { error: 'access_denied', error_description: 'Unknown login or wrong password.' };
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  const match = /^\/interaction\/([\w-]+)$/.exec(req.url.split('?')[0]);
  if (!match) {
    callback(req, res);
    return;
  }
  interaction(req, res, match[1]).catch((error) => {
    res.statusCode = 400;
    res.end(`interaction failed: ${error.message}`);
  });
});
server.listen(config.port, '127.0.0.1', () => {
  process.stdout.write(`listening ${config.port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
