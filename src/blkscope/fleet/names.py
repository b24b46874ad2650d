"""Host names, capture ids and labels come from traced machines: checked before they become
folder names, and escaped wherever they are shown."""

from __future__ import annotations

import re

from blkscope.errors import InputFormatError, OptionError

# A partition value becomes a folder name and a hive `key=value` that DuckDB and Spark parse:
# no path separators, no '=' or '%' (Spark unescapes %XX in partition values), no leading dot
# (hidden: the writers' temp folders), nothing unprintable. DNS names and ids fit.
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,127}")
_LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
MAX_LABEL_VALUE = 256


def partition_value(what: str, value: str, where: str | None = None) -> str:
    """value when it can name a `what=` folder; an OptionError saying why not otherwise
    (located at where, default the option --what)."""
    if not _PART.fullmatch(value) or ".." in value:
        error = OptionError if where is None else InputFormatError
        raise error(
            where or f"--{what}",
            f"{value!r} cannot name a {what} partition: use 1-128 letters, digits, '_', '.', ':', '+' "
            "or '-', not starting with '.' or '-' and without '..'",
            hint=f"give the {what} a plain name, e.g. db-7",
        )
    return value


def label(spec: str) -> tuple[str, str]:
    """(key, value) of a `--label K=V`; an OptionError when the key is not a plain name or the
    value holds control characters."""
    key, sep, value = spec.partition("=")
    if not sep or not _LABEL_KEY.fullmatch(key):
        raise OptionError(
            "--label",
            f"{spec!r} is not KEY=VALUE with a plain KEY (letters, digits, '_', '.', '-')",
            hint="e.g. --label kernel=6.9 --label workload=broker",
        )
    if len(value) > MAX_LABEL_VALUE or not value.isprintable():
        raise OptionError(
            "--label",
            f"the value of {key!r} has control characters or more than {MAX_LABEL_VALUE} "
            "characters",
            hint="give a short printable value",
        )
    return key, value
