"""The user's own pages: signing in (`signin`, `oidc_views`), the user page
with its settings and password (`views`), API keys, and the language of the
pages and their JavaScript catalogs (`languages`)."""
