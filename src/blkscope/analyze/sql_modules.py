"""Read the SQL modules of a package's sql/ folder: what each declares it includes, and each
object it creates with its columns (name, type, doc) or parameters.

A module is one `.sql` file (sql/NAME.sql, or sql/macros/NAME.sql for macros); its statements
end with `;`:

    INCLUDE name, ...;            -- modules and tables the module reads
    INCLUDE IF EXISTS name, ...;  -- tables only some captures bring: without one, the module is
                                  -- left out (not an error)
    -- What the object is (its doc: the comment lines right above CREATE).
    CREATE VIEW name(             -- or TABLE: computed once into a table of the connection
        column TYPE,              -- the column's doc (a comment line below continues it)
        ...
    ) AS
    SELECT ...;
    CREATE VIEW name(LIKE table) AS ...   -- its rows are the stored table `table`, whose
                                          -- columns and docs schemas/ declares
    CREATE MACRO name(param, ...) RETURNS TABLE(column TYPE, ...) AS TABLE SELECT ...;
    CREATE MACRO name(param, ...) RETURNS TYPE AS expression;

Each `param` carries its doc like a column. A private object's name starts with `_` and lives
in schema `internal` (`internal._bio_groups`), which the SQL writes out: nothing is renamed.
The declarations are what DuckDB is told (the columns become COMMENT ON COLUMN); the tests hold
them against what DuckDB returns. The fleet's views use the same form and also run on Spark,
which is given only their bodies.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

# The schema of private objects: `SHOW TABLES` and a user's eye see only the public ones.
INTERNAL = "internal"


class SqlModuleError(ValueError):
    """A module file that does not follow the form above (a bug of the package, not input)."""


@dataclass(frozen=True)
class Column:
    """A declared column: of an object's result (its SQL type), of a stored table (its Arrow
    type, as Dataset.tables lists them) or a parameter of a macro (type "")."""

    name: str
    type: str
    doc: str


@dataclass(frozen=True)
class SqlObject:
    """One CREATE of a module."""

    kind: str  # "view", "table" or "macro"
    name: str  # as created and queried: `internal._x` for a private one
    doc: str
    columns: tuple[Column, ...]  # () for a scalar macro or a LIKE declaration
    body: str  # the SELECT (or a scalar macro's expression) after AS
    params: tuple[Column, ...] = ()
    like: str | None = None  # the stored table whose columns it returns
    returns: str | None = None  # a scalar macro's type

    @property
    def private(self) -> bool:
        return self.name.startswith(f"{INTERNAL}.")

    @property
    def is_table_macro(self) -> bool:
        return self.kind == "macro" and self.returns is None

    def statement(self) -> str:
        """The DuckDB statement that creates it (once: never OR REPLACE)."""
        if self.kind == "macro":
            params = ", ".join(p.name for p in self.params)
            table = " TABLE" if self.is_table_macro else ""
            return f"CREATE MACRO {self.name}({params}) AS{table}\n{self.body}"
        return f"CREATE {self.kind.upper()} {self.name} AS\n{self.body}"


@dataclass(frozen=True)
class SqlModule:
    """One sql file: what it includes and what it creates, in order."""

    name: str
    includes: tuple[str, ...]  # every name it reads, optional ones included
    optional: tuple[str, ...]  # the INCLUDE IF EXISTS names
    objects: tuple[SqlObject, ...]

    @property
    def main(self) -> SqlObject:
        """The object a view module is named after (its only one)."""
        return self.objects[0]


def in_schema(module: str) -> str:
    """The name a module's object is created and queried by: `internal._x` for a private one."""
    return f"{INTERNAL}.{module}" if module.startswith("_") else module


@functools.cache
def sql_modules(package: str) -> dict[str, SqlModule]:
    """Every module of a package's sql/ and sql/macros/ folders by name, each after the
    modules it includes."""
    root = resources.files(package) / "sql"
    found: dict[str, SqlModule] = {}
    for folder, where in ((root / "macros", "sql/macros"), (root, "sql")):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.name.endswith(".sql"):
                name = path.name[:-4]
                found[name] = parse_module(
                    name, path.read_text(), f"{package}: {where}/{path.name}"
                )
    ordered: dict[str, SqlModule] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join((*path, name))
            raise SqlModuleError(f"{package}: modules include each other: {cycle}")
        if name in found and name not in ordered:
            for include in found[name].includes:
                visit(include, (*path, name))
            ordered[name] = found[name]

    for name in found:
        visit(name, ())
    return ordered


def parse_module(name: str, text: str, where: str = "") -> SqlModule:
    """A module from its file's text (where names the file in errors)."""
    includes: list[str] = []
    optional: list[str] = []
    objects: list[SqlObject] = []
    for doc, code in _statements(text, where):
        words = code.split()
        if words[:1] == ["INCLUDE"]:
            bare = " ".join(_code_of(line) for line in code.splitlines()).split(None, 1)[1]
            maybe = bare.startswith("IF EXISTS ")
            names = [n.strip() for n in bare.removeprefix("IF EXISTS ").split(",")]
            if not all(re.fullmatch(r"\w+", n) for n in names):
                raise SqlModuleError(f"{where}: cannot read {code!r}")
            includes += names
            optional += names if maybe else []
        elif words[:1] == ["CREATE"]:
            objects.append(_create(code, doc, where))
        else:
            raise SqlModuleError(f"{where}: expected INCLUDE or CREATE, got {code[:40]!r}")
    if not objects:
        raise SqlModuleError(f"{where}: creates nothing")
    if objects[0].kind != "macro" and (len(objects) > 1 or objects[0].name != in_schema(name)):
        raise SqlModuleError(f"{where}: a view module creates one object, {in_schema(name)}")
    return SqlModule(name, tuple(includes), tuple(optional), tuple(objects))


