from __future__ import annotations

from html.parser import HTMLParser

import pytest

from chat.rendering.markdown import render_markdown


def test_markdown_renders_code_lists_and_tables():
    html = render_markdown(
        "# T\n\n- a\n- b\n\n```python\nx = 1\n```\n\n|a|b|\n|-|-|\n|1|2|"
    )
    assert "<h1>T</h1>" in html
    assert "<li>a</li>" in html
    assert '<code class="language-python">x = 1' in html
    assert "<table>" in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src=//evil></iframe>",
    ],
)
def test_model_output_cannot_carry_script(hostile):
    elements = Elements()
    elements.feed(render_markdown(hostile))
    assert not {"script", "iframe", "img"} & {tag for tag, _ in elements.found}
    for _, attrs in elements.found:
        for name, value in attrs:
            assert not name.startswith("on")
            assert not (value or "").strip().lower().startswith("javascript:")


class Elements(HTMLParser):
    """Every element of a fragment, with its attributes."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


LONG = "\n\n".join(
    f"Paragraph {i} with **bold**, `code` and a [link](https://example.com/{i})."
    for i in range(400)
)


async def test_a_long_answer_is_rendered_in_the_helper_process_the_same():
    from chat.rendering import markdown

    assert len(LONG) >= markdown.OFF_LOOP_CHARS
    await markdown.prerender(LONG)
    assert LONG in markdown._prerendered
    html = render_markdown(LONG)  # the template filter finds it ...
    assert LONG not in markdown._prerendered  # ... once
    assert html == render_markdown(LONG)  # and it is what inline rendering gives
    assert html.count("<strong>bold</strong>") == 400


async def test_a_short_answer_stays_inline():
    from chat.rendering import markdown

    await markdown.prerender("**short**")
    assert "**short**" not in markdown._prerendered


async def test_a_failed_helper_process_falls_back_to_inline_rendering():
    import os
    from concurrent.futures.process import BrokenProcessPool

    from chat.rendering import markdown

    await markdown.prerender(LONG)  # starts the helper process
    assert markdown._pool is not None
    crash = markdown._pool.submit(os._exit, 1)
    with pytest.raises(BrokenProcessPool):
        crash.result(timeout=30)
    markdown._prerendered.clear()
    await markdown.prerender(LONG)  # logged, not raised
    assert LONG not in markdown._prerendered
    assert markdown._pool is None  # a new one next time
    assert render_markdown(LONG).count("<strong>bold</strong>") == 400
    await markdown.prerender(LONG)
    assert LONG in markdown._prerendered


MATRIX = r"\begin{pmatrix} a_1 & b_2 \\ c_3 & *d* \end{pmatrix}"


@pytest.mark.parametrize(
    ("text", "source"),
    [
        (f"$${MATRIX}$$", f"$${MATRIX}$$"),
        (f"$$\n{MATRIX}\n$$", f"$${MATRIX}$$"),
        (f"\\[\n{MATRIX}\n\\]", f"\\[{MATRIX}\\]"),
        ("so $x_1 \\\\ y_2$ holds", "$x_1 \\\\ y_2$"),
        ("so \\(x_1 * y_2 * z\\) holds", "\\(x_1 * y_2 * z\\)"),
    ],
)
def test_math_keeps_its_tex_for_the_browser(text, source):
    """Markdown must not touch TeX: `\\\\` stays two backslashes, `_` and `*` stay
    TeX (the browser typesets the `math-source` spans with KaTeX)."""
    spans = MathSources()
    spans.feed(render_markdown(text))
    assert spans.found == [source]


def test_display_math_is_a_block_like_the_browsers():
    html = render_markdown(f"Before\n\n$$\n{MATRIX}\n$$\n\nAfter")
    assert '<div class="math-display"><span class="math-source">$$' in html
    assert html.startswith("<p>Before</p>") and html.rstrip().endswith("<p>After</p>")


@pytest.mark.parametrize(
    "text",
    ["it costs $5 and $10.", "a $ b $ c", r"escaped \$x\$ dollars", "`$x$` in code"],
)
def test_dollars_that_are_not_math_stay_text(text):
    spans = MathSources()
    spans.feed(render_markdown(text))
    assert spans.found == []


def test_math_cannot_carry_markup():
    html = render_markdown('$<img src=x onerror="alert(1)">$ and $$</span><script>$$')
    elements = Elements()
    elements.feed(html)
    assert {tag for tag, _ in elements.found} <= {"p", "span"}
    assert "&lt;img" in html and "&lt;script&gt;" in html


class MathSources(HTMLParser):
    """The text of every `math-source` element."""

    def __init__(self):
        super().__init__()
        self.found = []
        self.inside = False

    def handle_starttag(self, tag, attrs):
        if ("class", "math-source") in attrs:
            self.inside = True
            self.found.append("")

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.found[-1] += data
