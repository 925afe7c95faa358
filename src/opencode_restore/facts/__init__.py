"""The deterministic fact rules: what the log itself shows, read without a model.

One home for every rule that turns log text into a statement of the summary, so a
sentence of a summary leads to the rule that wrote it (and its tests, in tests/facts/):

- ``turn``: a turn's facts (request, files, commands and their outcomes, errors, what the
  text rules found), each tied to the ``M#`` label of the message that shows it. They go
  into every turn prompt as ground truth and are all the offline provider has.
- ``text``: rules over one message's words (a user's standing rules and reversals; an
  agent's decisions, ruled-out approaches, findings and questions).
- ``turn_summary``: a TURN SUMMARY written from one turn's facts.
- ``summary``: the SESSION SUMMARY written from all turns' facts, section by section.
- ``wording``: how a fact is worded and cited.
- ``statement``: whether a model's text states anything (the rules' value stands in
  for one that does not).

Every statement is log text or a fixed wording around it; nothing is invented, and a
rule that is not sure says nothing: a wrong statement is worse than a missing one.
"""

#: Which edition of the rules wrote a saved turn's facts and summaries: a saved journal of
#: another edition is not reused (``pipeline.resume.fingerprint``). Raise it with every
#: change to what the rules write.
RULES_VERSION = 9
