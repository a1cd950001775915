"""Browser latency: from the model server writing a token to that token in the DOM.

Headless Chromium (Playwright) opens real conversation pages of a Daphne serving
chatsite, with the bundled simulator as the model server. The simulator stamps
each token's send time (``record_times``, wall clock, right after the write); a
MutationObserver installed by this benchmark (``page.add_init_script``, not part
of the product) stamps when each token's word first appears in the page's DOM.
Answers are made of distinct words ``w0 w1 …`` in paragraphs, one simulator
token each, so token *i* is the word ``w{i}``. Both stamps are wall-clock
(the page's ``performance.timeOrigin + now()``, calibrated against
``Date.now()``), on the same machine.

Scenarios: one tab at 80, 400 and 1,000 tok/s; 10 tabs streaming 80 tok/s each at
once, each in its own browser context (its own window: background tabs of one
window get no animation frames); Enter pressed -> first token visible, minus the
model's own time to first token, also for the first question a fresh server
process is asked (cold start); and the main thread's longest task while a
20,000-token markdown answer streams into a conversation of 200 messages.

Every stream scenario up to 400 tok/s, and Enter -> first token, is measured
again in the same run on the floor: a bare WebSocket relay to the same simulator
(``bench/floor.py``), and each row prints its p99 as a multiple of the floor's.

With 10 tabs on a 2-core machine the browser itself needs ~1.9 ms of CPU per
token (renderers ~1.35, the software-compositing GPU process ~0.27, the rest
the main and utility processes; the page's own JavaScript ~0.4 of it): about
1.5 cores at 800 tok/s. The latency then grows before the page sees the frame
(``sock99`` ≈ ``p99``), so the figure follows the machine's load more than the
page; the table prints the load average with it. ``--only``,
``--chromium-arg`` and ``--browser-nice`` compare one scenario under changes.

Run alone: ``python -m bench.browser [--quick]``; from code:
``bench.browser.run.run()`` or ``await run_browser_bench()``, which return one
dict per scenario. The package: ``scenarios`` (what is measured), ``site`` (the
server side), ``answers`` (the simulator's texts), ``page`` (the scripts the
bench installs in the page, and driving it), ``cpu`` (the processes' CPU),
``measure`` (one scenario into one row), ``run`` (Chromium and the scenarios in
order), ``report`` (the budgets and the table), ``__main__`` (the command).
"""
