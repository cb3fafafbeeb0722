"""The Jinja2 environment user templates render in: sandboxed, strict, and bounded in size and time.

Jinja's sandbox stops templates from reaching Python's internals, but not from asking for
gigabytes or hours: ``{{ 9**(9**9) }}`` computes a number of 800 million digits, ``'x' * 1.5e9``
allocates 1.5 GB, and nested loops run for ever. Here every operator, call and filter that can
make a value larger than its inputs checks the size of what it would make first (at most
``limits.TEMPLATE_CHARS`` characters or items, counted through nested lists), and every loop
iteration, call and operator of template code checks a deadline (``time_budget``: one budget for
all the renders of a plan). The checks are compiled into the template's code, so they hold under a
debugger or a coverage tracer too.
"""

from __future__ import annotations

import math
import re
import string
import time
from collections.abc import Iterator, Mapping
from functools import wraps
from typing import Any, TypeVar

from jinja2 import StrictUndefined, nodes
from jinja2.compiler import CodeGenerator
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .. import limits
from ..errors import TemplateLimit
from .budget import _local, chars_left, count_rendered, out_of_time, spending, too_much

#: Bits of an integer a template may make: more digits than Python prints (4,300) anyway.
MAX_INT_BITS = 16_384
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_T = TypeVar("_T")


def render_bounded(template: Any, context: Mapping[str, Any]) -> str:
    """Render a compiled template within the time budget in force (or a budget of its own) and the
    size limit on its output."""
    with spending():
        limit = _local.max_chars = limits.TEMPLATE_CHARS.value()  # read once: checks are many
        left = chars_left()  # what the plan's other renders left (None outside a plan)
        parts, size = [], 0
        try:
            for part in template.generate(context):
                size += len(part)
                if size > limit:
                    raise TemplateLimit(f"the rendered text is longer than {limit:,} characters (the limit; "
                                        f"{limits.TEMPLATE_CHARS.env} changes it)")
                if left is not None and size > left:
                    raise too_much()
                _check_time()
                parts.append(part)
        finally:
            _local.max_chars = None
    count_rendered(size)
    return "".join(parts)


def _check_time() -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise out_of_time()


def _max_chars() -> int:
    return getattr(_local, "max_chars", None) or limits.TEMPLATE_CHARS.value()


def _too_large(what: str) -> TemplateLimit:
    return TemplateLimit(f"{what} would be longer than {_max_chars():,} characters or items (the limit; "
                         f"{limits.TEMPLATE_CHARS.env} changes it)")


