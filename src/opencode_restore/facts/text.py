"""Text rules over the words of a log: what a user asked to hold, what the agent decided,
ruled out, found or asked. Each rule reads one message's text and returns the sentences
that state the thing, verbatim; nothing is invented. The offline provider builds its
summary from them and every LLM turn prompt carries them as parsed facts.

The rules are general phrasings of English work talk (imperatives such as "never",
"must", "keep"; "instead of", "rather than", "because" near a choice; "ruled out",
"doesn't work"; "found", "noticed"), never the strings of one session.
"""

from __future__ import annotations

import functools

import regex

#: Longest sentence a rule returns; a longer one is cut at a word.
SENTENCE_CHARS = 240
DECISION_CHARS = 150
#: A ruled-out approach, a finding or a question: what and why, in one long sentence.
LONG_CHARS = 180
REASON_CHARS = 120
#: Meaningful words a user's message shares with a question when it answers it.
ANSWER_WORDS = 2
#: A reply this short answers the question before it ("try approach A", "fix all").
SHORT_REPLY_WORDS = 15
#: A sentence longer than this is a task description, not a standing rule.
RULE_CHARS = 300

# A sentence ends at . ! ? (not inside a dotted name such as store.py or 0.2) followed by
# space, or at a line break; list markers and numbered items open a new one.
_SPLIT = regex.compile(r"(?<=[.!?])\s+(?=[^a-z\s])|\s*\n+\s*(?:[-*•]\s+)?|\s+(?=\(\d\)\s)")
_WORDS = regex.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")

_CONSTRAINT = regex.compile(
    r"\b(?:never|always|must|mustn't|don't|do not|no longer|keep(?! \w+ing\b)|stays?"
    r"|should(?:n't| not)?|make sure|ensure|avoid|rules?|prefer|required?)\b",
    regex.IGNORECASE,
)
_FENCE = regex.compile(r"```.*?(?:```|\Z)", regex.S)  # a fenced block of code
# Who a constraint word is said of when the sentence states a fact instead of ruling.
_SUBJECTS = frozenset(
    [
        "i",
        "it",
        "this",
        "that",
        "he",
        "she",
        "they",
        "there",
        "which",
        "what",
        "who",
        "it's",
        "that's",
        "everything",
        "nothing",
    ]
)
_COMMENT_MARKS = ("//", "/*", "#", "--", "* ", "<!--")
_CLAUSE = regex.compile(r";\s+|\s+[—–]\s+")
# Words that scope an instruction to the current request: not a standing rule.
_FOR_NOW = regex.compile(r"\b(?:yet|for now|for the moment|this time|today)\b", regex.IGNORECASE)
# A sentence that opens the next piece of work ("Next: …", "Now …", "First, …") is a task,
# whatever "must" it holds: the request, not a standing rule.
_TASK_OPENER = regex.compile(r"^(?:next|now|then|first|finally|also|last one)\b[:,]?", regex.I)
_REVERSAL = regex.compile(
    r"\b(?:scratch|forget|drop|ignore|no longer|change of plan|instead of|cancel|revoke"
    r"|replace[sd]?|reverse)\b",
    regex.IGNORECASE,
)
_DECISION = regex.compile(
    r"\b(?:decision|decided|decide to|go with|going with|opt(?:ed)? for|chose|chosen"
    r"|I'll use|I will use|we'll use)\b",
    regex.IGNORECASE,
)
# "instead of" and "rather than" make a choice only next to an action of the agent's
# ("derive X instead of Y"), not in a comparison ("62^6 codes instead of 36^6").
_ALTERNATIVE = regex.compile(r"\b(?:instead of|rather than)\b", regex.IGNORECASE)
_ACTION = regex.compile(
    r"\b(?:I'll|I will|I'm|I am|we'll|we will|let's|use|using|make|making|switch|switching"
    r"|derive|deriving|go|store|storing|return|move|replace|track|tracking|write|keep)\b",
    regex.IGNORECASE,
)
# A next sentence gives the reason only when it says so at its start ("Reason: ...").
_REASON_START = regex.compile(
    r"(?:reason|because|since|otherwise|that way|this is because|without it)\b", regex.I
)
_REASON = regex.compile(r"\b(?:because|reason|since|so that|otherwise|without it)\b", regex.I)
_RULED_OUT = regex.compile(
    r"\b(?:rul(?:ed|ing|e) (?:it |that |this )?out|doesn't work|does not work|didn't work"
    r"|did not work|won't work|will not work|not viable|abandon(?:ed|ing)?|give up on"
    r"|gave up on|revert(?:ed|ing)|dead end)\b",
    regex.IGNORECASE,
)
_FINDING = regex.compile(
    # "I'm finding every reference" is work in progress, not a finding.
    r"(?<!\bI'm )(?<!\bI’m )(?<!\bI am )(?<!\bwe're )(?<!\bwe’re )"
    r"\b(?:finding(?! (?:its|the|a|an|all|out|where|which|who|every|each|any)\b)"
    r"|found that|found out|noticed"
    r"|turns out|it appears that|worth (?:noting|keeping in mind)|note that|caveat|silently)\b",
    regex.IGNORECASE,
)
_IDENTIFIER = regex.compile(
    r"\b(?:[A-Z][A-Z0-9]{1,9}-\d{1,6}|[A-Z][A-Z0-9]*_[A-Z0-9_]{2,})\b"  # PRIV-88, MAX_RETRIES
)
_STOP = frozenset(
    (  # noqa: SIM905  (a word list reads best as words)
        "that this with from have will would should could there their them they then than "
        "when what which into only also just more some such very each every your about "
        "after before over under been being make made keep need needs rule rules earlier "
        "later now never always "
    ).split()
)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace flattened, empty ones dropped."""
    return list(_split_sentences(text))


# Several rules read the same message one after the other (an agent's text: decisions,
# ruled-out approaches, findings, questions): it is split once. Two entries only: a
# message text can be megabytes, and a restore that empties summarized messages must
# not have them kept here.
@functools.lru_cache(maxsize=2)
def _split_sentences(text: str) -> tuple[str, ...]:
    # Box-drawing characters are a terminal's frame pasted with the text, not words.
    return tuple(
        flat
        for piece in _SPLIT.split(text)
        if (flat := _BULLET.sub("", " ".join(_BOX.sub(" ", piece).split())))
    )


_BOX = regex.compile(r"[\u2500-\u257f]")
#: A list item's marker: the item is the sentence ("- - `writer.go`: …" in a summary).
_BULLET = regex.compile(r"^[-*+•]\s+")


def clip(text: str, limit: int = SENTENCE_CHARS) -> str:
    """``text`` cut at a word to at most ``limit`` characters (an ellipsis marks a cut)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"


