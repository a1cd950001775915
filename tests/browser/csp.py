"""What a page's Content Security Policy refused (chat.http.security), as
Chromium reports it: shared by the browser tests that check their pages."""

from __future__ import annotations

from bench.tour import Traffic

LISTENER = (
    "if (!window.__cspViolations) { window.__cspViolations = [];"
    "document.addEventListener('securitypolicyviolation', e =>"
    " window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI)); }"
)


def violations(page, url: str) -> list[str]:
    """What the policy refused on the page at `url`, as the console and the
    page's own `securitypolicyviolation` events report it."""
    page.add_init_script(LISTENER)
    reported: list[str] = []
    page.on(
        "console",
        lambda message: (
            reported.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    traffic = Traffic(page)
    page.goto(url)
    traffic.settle()
    # A `securitypolicyviolation` event the page saw, console or not.
    seen = page.evaluate("window.__cspViolations || []")
    return reported + seen