def weight(value: Any, cap: int | None = None) -> int:
    """Characters or items of a value, through nested lists and mappings (what its text would
    hold, roughly); counting stops above ``cap``."""
    cap = _max_chars() if cap is None else cap
    total, stack = 0, [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            total += 1 + item.bit_length() // 3
        elif isinstance(item, (list, tuple, set, frozenset, range)):
            total += len(item)
            if not isinstance(item, range):
                stack.extend(item)
        elif isinstance(item, Mapping):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            total += 1
    return total


def _check(value: _T, what: str) -> _T:
    if weight(value) > _max_chars():
        raise _too_large(what)
    return value


def _check_int(left: Any, right: Any, operator: str) -> None:
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
        return
    if operator == "**" and right > 0 and abs(left) > 1:
        bits = right * math.log2(abs(left))
    elif operator == "*":
        bits = left.bit_length() + right.bit_length()
    else:
        return
    if bits > MAX_INT_BITS:
        raise TemplateLimit(f"{left} {operator} {right} would have more than {MAX_INT_BITS:,} bits")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    _check_int(left, right, operator)
    if operator == "*":
        count, sequence = (right, left) if isinstance(right, int) else (left, right)
        if isinstance(count, int) and isinstance(sequence, (str, bytes, list, tuple)) and count > 0:
            if weight(sequence) * count > _max_chars():
                raise _too_large(f"a {type(sequence).__name__} repeated {count:,} times")
    elif operator == "+" and isinstance(left, (str, bytes, list, tuple)):
        if weight(left) + weight(right) > _max_chars():
            raise _too_large("the sum")
    elif operator == "%" and isinstance(left, str):
        _check_printf(left)
        _check(right, "the formatted values")


def _check_printf(text: str) -> None:
    for width, precision in _PRINTF.findall(text):
        for number in (width, precision):
            if number == "*" or (number and int(number) > _max_chars()):
                raise _too_large(f"the format {text[:40]!r}")


def _check_format(text: str) -> None:
    try:
        specs = [spec for _, _, spec, _ in string.Formatter().parse(text) if spec]
    except ValueError:
        return  # str.format reports it
    for spec in specs:
        if "{" in spec or any(int(n) > _max_chars() for n in re.findall(r"\d+", spec)):
            raise _too_large(f"the format {text[:40]!r}")


def _checked_call(name: str, function: Any, subject: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                  lead: tuple[Any, ...] = ()) -> Any:
    """Call a filter or ``str`` method on ``subject``, if what it makes fits (estimated from its
    arguments before it runs), and check what it made."""
    _check_time()
    if isinstance(subject, Iterator):  # a generator is read only as far as it fits
        subject = _bounded_list(subject, name)
    if weight(subject) + sum(weight(v) for v in args) + sum(weight(v) for v in kwargs.values()) > _max_chars():
        raise _too_large(f"the input of {name}(…)")
    try:
        estimate = _estimate(name, subject, args, kwargs)
    except (TypeError, ValueError, OverflowError):
        estimate = None  # arguments the call itself refuses, with its own message
    if estimate is not None and estimate > _max_chars():
        raise _too_large(f"the result of {name}(…)")
    return _check(function(*lead, subject, *args, **kwargs), f"the result of {name}(…)")


def _bounded_list(items: Iterator[Any], name: str) -> list[Any]:
    found, total = [], 0
    for item in items:
        _check_time()
        total += weight(item)
        if total > _max_chars():
            raise _too_large(f"the input of {name}(…)")
        found.append(item)
    return found


def _estimate(name: str, subject: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Characters (or items) the filter or method ``name`` would make; None: no more than its input."""

    def arg(index: int, key: str, default: Any) -> Any:
        return args[index] if len(args) > index else kwargs.get(key, default)

    text = subject if isinstance(subject, str) else ""
    if name == "join":  # subject: the items; a separator between each two
        return weight(subject) + len(subject) * len(str(arg(0, "d", "")))
    if name == "replace":  # at most one match per character of the text (plus one for '')
        return len(text) + (len(text) + 1) * len(str(arg(1, "new", "")))
    if name == "indent":
        width = arg(0, "width", 4)
        return len(text) + (text.count("\n") + 1) * (len(width) if isinstance(width, str) else int(width))
    if name == "wordwrap":
        breaks = len(text) // max(int(arg(0, "width", 79)), 1) + 1
        return len(text) + breaks * len(str(arg(2, "wrapstring", None) or "\n"))
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(text), int(arg(0, "width", 80)))
    if name == "expandtabs":
        return len(text) + text.count("\t") * int(arg(0, "tabsize", 8))
    if name in ("batch", "slice"):
        return weight(subject) + int(arg(0, "linecount" if name == "batch" else "slices", 1))
    if name == "tojson":  # every value on a line of its own, indented
        return weight(subject) * (1 + int(arg(0, "indent", None) or 0)) * 2
    if name == "format":
        _check_printf(text)
    if name == "lipsum":  # subject: the number of paragraphs; up to `max` words of up to 12 letters
        return int(subject) * int(arg(2, "max", 100)) * 13
    return None


def _bounded_filter(name: str, function: Any) -> Any:
    # filters marked pass_context / pass_environment / pass_eval_context get that first
    passes = getattr(function, "jinja_pass_arg", None) is not None

    @wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        lead, plain = (args[:1], args[1:]) if passes else ((), args)
        if not plain:
            return _check(function(*args, **kwargs), f"the result of {name}(…)")
        return _checked_call(name, function, plain[0], plain[1:], kwargs, lead)

    return bounded


class _BoundedCodeGenerator(CodeGenerator):
    """Template code whose ``~`` (concatenation) checks the size of what it makes and whose loops
    check the time budget at every item."""

    def visit_For(self, node: Any, frame: Any) -> None:
        # ``for x in items`` compiles as ``for x in environment.timed(items)``
        if not getattr(node, "timed", False):
            node.iter = nodes.Call(nodes.EnvironmentAttribute("timed"), [node.iter], [], None, None,
                                   lineno=node.iter.lineno)
            node.timed = True
        super().visit_For(node, frame)

    def visit_Concat(self, node: Any, frame: Any) -> None:
        self.write("environment.concat_bounded((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("))")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, strict about undefined names, with every size bounded."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, keep_trailing_newline=True,
                         finalize=lambda value: _check(value, "the value written out"))
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.globals["lipsum"] = _bounded_filter("lipsum", self.globals["lipsum"])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _check_time()
        _check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_time()
        owner, name = getattr(__obj, "__self__", None), getattr(__obj, "__name__", "a call")
        if isinstance(owner, (str, bytes)) and args and name == "join":  # sep.join(items)
            return _checked_call(name, lambda items, sep: __self._call(__context, __obj, items),
                                 args[0], (owner,), {})
        if isinstance(owner, (str, bytes)):  # text.method(…): the text is its subject
            return _checked_call(name, lambda _text, *a, **k: __self._call(__context, __obj, *a, **k),
                                 owner, args, kwargs)
        return _check(__self._call(__context, __obj, *args, **kwargs), f"the result of {name}(…)")

    def _call(self, context: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
        return super().call(context, function, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text = value.__self__

        @wraps(wrapped)
        def checked(*args: Any, **kwargs: Any) -> str:
            _check_format(text)
            if weight(text) + sum(weight(v) for v in (*args, *kwargs.values())) > _max_chars():
                raise _too_large("the formatted values")
            formatted: str = wrapped(*args, **kwargs)
            return _check(formatted, "the formatted text")

        return checked

    @staticmethod
    def timed(items: Any) -> Iterator[Any]:
        """The items of a template loop, each after a check of the time budget."""
        for item in items:
            _check_time()
            yield item

    @staticmethod
    def concat_bounded(parts: tuple[Any, ...]) -> str:
        """``a ~ b ~ c``: the parts' text, when it fits."""
        if sum(weight(p) for p in parts) > _max_chars():
            raise _too_large("the concatenation")
        return "".join(str(p) for p in parts)
