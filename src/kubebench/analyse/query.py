"""The runs table's filter language: ``params.batch_size >= 32 and metrics.images_per_sec > 1000 and
labels.version = "1.4.2"``.

Grammar (keywords in any case)::

    expr   := term ("or" term)*
    term   := factor ("and" factor)*
    factor := "not" factor | "(" expr ")" | field OP value
    field  := (params | metrics | labels | tags | env | experiment) "." name   (name may hold dots)
    OP     := = == != < <= > >= ~        (~: contains, case-insensitive)
    value  := number | "text" | 'text' | word (1.4.2 is a word: it is not a number)

``(`` and ``not`` nest at most :data:`MAX_DEPTH` levels: the parser and the predicate it returns
recurse once per level, and a query is read from an unauthenticated request.

A field a row lacks makes its comparison false. Numbers compare as numbers; ``<``-style operators on
text compare text. Pure: :func:`parse` returns a predicate over rows (``{"params": {…}, "metrics": {…}, …}``);
a malformed query is a SpecError that says where.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError

SECTIONS = ("params", "metrics", "labels", "tags", "env", "experiment")
_TOKEN = re.compile(r"""\s*(?:(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
                        |(?P<op>==|!=|<=|>=|=|<|>|~)|(?P<paren>[()])|(?P<word>\w[\w.\-:/]*))""", re.X)

#: Levels of ``(`` and ``not`` one inside another (real queries use two or three).
MAX_DEPTH = 32

#: A row of the results table: its sections (``params``, ``metrics`` …) by name, ``tags`` a list.
Row = Mapping[str, Any]
Predicate = Callable[[Row], bool]


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    column: int


def _tokens(text: str) -> list[_Token]:
    found, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            column = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise SpecError(f"invalid query at column {column}: unexpected {text[pos:].strip()[:10]!r}")
        kind = match.lastgroup or ""
        found.append(_Token(kind, match.group(kind), match.start(kind) + 1))
        pos = match.end()
    return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens, self.i, self.text, self.depth = _tokens(text), 0, text, 0

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def is_word(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text.lower() == word

    def fail(self, expected: str) -> SpecError:
        token = self.peek()
        where = f"column {token.column}, at {token.text!r}" if token else "the end"
        return SpecError(f"invalid query at {where}: expected {expected}")

    def expr(self) -> Predicate:
        parts = [self.term()]
        while self.is_word("or"):
            self.i += 1
            parts.append(self.term())
        return parts[0] if len(parts) == 1 else (lambda row: any(p(row) for p in parts))

    def term(self) -> Predicate:
        parts = [self.factor()]
        while self.is_word("and"):
            self.i += 1
            parts.append(self.factor())
        return parts[0] if len(parts) == 1 else (lambda row: all(p(row) for p in parts))

    def factor(self) -> Predicate:
        token = self.peek()
        if token is None:
            raise self.fail("a comparison such as params.batch_size >= 32")
        if self.is_word("not"):
            self.i += 1
            inner = self.nested(self.factor)
            return lambda row: not inner(row)
        if token.kind == "paren" and token.text == "(":
            self.i += 1
            inner = self.nested(self.expr)
            closing = self.peek()
            if closing is None or closing.text != ")":
                raise self.fail("')'")
            self.i += 1
            return inner
        return self.comparison()

    def nested(self, parse: Callable[[], Predicate]) -> Predicate:
        """``parse()`` one level deeper; SpecError at the token that goes past :data:`MAX_DEPTH`."""
        if self.depth >= MAX_DEPTH:
            token = self.tokens[self.i - 1]
            raise SpecError(f"invalid query at column {token.column}: '(' and 'not' nest more than "
                            f"{MAX_DEPTH} levels deep")
        self.depth += 1
        try:
            return parse()
        finally:
            self.depth -= 1

    def comparison(self) -> Predicate:
        field = self.peek()
        section, _, name = field.text.partition(".") if field and field.kind == "word" else ("", "", "")
        if section not in SECTIONS or not name:
            raise self.fail(f"a field: {' | '.join(SECTIONS)} then '.' and a name (e.g. metrics.images_per_sec)")
        self.i += 1
        op = self.peek()
        if op is None or op.kind != "op":
            raise self.fail("an operator (= != < <= > >= ~)")
        self.i += 1
        value = self.peek()
        if value is None or value.kind not in ("num", "str", "word"):
            raise self.fail(f"a value after {op.text!r}")
        self.i += 1
        return _compare(section, name, op.text, _value(value))


def _value(token: _Token) -> str:
    """The value as written, a quoted text unquoted. A number stays text too: :func:`_holds` reads it as a
    number where it compares numbers, and ``~`` then looks for ``50`` as typed (in ``resnet50``), not ``50.0``."""
    if token.kind == "str":
        return re.sub(r"\\(.)", r"\1", token.text[1:-1])
    return token.text


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _compare(section: str, name: str, op: str, wanted: object) -> Predicate:
    def test(row: Row) -> bool:
        values = row.get(section) or {}
        if section == "tags":  # tags are a list: tags.any = x / tags.any ~ x
            return any(_holds(t, op, wanted) for t in values)
        if name not in values:
            return False
        return _holds(values[name], op, wanted)

    return test


def _holds(have: object, op: str, wanted: object) -> bool:
    if op == "~":
        return str(wanted).lower() in str(have).lower()
    a: float | str | None
    b: float | str | None
    a, b = _number(have), _number(wanted)
    if a is None or b is None:
        a, b = (str(have).lower() if isinstance(have, bool) else str(have)), str(wanted)
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    # both numbers or both text (above), so no comparison here can raise
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]  # type: ignore[operator]


def parse(text: str) -> Predicate:
    """A predicate over rows from a query; an empty query keeps every row."""
    if not text.strip():
        return lambda row: True
    parser = _Parser(text)
    predicate = parser.expr()
    if parser.peek() is not None:
        raise parser.fail("'and', 'or' or the end of the query")
    return predicate