def content_words(text: str) -> set[str]:
    """Lower-cased words of four letters or more that carry meaning (for overlap tests)."""
    words = {p for w in _WORDS.findall(text) for p in [w, *w.split("-")] if len(p) >= 4}
    return {w.lower().rstrip("s") for w in words if w.lower() not in _STOP}


def _item(sentence: str) -> str:
    """A sentence as a list item: no enumerator of its own ("(1)", "2.") nor a trailing ";"."""
    plain: str = regex.sub(r"^\(?\d{1,2}[.)]\s+", "", sentence)
    return plain.rstrip(";,")


def _ruling(clause: str) -> bool:
    """True when a constraint word of ``clause`` is an instruction, not a statement about
    what someone does ("I don't see a prompt", "it should work")."""
    for m in _CONSTRAINT.finditer(clause):
        before = clause[: m.start()].split()[-1:]
        if not (before and before[0].lower() in _SUBJECTS):
            return True
    return False


def constraints(user_text: str) -> list[str]:
    """Standing rules and preferences in a user's message: imperative clauses with a
    constraint word, not questions, not scoped to this request ("yet", "for now"), not
    code (a fenced block, a comment line) pasted with the message. A long sentence is
    read clause by clause (";", " — "): rules often close a pasted task description."""
    out = []
    for s in sentences(_FENCE.sub(" ", user_text[:20_000])):
        if s.startswith(_COMMENT_MARKS) or _TASK_OPENER.match(s):
            continue
        for clause in _CLAUSE.split(s) if len(s) > RULE_CHARS else [s]:
            if (
                _ruling(clause)
                and not clause.endswith(("?", ":"))  # a question, or the lead-in of a list
                and not _FOR_NOW.search(clause)
                and not _REVERSAL.search(clause)  # withdrawing a rule is not one
                and len(clause) <= RULE_CHARS  # a long one describes a task, not a rule
            ):
                out.append(clip(_item(clause)))
    return out


def reversals(user_text: str) -> list[str]:
    """Sentences of a user's message that withdraw or replace an earlier rule."""
    return [clip(s) for s in sentences(user_text) if _REVERSAL.search(s)]


