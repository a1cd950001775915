from __future__ import annotations

from html.parser import HTMLParser

import pytest

from chat.rendering import render_markdown


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
