"""File maps made by hand, for captures taken without blkscope: `filefrag -v FILE...` output and
debugfs output (`icheck BLOCK...`, `ncheck INODE...`, `stat <INODE>`, `stats` or dumpe2fs for
the block size). Lines that fit none are errors: counted (lenient) or the first one raised
(--strict), never dropped silently."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from blkscope.errors import InputFormatError, ParseError
from blkscope.files.rows import extent_row
from blkscope.ingest.logs.textlog import numbered_lines, read_text, to_int, within

_FF_SIZE = re.compile(r"File size of (.*) is (\d+) \((\d+) blocks? of (\d+) bytes\)")
_FF_HEAD = re.compile(r"\s*ext:\s+logical_offset:\s+physical_offset:\s+length:")
# Each run of blanks has one place to go: `\s*(?:(\d+):)?\s*` split a long blank run three ways
# and took minutes on a line that did not match (the fuzz campaign's file-map hang).
_FF_ROW = re.compile(
    r"\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+):\s*(?:(\d+):\s*)?(\S*)"
)
_FF_TAIL = re.compile(r"(.*): (\d+) extents? found")
_FF_OTHER = re.compile(r"Filesystem type is: \w+|Filesystem cylinder groups approximately \d+")
_DF_BANNER = re.compile(r"debugfs \d+\.\d+.*")
_ICHECK_HEAD = re.compile(r"Block\s+Inode number")
_ICHECK_ROW = re.compile(r"(\d+)\t(\d+|<block not found>)")
_NCHECK_HEAD = re.compile(r"Inode\s+Pathname")
_NCHECK_ROW = re.compile(r"(\d+)\t(.*)")
_BLOCK_SIZE = re.compile(r"Block size:\s+(\d+)")
_JOURNAL_INODE = re.compile(r"Journal inode:\s+(\d+)")
FORMATS_HINT = (
    'pass `filefrag -v FILE...` output, or debugfs output: `debugfs -R "icheck BLOCK..." DEV`, '
    '`debugfs -R "ncheck INODE..." DEV` and `debugfs -R stats DEV` (for the block size)'
)


@dataclass
class HandMap:
    """What the hand-made maps say, before placement on a disk."""

    # filefrag: (path, file offset, fs byte, bytes, flags)
    extents: list[tuple[str, int, int, int, str]] = field(default_factory=list)
    owners: dict[int, int] = field(default_factory=dict)  # icheck: fs block -> inode
    names: dict[int, str] = field(default_factory=dict)  # ncheck: inode -> path
    block_size: int | None = None
    journal_inode: int | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)


def _block_size(where: str, no: int, text: str) -> int:
    """A filesystem block size: a power of two from 512 bytes to 1 MiB."""
    size = to_int(where, no, text, "block size")
    if size not in _BLOCK_SIZES:
        raise ParseError(
            where,
            no,
            f"block size {size} is not a filesystem block size "
            "(a power of two from 512 to 1048576)",
        )
    return size


_BLOCK_SIZES = {1 << n for n in range(9, 21)}


def _bad(hand: HandMap, where: str, no: int, line: str, reason: str, strict: bool) -> None:
    if strict:
        raise ParseError(where, no, reason, hint=FORMATS_HINT)
    hand.errors.append({"file": where, "line_no": no, "raw": line[:200], "reason": reason})


def read_hand_map(path: str, hand: HandMap, strict: bool) -> None:
    """Add one filefrag or debugfs output file to `hand`."""
    text = read_text(path)
    if _FF_SIZE.search(text):
        read_filefrag(path, text, hand, strict)
    elif any(p.search(text) for p in (_ICHECK_HEAD, _NCHECK_HEAD, _BLOCK_SIZE, _JOURNAL_INODE)):
        read_debugfs(path, text, hand, strict)
    else:
        raise InputFormatError(path, "not a file map", hint=FORMATS_HINT)


def read_filefrag(where: str, text: str, hand: HandMap, strict: bool) -> None:
    """Add the extents of `filefrag -v` output (in bytes, delalloc left out) to `hand`."""
    name: str | None = None
    unit = 0
    for no, line in numbered_lines(text, where):
        if not line or _FF_HEAD.match(line) or _FF_OTHER.fullmatch(line):
            continue
        if m := _FF_SIZE.fullmatch(line):
            name, unit = m[1], _block_size(where, no, m[4])
            hand.block_size = hand.block_size or unit
        elif (m := _FF_ROW.fullmatch(line)) and name is not None:
            first, phys, length = (to_int(where, no, m[i], w) for i, w in _FF_COLUMNS)
            if not _NOT_PLACED.intersection(m[8].split(",")):  # delalloc: not on disk yet
                logical = within(where, no, first * unit, "logical_offset")
                physical = within(where, no, phys * unit, "physical_offset")
                nbytes = within(where, no, length * unit, "length")
                hand.extents.append((name, logical, physical, nbytes, m[8]))
        elif (m := _FF_TAIL.fullmatch(line)) and m[1] == name:
            name = None
        else:
            why = (
                "an extent row before any 'File size of' line"
                if _FF_ROW.fullmatch(line)
                else ("not a filefrag -v line")
            )
            _bad(hand, where, no, line, why, strict)


_FF_COLUMNS = ((2, "logical_offset"), (4, "physical_offset"), (6, "length"))
_NOT_PLACED = {"unknown_loc", "delalloc", "inline", "tail_packed"}


def read_debugfs(where: str, text: str, hand: HandMap, strict: bool) -> None:
    """Add debugfs icheck/ncheck tables, the block size and the journal inode to `hand`."""
    table = None
    for no, line in numbered_lines(text, where):
        if not line or _DF_BANNER.fullmatch(line):
            continue
        if m := _BLOCK_SIZE.match(line):
            hand.block_size = _block_size(where, no, m[1])
        elif m := _JOURNAL_INODE.match(line):
            hand.journal_inode = to_int(where, no, m[1], "journal inode")
        elif _ICHECK_HEAD.fullmatch(line):
            table = "icheck"
        elif _NCHECK_HEAD.fullmatch(line):
            table = "ncheck"
        elif table == "icheck" and (m := _ICHECK_ROW.fullmatch(line)):
            if m[2] != "<block not found>":
                hand.owners[to_int(where, no, m[1], "block")] = to_int(where, no, m[2], "inode")
        elif table == "ncheck" and (m := _NCHECK_ROW.fullmatch(line)):
            # debugfs prints a file under / as //name
            hand.names.setdefault(to_int(where, no, m[1], "inode"), re.sub("^//", "/", m[2]))
        elif table is None and ":" in line:
            continue  # the rest of `stats` / dumpe2fs output: only the block size is needed
        else:
            _bad(hand, where, no, line, f"not a debugfs {table or 'icheck/ncheck'} line", strict)


def hand_rows(
    hand: HandMap,
    disk: tuple[int, int],
    partition_start: int,
    block_size: int | None,
) -> list[dict[str, Any]]:
    """file_extents rows of the hand-made maps, placed at partition_start on disk."""
    rows = [
        extent_row(
            disk,
            None,
            partition_start,
            inode=None,
            path=name,
            kind="data",
            file_offset=offset,
            fs_byte=phys,
            nbytes=length,
            flags=flags,
            source="filefrag",
        )
        for name, offset, phys, length, flags in hand.extents
    ]
    if not hand.owners:
        return rows
    size = block_size or hand.block_size
    if size is None:
        raise InputFormatError(
            "debugfs icheck",
            "icheck gives block numbers but nothing says how big a block is",
            hint="add `debugfs -R stats DEV` output, or pass --block-size",
        )
    for inode, first, count in _runs(hand.owners):
        if (first + count) * size >= 1 << 62:
            raise InputFormatError("debugfs icheck", f"block {first} lies past 2^62 bytes")
        journal = inode == hand.journal_inode
        path, kind = _SPECIAL_INODES.get(inode, (f"<inode {inode}>", "data"))
        if journal:
            path, kind = "<journal>", "journal"
        path = hand.names.get(inode, path)
        rows.append(
            extent_row(
                disk,
                None,
                partition_start,
                inode=inode,
                path=path,
                kind=kind,
                file_offset=None,
                fs_byte=first * size,
                nbytes=count * size,
                flags="",
                source="debugfs",
            )
        )
    return rows


# ext4's reserved inodes that ncheck does not name: the root folder and the resize inode
_SPECIAL_INODES = {2: ("/", "directory"), 7: ("<resize inode>", "metadata")}


def _runs(owners: dict[int, int]) -> list[tuple[int, int, int]]:
    """(inode, first block, count) for each run of consecutive blocks of one inode."""
    runs: list[tuple[int, int, int]] = []
    for block in sorted(owners):
        inode = owners[block]
        if runs and runs[-1][0] == inode and runs[-1][1] + runs[-1][2] == block:
            runs[-1] = (inode, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((inode, block, 1))
    return runs
