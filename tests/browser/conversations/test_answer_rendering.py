"""An answer's rendering in headless Chromium: markdown, code, tables and
math with copy buttons, inert model output, the incremental renderer against
rendering the whole answer, a long paragraph appended to, and the streamed
layout against the server's."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import (
    RICH_ANSWER,
    ask,
    assert_rich_answer,
    open_conversation,
    wait_until_done,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_markdown_code_tables_and_math_render_with_copy_buttons(
    live_server_url, context, page, login, conversation, alice, simulator
):
    context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=live_server_url
    )
    simulator.config.tps = 60
    simulator.config.think_tokens = 0
    simulator.config.answer_text = RICH_ANSWER
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"] .answer')
    # Finished blocks are rendered while the answer is still being written.
    expect(streaming.locator("h2")).to_have_text("Streams", timeout=10_000)
    expect(streaming.locator("strong").first).to_have_text("bold")
    wait_until_done(page)
    answer = page.locator('article.assistant[data-status="done"] .answer')
    assert_rich_answer(answer)
    copy = answer.locator(".code-block .copy-code")
    expect(copy).to_have_count(1)
    copy.click()
    expect(copy).to_have_text("Copied")
    clipboard = page.evaluate("navigator.clipboard.readText()")
    assert clipboard == RICH_ANSWER.split("```python\n")[1].split("```")[0]
    page.locator("article.assistant .copy-answer").click()
    expect(page.locator("article.assistant .copy-answer")).to_contain_text("Copied")
    stored = Message.objects.get(role="assistant").content
    assert page.evaluate("navigator.clipboard.readText()") == stored

    # The same after a reload, from the server's HTML.
    page.reload()
    answer = page.locator('article.assistant[data-status="done"] .answer')
    assert_rich_answer(answer)
    page.locator("article.assistant .copy-answer").click()
    expect(page.locator("article.assistant .copy-answer")).to_contain_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == stored


HOSTILE_ANSWER = "\n\n".join(
    [
        """Hello <script>alert("script")</script> and <img src=x """
        """onerror="alert('img')"> there.""",
        """<svg onload="alert('svg')"><circle r=1 /></svg> and """
        """<iframe src="javascript:alert('frame')"></iframe>""",
        """A [link](javascript:alert('link')) and <a href="javascript:alert('a')">"""
        """anchor</a> and ![pic](javascript:alert('pic'))""",
        """<details open ontoggle="alert('toggle')">x</details> """
        """[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)""",
        r"""Math $\href{javascript:alert('tex')}{click}$ and $\htmlId{x}{y}$ end.""",
    ]
)

FIND_ACTIVE_CONTENT = r"""() => {
  const root = document.getElementById("messages");
  const bad = [];
  for (const el of root.querySelectorAll("*")) {
    const tag = el.tagName;
    if (["SCRIPT", "IFRAME", "OBJECT", "EMBED"].includes(tag)) bad.push(tag);
    for (const attr of el.attributes) {
      const value = attr.value.replace(/\s/g, "").toLowerCase();
      if (attr.name.startsWith("on")) bad.push(`${tag}[${attr.name}]`);
      const url = ["href", "src", "action", "formaction", "xlink:href"];
      if (url.includes(attr.name) && /^(javascript|vbscript|data):/.test(value)) {
        bad.push(`${tag}[${attr.name}=${value}]`);
      }
    }
  }
  return bad;
}"""


def test_model_output_is_inert_while_streaming_and_after(
    live_server_url, page, login, conversation, alice, simulator
):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    simulator.config.tps = 40
    simulator.config.think_tokens = 0
    simulator.config.answer_text = HOSTILE_ANSWER
    simulator.config.thinking_text = "<img src=x onerror=alert('thinking')>"
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"]')
    expect(streaming.locator(".answer")).to_contain_text("Hello", timeout=10_000)
    while streaming.count():  # check at many points of the stream
        assert page.evaluate(FIND_ACTIVE_CONTENT) == []
        page.wait_for_timeout(40)
    wait_until_done(page)
    answer = page.locator("article.assistant .answer")
    expect(answer).to_contain_text('<script>alert("script")</script>')
    expect(answer).to_contain_text("onerror")
    for link in answer.locator(
        "a"
    ).all():  # markdown links to javascript: are not links
        assert (link.get_attribute("href") or "").startswith("http")
    assert page.evaluate(FIND_ACTIVE_CONTENT) == []
    page.reload()
    wait_until_done(page)
    page.wait_for_timeout(300)  # the enhancement of server-rendered answers
    assert page.evaluate(FIND_ACTIVE_CONTENT) == []
    assert dialogs == []


# Feeds documents to the incremental renderer in pieces of every size and
# compares the result with rendering the whole document at once.
COMPARE_RENDERINGS = r"""async ([docs, sizes]) => {
  const { IncrementalMarkdown, renderWhole } = await import("/static/chat/markdown.js");
  // Block wrappers and highlighting aside; and a list split into items is tight
  // where the whole list may be loose (<li><p>…</p></li>): the same on screen.
  const flat = (container) => {
    for (const wrapper of container.querySelectorAll(".md-block, .md-tail, li > p")) {
      wrapper.replaceWith(...wrapper.childNodes);
    }
    for (const code of container.querySelectorAll("code")) {
      code.textContent = code.textContent;
      code.classList.remove("hljs");
    }
    return container.innerHTML.replace(/\s*(<[^>]*>)\s*/g, "$1").replace(/\s+/g, " ");
  };
  const failures = [];
  for (const doc of docs) {
    const whole = document.createElement("div");
    whole.append(renderWhole(doc));
    const want = flat(whole);
    // This much rendered in one go, by length: computed once for all sizes.
    const inOneGo = new Map();
    const oneGo = (end) => {
      if (!inOneGo.has(end)) {
        const fresh = document.createElement("div");
        new IncrementalMarkdown(fresh).append(doc.slice(0, end));
        inOneGo.set(end, flat(fresh));
      }
      return inOneGo.get(end);
    };
    for (const size of sizes) {
      const container = document.createElement("div");
      const renderer = new IncrementalMarkdown(container);
      for (let i = 0; i < doc.length; i += size) {
        renderer.append(doc.slice(i, i + size));
        if (size > 4) continue;
        // While streaming too: the same as rendering this much in one go.
        const [now, then] = [flat(container.cloneNode(true)), oneGo(i + size)];
        if (now !== then) failures.push({ size, at: i + size, got: now, want: then });
      }
      renderer.finish();
      const got = flat(container);
      if (got !== want) failures.push({ size, doc: doc.slice(0, 60), got, want });
    }
  }
  return failures;
}"""

DOCUMENTS = [
    RICH_ANSWER,
    "Intro line\n- a\n- b\n  continued\n- c\n\nAfter the list.\n",
    "1. one\n1. two\n1. three\n\n   indented paragraph of three\n\n1. four\n\nEnd\n",
    "Text before\n```js\nconst a = 1;\n\nconst b = 2;\n```\nText after\n\n"
    "~~~\ntilde\n~~~\n",
    "# Title\nParagraph right under.\n## Sub\n> quote\n> more\n\n---\n\nLast *one*.\n",
    "- item\n\n    ```\n    code in item\n\n    more code\n    ```\n\n- next item\n",
    "Inline $a_1 + b_1$ math and \\\\(x\\\\) too.\n\n$$x^2$$\n\n$$\ny = 2\n\n$$\n\nend",
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nText *after* the table with `code`.",
    "Para\nSetext\n---\n\n* x\n* y\n\n  * nested\n* z\n",
    "> - quoted list\n> - two\n\n2) paren\n3) list\n- other kind\n",
    "A\n\n    indented code\n\n    more\n\nB\n# Heading\nC  \nhard break\n\n***\n",
    "Last fence is never closed\n```\ncode\n\nstill code",
    "Last math is never closed\n\n$$\nx = 1",
    "**Note:** some words here and more\nsecond line words *open emphasis\n\n"
    '_emph_ words and __strong__x words ok\n\n"Quoted" text (aside) words.\n\n'
    "2024 was a year\n2024. was\n\nSetext words\n--- more\n\nA | B\n--|--\nc | d\n\n"
    "Words then\n=== and\n\n(Paren) words  \nhard break words\n",
    # One long paragraph, as models write it: tokens with their space after,
    # runs of spaces and tabs, spaces markdown trims (no-break, ideographic),
    # soft breaks, and Chinese without any space.
    "Tokens with the space after them " * 12
    + "then  two\tspaces and a tab, \u00a0nbsp\u3000ideographic\u00a0 end.\n"
    + "A soft break, then more words " * 6
    + "\n\n这是一个很长的中文段落，模型一个字一个字地写出来，没有空格。" * 4
    + "Mixed 中文 and English words, 还有标点！？\u3000\n\nLast words.   ",
]


def shares(documents: list[str], count: int) -> list[list[str]]:
    """The documents in `count` shares of about equal work (a character at a
    time re-renders every prefix: the work grows as the length squared)."""
    out: list[list[str]] = [[] for _ in range(count)]
    for doc in sorted(documents, key=len, reverse=True):
        min(out, key=lambda share: sum(len(d) ** 2 for d in share)).append(doc)
    return out


def test_incremental_rendering_matches_rendering_the_whole_answer(
    live_server_url, page, login, conversation, alice
):
    open_conversation(page, login, live_server_url, conversation, alice)
    other = page.context.new_page()  # its own renderer process: a second core
    other.goto(page.url)
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    pages = [page, other]
    sizes = [1, 2, 3, 5, 8, 13, 64]
    # Started on both pages at once; each result is awaited afterwards.
    for tab, docs in zip(pages, shares(DOCUMENTS, len(pages)), strict=True):
        tab.evaluate(
            f"(args) => {{ window.__compared = ({COMPARE_RENDERINGS})(args); }}",
            [docs, sizes],
        )
    failures = [f for tab in pages for f in tab.evaluate("() => window.__compared")]
    assert failures == []
    assert sum(map(len, shares(DOCUMENTS, len(pages)))) == len(DOCUMENTS)


# Streams a paragraph a character at a time; its text, its child nodes, and how
# many characters were appended to the text node it ends with (not rendered).
STREAM_PARAGRAPH = r"""async (text) => {
  const { IncrementalMarkdown } = await import("/static/chat/markdown.js");
  const renderer = new IncrementalMarkdown(document.createElement("div"));
  let appended = 0;
  for (const c of text) {
    const before = renderer.tail?.querySelector("p")?.lastChild;
    renderer.append(c);
    if (before && before === renderer.tail.querySelector("p").lastChild) appended++;
  }
  const p = renderer.tail.querySelector("p");
  return [p.textContent, [...p.childNodes].map((n) => n.nodeType), appended];
}"""


def test_a_long_paragraph_streams_by_appending_to_its_text(
    live_server_url, page, login, conversation, alice
):
    # A Chinese answer is often one paragraph of thousands of characters: each
    # token is appended to the paragraph's text, not rendered again with it
    # (static/chat/markdown.js, `appendText`).
    open_conversation(page, login, live_server_url, conversation, alice)
    text = "这是一个很长的中文段落，模型一个字一个字地写出来，没有空格。" * 60
    shown, nodes, appended = page.evaluate(STREAM_PARAGRAPH, text)
    assert shown == text
    assert nodes == [3]  # one text node
    # (The first characters start the paragraph: rendered, not appended.)
    assert appended >= len(text) - 2


LAYOUT_DOCUMENT = """## Heading one

