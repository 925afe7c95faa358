"""The timeline scanner: global ``[M#]`` numbering and compaction-aware span extraction."""

from opencode_restore.timeline.extract import TimelineMessages, span_segments, timeline_messages
from opencode_restore.timeline.numbering import (
    Citations,
    ExtractReferencesFn,
    MessagesAsStrFn,
    Numbering,
    Reference,
    message_numbering,
    messages_as_str,
)
from opencode_restore.timeline.preprocess import MessagesPreprocessor
from opencode_restore.timeline.render import message_as_str

__all__ = [
    "Citations",
    "ExtractReferencesFn",
    "MessagesAsStrFn",
    "MessagesPreprocessor",
    "Numbering",
    "Reference",
    "TimelineMessages",
    "message_as_str",
    "message_numbering",
    "messages_as_str",
    "span_segments",
    "timeline_messages",
]