def _statements(text: str, where: str) -> Iterator[tuple[str, str]]:
    """(doc, code) of each `;`-ended statement: doc is the comment lines right above it."""
    doc: list[str] = []
    code: list[str] = []
    for line in text.splitlines():
        if not code and line.startswith("--"):
            doc.append(line[2:].strip())
            continue
        if not code and not line.strip():
            doc = []  # a blank line ends a comment that documents nothing
            continue
        code.append(line)
        if _code_of(line).rstrip().endswith(";"):
            body = "\n".join(code).rstrip()
            yield "\n".join(doc), body[: body.rindex(";")].rstrip()
            doc, code = [], []
    if code:
        raise SqlModuleError(f"{where}: a statement without its `;`: {code[0][:40]!r}")


def _code_of(line: str) -> str:
    """A line without its `--` comment (strings in the header and at line ends hold no --)."""
    return line.split("--", 1)[0]


_CREATE = re.compile(r"CREATE (VIEW|TABLE|MACRO) ((?:\w+\.)?\w+)\(")


def _create(code: str, doc: str, where: str) -> SqlObject:
    head = _CREATE.match(code)
    if head is None:
        raise SqlModuleError(f"{where}: cannot read {code.splitlines()[0]!r}")
    kind, name = head[1].lower(), head[2]
    if name.startswith(f"{INTERNAL}.") != name.split(".")[-1].startswith("_"):
        raise SqlModuleError(f"{where}: {name}: private names start with _ in {INTERNAL}.")
    items, rest = _list(code, head.end(), where)
    like = None
    if kind == "macro":
        params = tuple(Column(i[0], "", doc) for i, doc in items)
        returns = re.match(r"\s*RETURNS\s+(?:TABLE\s*\(|(\S.*?)\s+AS\b)", rest, re.S)
        if returns is None:
            raise SqlModuleError(f"{where}: {name}: RETURNS TABLE(...) or RETURNS TYPE AS")
        if returns[1] is None:
            start = len(code) - len(rest) + returns.end()
            columns, like, rest = _columns(code, start, where)
            body = _after(rest, "AS TABLE", where, name)
            return SqlObject(kind, name, doc, columns, body, params, like)
        body = rest[returns.end() :].strip()
        return SqlObject(kind, name, doc, (), body, params, None, returns[1])
    columns, like, rest = _columns(code, head.end(), where)
    return SqlObject(kind, name, doc, columns, _after(rest, "AS", where, name), (), like)


def _after(rest: str, keyword: str, where: str, name: str) -> str:
    found = re.match(rf"\s*{keyword}\b", rest)
    if found is None:
        raise SqlModuleError(f"{where}: {name}: expected `{keyword}`")
    return rest[found.end() :].strip()


def _columns(code: str, start: int, where: str) -> tuple[tuple[Column, ...], str | None, str]:
    """The declared columns opening at start (or the table of a `(LIKE table)`), and the
    code after them."""
    items, rest = _list(code, start, where)
    if len(items) == 1 and items[0][0][:1] == ["LIKE"]:
        return (), items[0][0][1], rest
    columns = []
    for words, doc in items:
        if len(words) < 2:
            raise SqlModuleError(f"{where}: column {' '.join(words)!r} without a type")
        columns.append(Column(words[0], " ".join(words[1:]), doc))
    return tuple(columns), None, rest


def _list(code: str, start: int, where: str) -> tuple[list[tuple[list[str], str]], str]:
    """The comma-separated items of the parenthesis opened just before start, each with the
    `--` comments on its lines (a comment alone on a line continues the item above), and the
    code after the closing parenthesis."""
    items: list[tuple[list[str], list[str]]] = []
    text, depth, offset = "", 0, start
    doc: list[str] = []  # the doc of the item being read
    for line in code[start:].split("\n"):
        part, _, comment = line.partition("--")
        for i, char in enumerate(part):
            if depth == 0 and char in ",)":
                if text.strip():
                    items.append((text.split(), doc))
                text, doc = "", []
                if char == ")":
                    if comment.strip() and items:
                        items[-1][1].append(comment.strip())
                    read = [(words, " ".join(d)) for words, d in items]
                    return read, code[offset + i + 1 :]
                continue
            depth += {"(": 1, ")": -1}.get(char, 0)
            text += char
        if comment.strip():
            # the item open on this line, else the one closed on it or above
            (doc if text.strip() or not items else items[-1][1]).append(comment.strip())
        text += " "
        offset += len(line) + 1
    raise SqlModuleError(f"{where}: a parenthesis that does not close")
