"""Text from traced machines (paths, process names, host names) made safe to print.

A terminal acts on control characters (an escape sequence in a process name can rewrite the
screen or the title), and a name that is not UTF-8 reaches Python as lone surrogates, which no
terminal encoding can write. Both are shown as Python escapes instead: `\\x1b`, `\\udcff`.
"""

from __future__ import annotations

import re

# C0 and C1 controls except tab and newline, DEL, and the lone surrogates of undecodable bytes
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """text with every control character and undecodable byte written as its escape."""
    return _UNPRINTABLE.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def json_printable(text: str) -> str:
    """JSON text from json.dumps (ensure_ascii) safe to print: DEL, the one control character
    ensure_ascii leaves as is, becomes its JSON escape (the text still parses to the same value)."""
    return text.replace("\x7f", "\\u007f")
