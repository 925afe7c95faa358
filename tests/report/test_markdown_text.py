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


def test_an_empty_code_span_is_nothing_so_later_backticks_stay_paired() -> None:
    # Found by the summary template's property test: an empty session id wrote "``", which
    # paired with the cwd's span and made the provider "[]()" a link.
    code = markdown_text.code
    line = f"session {code('')} · cwd {code('`')} · by {code('[]()')}"
    tokens = [c.type for t in _PARSER.parse(line) for c in t.children or []]
    assert "link_open" not in tokens
    assert tokens.count("code_inline") == 2


def test_table_cell_escapes_pipes() -> None:
    assert markdown_text.cell("a|b\nc") == "a\\|b c"


def test_plain_text_for_the_prompt_is_not_html_escaped() -> None:
    # Seen on a Codex Desktop log: the goal read "&lt;recommended_plugins> …" in the prompt.
    line = "<recommended_plugins> a & b &amp; `x<y` ![i](https://e/x.png)"
    # No entity: a tag, an autolink or an image is kept from rendering by a backslash
    # (a host may render the prompt, and an image there is a fetch); code spans as written.
    quoted = "<\\recommended_plugins> a & b &amp; `x<y` !\\[i](https://e/x.png)"
    assert markdown_text.plain(line) == quoted
    assert markdown_text.plain("one\ntwo\u202e three") == "one two three"


def test_plain_text_cannot_close_a_tag_or_open_a_block() -> None:
    # The host may wrap the injected context in a tag: log text must not close it.
    assert markdown_text.plain("a </system-reminder> b < /x>") == "a <\\/system-reminder> b <\\/x>"
    # A line of its own must not become a heading; a list item's text needs nothing.
    assert markdown_text.plain("# SYSTEM", line_start=True) == "\\# SYSTEM"
    assert markdown_text.plain("# SYSTEM") == "# SYSTEM"
    assert markdown_text.plain_quote("run\n\n## x </y>") == ["> run", ">", "> ## x <\\/y>"]


@settings(max_examples=200)
@given(st.text(alphabet="`\\<>&ab /=\n#-[]()!;", max_size=40))
def test_plain_never_writes_an_entity_or_a_closing_tag(value: str) -> None:
    out = markdown_text.plain(value, line_start=True)
    assert "\n" not in out
    assert not re.search(r"<\s*/", out)
    # Nothing is escaped into an entity: the text's own "&" and "<" are all there is.
    assert out.count("&") == value.count("&")
    assert out.count("<") == value.count("<")


def test_a_loose_backtick_does_not_pair_with_the_next_span_on_the_line() -> None:
    # Also found by the template's property test: agent "1`" then session "<a>" in the header.
    for value in ["1`", "1\\`", "a\\\\`b"]:
        line = f"agent {markdown_text.text(value)} · session {markdown_text.code('<a>')}"
        children = [c for t in _PARSER.parse(line) for c in t.children or []]
        assert [c.content for c in children if c.type == "code_inline"] == ["<a>"], value
        assert "html_inline" not in {c.type for c in children}, value


def test_a_line_that_opens_with_a_code_span_keeps_its_spans() -> None:
    # Seen in a real summary: a decision opening with `writer.go` had that backtick
    # escaped, which unpaired every span after it ("(`append\` to tail").
    line = markdown_text.text("`src/w.go`: `Set` → push (`append` to tail)")
    assert line == "`src/w.go`: `Set` → push (`append` to tail)"
    spans = [c.content for t in _PARSER.parse(line) for c in t.children or []]
    assert "append" in spans
    assert markdown_text.text("```py") == "\\`\\`\\`py"  # a fence is still kept from opening
