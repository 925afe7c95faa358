"""Log and model text in the markdown: inert under a real CommonMark parser, code kept as is;
code spans and table cells."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from opencode_restore.report import markdown_text

#: The tags CommonMark itself makes from one inline paragraph (never any from the text).
_OWN_TAGS = re.compile(r"</?(?:p|code|em|strong)>")
_PARSER = MarkdownIt("commonmark")


def _rendered(text: str) -> str:
    return str(_PARSER.render(f"- {markdown_text.text(text)}\n"))


def _foreign_tags(html: str) -> list[str]:
    body = html.removeprefix("<ul>\n<li>").removesuffix("</li>\n</ul>\n")
    return list(re.findall(r"<[^>]*>", _OWN_TAGS.sub("", body)))


def test_a_command_in_a_code_span_is_shown_as_typed() -> None:
    html = _rendered("Ran `python3 - <<'EOF'` then <svg onload=alert(1)>")
    assert "<code>python3 - &lt;&lt;'EOF'</code>" in html  # the parser's escaping, once
    assert "&amp;lt;" not in html
    assert _foreign_tags(html) == []


def test_an_escaped_backtick_does_not_let_markup_out() -> None:
    for text in ["x \\`<svg onload=x>`", "`a` <b> `c<d>`", "``<i>`", "`` ` <s> ``"]:
        assert _foreign_tags(_rendered(text)) == [], text


@settings(max_examples=300)
@given(st.text(alphabet="`\\<>ab /=\n[]()!#*_&", max_size=40))
def test_no_text_makes_markup(text: str) -> None:
    html = _rendered(text)
    assert _foreign_tags(html) == [], (text, markdown_text.text(text), html)
    assert "<a " not in html
    assert "<img" not in html


def test_code_span_keeps_pipes_and_survives_backticks() -> None:
    assert markdown_text.code('grep -n "x" a.ts | head -30') == '`grep -n "x" a.ts | head -30`'
    # CommonMark strips one space a side.
    assert markdown_text.code("echo `date`") == "`` echo `date` ``"
    assert markdown_text.code("a\nb") == "`a b`"


def test_table_cell_escapes_pipes() -> None:
    assert markdown_text.cell("a|b\nc") == "a\\|b c"