First paragraph with **bold** and `code`.
Second line of the same paragraph.

- item a
- item b

1. one
2. two

```python
x = 1
```

| a | b |
|---|---|
| 1 | 2 |

> quoted text

### Heading two
Paragraph right under a heading.

Final paragraph.
"""

# Read after the browser's next rendering update: a block frozen since the last
# one is sized by its content-visibility placeholder (static/chat/chat.css) until
# then, and a synchronous read sees that, not what is painted.
BLOCK_POSITIONS = """async () => {
  await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
  const answer = document.querySelector("article.assistant .answer");
  const top = answer.getBoundingClientRect().top;
  const blocks = answer.querySelectorAll("p, h2, h3, li, pre, table, blockquote");
  return [...blocks].map((e) => {
    const box = e.getBoundingClientRect();
    return [e.tagName, Math.round(box.top - top), Math.round(box.height)];
  });
}"""


def test_a_streamed_answer_is_laid_out_as_the_server_renders_it(
    live_server_url, page, login, conversation, alice, simulator
):
    """Frozen blocks space themselves like one document: what was streamed looks
    the same as the server's rendering of the stored answer after a reload."""
    simulator.config.tps = 200
    simulator.config.think_tokens = 0
    simulator.config.answer_text = LAYOUT_DOCUMENT
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    wait_until_done(page)
    streamed = page.evaluate(BLOCK_POSITIONS)
    page.reload()
    wait_until_done(page)
    assert page.evaluate(BLOCK_POSITIONS) == streamed
