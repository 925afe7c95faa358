"""The secret-kind corpus is redacted and the look-alikes survive (issue 14, item 2), and so is
the independent gitleaks corpus, wherever a secret sits in a log (issue 31)."""

from __future__ import annotations

import json

import pytest

from opencode_restore.redact import Redactor, redact, redact_value

from .corpus import LOOK_ALIKES, Case, secret_cases
from .gitleaks_corpus import load_samples
from .gitleaks_corpus import look_alikes as gitleaks_look_alikes

CASES = secret_cases()


def test_the_corpus_covers_more_than_a_hundred_kinds() -> None:
    assert len({c.kind for c in CASES}) >= 100


@pytest.mark.parametrize("case", CASES, ids=[c.kind for c in CASES])
def test_secret_kind_is_redacted(case: Case) -> None:
    out, count = redact(case.text)
    assert case.secret not in out
    assert count >= 1
    assert redact(out) == (out, 0)


def test_secret_kinds_are_redacted_inside_json_strings() -> None:
    # Raw log lines (log search results, hook.log) hold the text JSON-encoded: line
    # breaks are `\n`, quotes `\"`. The decoded text is what the pipeline redacts; this
    # second form is the fallback, held to the 97 %.
    missed = []
    for case in CASES:
        encoded = json.dumps({"type": "tool_use", "input": {"content": case.text + "\nNEXT=1"}})
        out = Redactor().redact(encoded)
        if case.secret in out or case.secret.replace("\n", "\\n") in out:
            missed.append(case.kind)
    assert len(missed) <= len(CASES) * 0.03, missed


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_survives(text: str) -> None:
    assert redact(text) == (text, 0)


# --- issue 31: the independent corpus (one sample per gitleaks rule), wherever it sits ----------

GITLEAKS = load_samples()


def _placed(text: str, secret: str) -> dict[str, str]:
    """The string the redactor gets when the sample sits in each place of an agent log."""
    return {
        "plain": text,
        "echo in a Bash command": f'echo "{text}" >> notes.txt',
        "heredoc": f"cat > creds.txt <<'EOF'\n{text}\nEOF",
        "quoted argument": f"deploy --note '{text}' --dry-run",
        "JSON in a string": json.dumps({"note": text}),
        "JSON in JSON": json.dumps(json.dumps({"note": text})),
        "URL password": f"git clone https://deploy:{secret}@example.com/r.git",
        "URL query": f"curl 'https://api.example.com/v1?access_token={secret}&page=2'",
    }


def _held(out: str, secret: str) -> bool:
    once = json.dumps(secret)[1:-1]
    return secret in out or once in out or json.dumps(once)[1:-1] in out


def test_every_gitleaks_rule_has_a_sample() -> None:
    assert len({s.rule for s in GITLEAKS}) == 221


def test_the_gitleaks_corpus_is_redacted_in_every_placement() -> None:
    missed: dict[str, list[str]] = {}
    for sample in GITLEAKS:
        for placement, text in _placed(sample.text, sample.secret).items():
            if _held(Redactor().redact(text), sample.secret):
                missed.setdefault(placement, []).append(sample.rule)
        fields = {sample.field: sample.secret, "description": "store it"}
        if _held(json.dumps(redact_value(fields, Redactor().redact)), sample.secret):
            missed.setdefault("named tool field", []).append(sample.rule)
    # Every kind in plain text; the 97 % wherever it sits (what is left is a
    # sample that breaks its placement: a `user:pass` with quotes inside `echo "…"`).
    assert "plain" not in missed, missed["plain"]
    for placement, rules in missed.items():
        assert len(rules) <= len(GITLEAKS) * 0.03, (placement, rules)


@pytest.mark.parametrize("text", gitleaks_look_alikes())
def test_gitleaks_look_alikes_survive_every_placement(text: str) -> None:
    for placement, placed in _placed(text, text).items():
        if placement.startswith("URL"):
            continue  # a look-alike is prose, not a URL part
        assert Redactor().redact(placed) == placed, placement
    fields = {"description": text}
    assert redact_value(fields, Redactor().redact) == fields