def reverses(reversal: str, earlier: str) -> bool:
    """True when what ``reversal`` withdraws (the words after its last reversal verb) names
    the subject of the ``earlier`` rule."""
    ends = [m.end() for m in _REVERSAL.finditer(reversal)]
    tail = reversal[ends[-1] :] if ends else reversal
    return bool(content_words(tail) & content_words(earlier))


# A choice still to be made is not a decision ("Needs a decision: A or B").
_UNDECIDED = regex.compile(
    r"\b(?:needs? (?:a |your )?decision|to decide|decide (?:whether|if|what|which|between)"
    r"|undecided|your call|up to you)\b",
    regex.I,
)


# Code names: `backticked`, camelCase / PascalCase with an inner capital, snake_case,
# dotted.names. Plain words are no names: a later "remove" would make everything stale.
_NAME = regex.compile(
    r"`([^`\s]{3,60})`|\b([a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|\w+_\w+|\w+\.\w+\.?\w*)\b"
)


def names(text: str) -> list[str]:
    """The code names a text mentions, in order, each once."""
    return list(dict.fromkeys(a or b for a, b in _NAME.findall(text)))


def decisions(text: str) -> list[tuple[str, str, list[str]]]:
    """(decision, reason, names) in an agent's text: a sentence naming a choice, the
    reason when it gives one (the same sentence, or the next one that says why), and the
    code names of the whole sentence (the decision itself may be cut before one)."""
    found: list[tuple[str, str, list[str]]] = []
    parts = sentences(text)
    for i, s in enumerate(parts):
        choice = _DECISION.search(s) or (_ALTERNATIVE.search(s) and _ACTION.search(s))
        if not choice or s.endswith("?") or _UNDECIDED.search(s):
            continue
        reason = ""
        nxt = parts[i + 1] if i + 1 < len(parts) else ""
        if not _REASON.search(s) and _REASON_START.match(nxt):
            reason = regex.sub(r"^(?:reason|because)\s*:?\s*", "", nxt, flags=regex.I)
            reason = clip(reason, REASON_CHARS)
        found.append((clip(s, DECISION_CHARS), reason, names(s)))
    return found


def ruled_out(text: str) -> list[str]:
    """Approaches an agent's text rules out; a short marker sentence ("Ruling that out.")
    comes with the sentence before it, which says what and why."""
    parts = sentences(text)
    out = []
    for i, s in enumerate(parts):
        if _RULED_OUT.search(s):
            if len(s) < 40 and i > 0:
                s = f"{parts[i - 1]} {s}"
            out.append(clip(s, LONG_CHARS))
    return out


# An agent narrating what it does or will do ("I'll record each issue as a finding",
# "I'm staging …") states no finding.
_NARRATION = regex.compile(
    r"^(?:I(?:'|’)ll|I will|I(?:'|’)m|I am|let me|now I|next,? I)\b", regex.I
)


def findings(text: str) -> list[str]:
    """What an agent's text says it found out (a fact about the code, data or a run)."""
    return [
        clip(s, LONG_CHARS)
        for s in sentences(text)
        if _FINDING.search(s) and not _NARRATION.match(s)
    ]


def questions(text: str) -> list[str]:
    """Questions an agent's text puts to the user."""
    return [clip(s, LONG_CHARS) for s in sentences(text) if s.endswith("?")]


_NUMBERED = regex.compile(r"(?m)^\s*\(?\d{1,2}[.)]\s+\S")


def _shared(a: set[str], b: set[str]) -> int:
    """Words of ``a`` that ``b`` holds, whole or inside a compound name (``render`` in
    ``rendertrusted``)."""
    return sum(1 for w in a if any(w == x or (len(w) >= 5 and w in x) for x in b))


def answers(user_text: str, question: str) -> bool:
    """True when a user's next message takes ``question`` up, so it is no longer open: it
    opens with a yes or a no, it is a short reply ("do stack", "fix both": real users
    answer so, without the question's words), it asks back, or it shares meaningful words
    with the question. Only a long request on another subject leaves it open."""
    opener = user_text.lstrip().lower()
    if regex.match(r"(?:yes|no|yep|yeah|nope|sure|ok|okay|go with|go ahead|option)\b", opener):
        return True
    if len(user_text.split()) <= SHORT_REPLY_WORDS or "?" in user_text[:500]:
        return True
    if len(_NUMBERED.findall(user_text[:5000])) >= 2:
        return True  # answers given by number ("1. …", "2. …") take up numbered questions
    words = content_words(user_text[:5000])
    return _shared(content_words(question), words) >= ANSWER_WORDS


