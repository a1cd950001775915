"""Web search and page fetching as tools the model may call (source "web").

* `source`: the `ToolSource` (`WebTools`): `web_search` and `web_fetch`, each
  refusal an `Outcome` for the model;
* `search`: search providers behind one interface (SearXNG's JSON API);
* `fetching`: a page fetched under limits, redirects followed and checked,
  connected to the address that was checked;
* `addresses`: the guard against private, loopback, link-local and metadata
  addresses, and the admin's exceptions;
* `sites`: the site-wide and per-team allow and deny lists of sites;
* `extract`: a page's readable text (trafilatura), run in a `chat.work`
  worker process.
"""

from __future__ import annotations

from chat.tools.web.source import FETCH, SEARCH, SOURCE, WebTools

__all__ = ["FETCH", "SEARCH", "SOURCE", "WebTools"]