def identifiers(user_text: str) -> list[str]:
    """Distinctive names a user introduced (error and ticket codes, constant-style keys)."""
    seen: list[str] = []
    for m in _IDENTIFIER.finditer(user_text):
        if m.group(0) not in seen:
            seen.append(m.group(0))
    return seen


# Where a pasted error starts in its line: an exception or error named ("Uncaught
# ContextError: …", "sqlite3.IntegrityError: …", "error: …" at the line's start), an HTTP
# failure status, a parser's complaint about bad input. A traceback is known by its
# exception line, which names it.
_PASTED_ERROR = regex.compile(
    r"\b(?:Uncaught|Unhandled)\s+(?:\(in promise\)\s+)?\w+"
    r"|(?:\b\w+\.)*\b[A-Z]\w*(?:Error|Exception)(?:\s*\[[^\]]*\])?:\s*\S"
    r"|^\W{0,3}(?:error|fatal|panic)(?:\[\w+\])?:\s*\S|npm ERR!"
    r"|\bHTTP(?:/[\d.]+)? [45]\d\d\b|\bstatus(?: code)? [45]\d\d\b"
    r"|Unexpected token\b|\bis not valid JSON\b|\bpermission denied\b",
)
# A stack frame ("at f (file.js:1:2)", "File "x.py", line 3"): where, not what.
_FRAME = regex.compile(r"^\s*(?:at\s|File \"|\^|~)")
#: A pasted error line kept in full up to this length.
ERROR_CHARS = 200


def pasted_errors(user_text: str) -> list[str]:
    """Error lines a user pasted into a message (a console error, a traceback's exception,
    a failing CI step), from where the error starts, at most two, each once: what the user
    saw go wrong."""
    found: list[str] = []
    for line in user_text[:20_000].splitlines():
        if _FRAME.match(line):
            continue
        hit = _PASTED_ERROR.search(line)
        if hit is None:
            continue
        flat = " ".join(line[hit.start() :].split())
        if len(flat) < 12 or any(flat in f or f in flat for f in found):
            continue
        found.append(clip(flat, ERROR_CHARS))
        if len(found) == 2:
            break
    return found


_LINK = regex.compile(r"\[([^\]\n]{1,200})\]\([^)\s]{1,500}\)")
_MARKUP_LINE = regex.compile(r"^\s*(?:#+\s.*|\*\*[^*]{1,80}\*\*:?|[-*_]{3,}|\|.*\|)\s*$")
_EMPHASIS = regex.compile(r"\*\*|__")
#: The agent's account of a turn is this long at least, when its message is.
ACCOUNT_MIN = 40
ACCOUNT_CHARS = 100
#: The last turn's account says where the work ended: it may say more.
LAST_ACCOUNT_MIN = 160
LAST_ACCOUNT_CHARS = 240
#: Sentences shorter than this ("Done.", "Both fixed.") say little on their own.
_TERSE = 15


def _inline(block: regex.Match[str]) -> str:
    """A one-line code block as inline code (an error it quotes); a longer one is left out."""
    body = block.group(0).strip("`").partition("\n")[2].strip() or ""
    return f" `{body}` " if body and "\n" not in body and len(body) <= 120 else " "


# The closing message is read twice (its short and its long account) right after the
# decision rules read it: one entry is enough, two keep a huge text from being held long.
@functools.lru_cache(maxsize=2)
def plain(text: str) -> str:
    """Markdown as plain prose: no code blocks, headings, tables or rules; links as their
    text; no emphasis marks."""
    text = _FENCE.sub(_inline, text[:20_000])
    lines = [ln for ln in text.splitlines() if not _MARKUP_LINE.match(ln)]
    linked: str = _LINK.sub(r"\1", "\n".join(lines))
    return str(_EMPHASIS.sub("", linked))


_ENDS = frozenset(".!;)`\"'”…")


def account(text: str, least: int = ACCOUNT_MIN, most: int = ACCOUNT_CHARS) -> str:
    """What an agent's closing message says the turn came to: its opening sentences as
    prose (at least ``least`` characters of them when it has them), questions left out
    (they are listed as questions), cut at a word past ``most``."""
    said: list[str] = []
    for s in sentences(plain(text)):
        if s.endswith("?") or (len(s) < _TERSE and not said and len(text) > least):
            continue
        said.append(_item(s))
        # A line that stops mid-sentence ("… errors with", "… documented in:") goes on.
        if sum(len(x) for x in said) >= least and s[-1] in _ENDS:
            break
    told = clip(" ".join(said), most)
    return told if len(told) >= _TERSE * 2 else ""  # "Done." says nothing the turn does not
