"""Load a spec and parameter files from YAML into typed models, with file:line in every error."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from .. import limits
from ..errors import SpecError
from .model import BenchmarkSpec, LoadedSpec

Location = tuple[int, int]  # 1-based line and column
#: Where a value is in a YAML document: its keys and list indexes from the top (a pydantic error location too).
KeyPath = tuple[object, ...]


def read_text(path: str | Path, what: str = "spec") -> str:
    """The text of a user file, or a SpecError naming it.

    At most the size limit is read, whatever the file claims to be: a device (``/dev/zero``), a pipe
    or a file that grows while it is read never makes kubebench read without bound.
    """
    p = Path(path)
    limit = limits.SPEC_BYTES.value()
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise SpecError(f"{p}: {what} file is larger than {limit} bytes (the limit; "
                            f"{limits.SPEC_BYTES.env} changes it)")
        return data.decode("utf-8")
    except FileNotFoundError as e:
        raise SpecError(f"{p}: {what} file not found") from e
    except IsADirectoryError as e:
        raise SpecError(f"{p}: is a folder, expected a {what} file") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{p}: cannot read {what} file: {e}") from e


def parse_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, Location]]:
    """Safe-load YAML and map each key path to its line/column for error messages.

    The document is refused, with its line and column, when it nests deeper than the depth limit
    or holds more values than the values limit, counting what aliases repeat: 600 bytes of nested
    aliases would otherwise stand for billions of values.
    """
    loader = None
    try:
        loader = _BoundedLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        started = ""
        if e.context_mark and e.problem_mark and e.context_mark.line != e.problem_mark.line:
            started = f" ({e.context} at line {e.context_mark.line + 1}, column {e.context_mark.column + 1})"
        kind = "YAML document over a limit" if isinstance(e, _OverLimit) else "YAML syntax error"
        raise SpecError(f"{where}: {kind}: {e.problem or e}{started}") from e
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: YAML error: {e}") from e
    finally:
        if loader is not None:
            loader.dispose()
    locations: dict[KeyPath, Location] = {}
    if node is not None:
        _index(node, (), locations, set())
    return data, locations


class _OverLimit(yaml.MarkedYAMLError):  # type: ignore[misc]  # PyYAML ships no types
    """A document too deep or too large (located like a syntax error)."""


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """PyYAML's safe loader that counts, while it composes, how deep and how many values the
    document is (an alias counts as every value of the node it names), and stops at the limits."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # expanded values of each node composed, by id
        self._max_depth, self._max_values = limits.YAML_DEPTH.value(), limits.YAML_VALUES.value()

    def compose_node(self, parent: Any, index: Any) -> yaml.Node:
        event = self.peek_event()
        mark = event.start_mark
        if isinstance(event, yaml.CollectionStartEvent) and self._depth >= self._max_depth:
            raise _OverLimit(
                None, None, f"nested deeper than {self._max_depth} levels (the limit; "
                f"{limits.YAML_DEPTH.env} changes it)", mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._sizes:
            children = node.value if isinstance(node, yaml.SequenceNode) else (
                [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
            self._sizes[id(node)] = 1 + sum(self._sizes[id(child)] for child in children)
        if self._sizes[id(node)] > self._max_values:
            raise _OverLimit(
                None, None, f"the document holds more than {self._max_values} values, counting each alias "
                f"(*name) as the values it repeats (the limit; {limits.YAML_VALUES.env} changes it)", mark)
        return node


def _index(node: yaml.Node, path: KeyPath, out: dict[KeyPath, Location], seen: set[int]) -> None:
    out[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if id(node) in seen:
        return  # a node repeated by an alias: its inside is located where it was first written
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = path + (key.value,)
            _index(value, child, out, seen)
            out[child] = (key.start_mark.line + 1, key.start_mark.column + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, path + (i,), out, seen)


def labelled(locations: dict[KeyPath, Location], source: str, under: KeyPath = ()) -> dict[KeyPath, str]:
    """``file:line:col`` of every key path, optionally re-rooted under ``under``."""
    return {under + path: f"{source}:{line}:{col}" for path, (line, col) in locations.items()}


def locate(where: dict[KeyPath, str], loc: KeyPath) -> str | None:
    """The ``file:line:col`` of the deepest known prefix of a pydantic error location."""
    for end in range(len(loc), -1, -1):
        if tuple(loc[:end]) in where:
            return where[tuple(loc[:end])]
    return None


def format_validation_error(
    e: ValidationError, source: str, where: dict[KeyPath, str], data: Any, root: type[BaseModel]
) -> str:
    """One line per problem, in the file's order: ``file:line:col: field.path: message``, with a
    "did you mean" for a near miss of a key or a choice; the several errors pydantic gives for one
    value that fits no member of a union are one line."""
    found: dict[tuple[str, str], list[str]] = {}
    for err in e.errors():
        loc = _data_path(data, err["loc"], keep_last=err["type"] in ("missing", "extra_forbidden"))
        prefix = locate(where, loc) or source
        field = ".".join(str(p) for p in loc) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "required key is missing"
        elif err["type"] == "extra_forbidden":
            allowed = allowed_keys(root, err["loc"])
            message = f"unknown key{_did_you_mean(str(err['loc'][-1]), allowed)}; allowed keys: {', '.join(allowed)}"
        elif err["type"] in ("literal_error", "enum"):
            choices = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
            message += _did_you_mean(str(err.get("input", "")), choices)
        found.setdefault((prefix, field), []).append(message)
    lines = [(prefix, f"{prefix}: {field}: {_one_message(messages)}") for (prefix, field), messages in found.items()]
    return "\n".join(line for _, line in sorted(lines, key=lambda item: _position(item[0])))


def _one_message(messages: Sequence[str]) -> str:
    """The messages of one value as one: ``Input should be a valid boolean, integer or string`` for the
    members of a union it fits none of."""
    valid = "Input should be a valid "
    unique = list(dict.fromkeys(messages))
    if len(unique) > 1 and all(m.startswith(valid) for m in unique):
        kinds = [m.removeprefix(valid).split(",")[0] for m in unique]
        return valid + ", ".join(kinds[:-1]) + " or " + kinds[-1]
    return "; ".join(unique)


def _did_you_mean(given: str, choices: Sequence[str]) -> str:
    """``; did you mean 'repeats'?`` for a near miss of one of ``choices`` ("" for none)."""
    close = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _position(prefix: str) -> tuple[str, int, int]:
    """(file, line, column) of a ``file:line:col`` prefix, for sorting problems in the file's order."""
    match = re.match(r"^(.*):(\d+):(\d+)$", prefix)
    return (match[1], int(match[2]), int(match[3])) if match else (prefix, 0, 0)


def _data_path(data: Any, loc: KeyPath, keep_last: bool) -> KeyPath:
    # pydantic adds union tags and type names ('regex', 'int') to locations; keep only the parts
    # that exist in the user's data, plus the last one for a missing or unknown key.
    path: list[object] = []
    for i, part in enumerate(loc):
        if isinstance(data, dict) and data.get("kind") == part and i < len(loc) - 1:
            continue  # the union's tag, not a key (a `command` post-processor has both)
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        elif i < len(loc) - 1 or not keep_last:
            continue
        path.append(part)
    return tuple(path)


def allowed_keys(root: type[BaseModel], loc: KeyPath) -> list[str]:
    """The keys a model accepts at ``loc`` (an error location ending in the unknown key)."""
    models = [root]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = [f for m in models for name, f in m.model_fields.items() if part in (name, f.alias)]
        tagged = [m for m in models if m.model_fields.get("kind") and m.model_fields["kind"].default == part]
        if tagged:  # a union's tag comes first in the location, before the member's own keys
            models = tagged
        elif fields:
            models = [m for f in fields for m in _models_in(f.annotation)]
    return sorted({f.alias or name for m in models for name, f in m.model_fields.items()})


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def validate_spec(data: Any, source: str, where: dict[KeyPath, str]) -> BenchmarkSpec:
    """Validate parsed YAML as a BenchmarkSpec, translating errors to file:line messages."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a spec must be a YAML mapping (apiVersion, kind, name, job, …)")
    nul = [f"{locate(where, path) or source}: {_dotted(path)}: holds a NUL character, which no command line, "
           "environment or file name can hold" for path in _with_nul(data, ())]
    if nul:
        raise SpecError("\n".join(nul))
    try:
        return BenchmarkSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(format_validation_error(e, source, where, data, BenchmarkSpec)) from e


def _dotted(path: KeyPath) -> str:
    return ".".join(str(part).replace("\0", "\\0") for part in path)


def _with_nul(data: Any, path: KeyPath) -> list[KeyPath]:
    """Key paths of the strings (keys or values) that hold a NUL character."""
    if isinstance(data, str):
        return [path] if "\0" in data else []
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            found += [path + (key,)] if isinstance(key, str) and "\0" in key else _with_nul(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += _with_nul(value, path + (i,))
    return found


def parse_override(text: str) -> tuple[str, Any]:
    """Parse ``--set key=value``; the value is YAML, so ``[1, 2]`` sweeps and ``8`` is a number."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SpecError(f"--set {text!r}: expected key=value, e.g. --set batch_size=64")
    try:
        return key, yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise SpecError(f"--set {text!r}: value is not valid YAML: {e}") from e


def load_params_file(path: str | Path) -> tuple[dict[str, Any], dict[KeyPath, str]]:
    """The experimenter's parameter file (a flat mapping whose entries override the spec's), and
    where each entry is, keyed like the spec's ``parameters.<name>``.
    """
    source = str(path)
    data, locations = parse_yaml(read_text(path, "parameter"), source)
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a parameter file must be a mapping of name: value (a list sweeps)")
    if set(data) == {"parameters"} and isinstance(data["parameters"], dict):
        data = data["parameters"]
        locations = {p[1:]: v for p, v in locations.items() if p[:1] == ("parameters",)}
    return data, labelled({p: v for p, v in locations.items() if p}, source, ("parameters",))


def _override(where: dict[KeyPath, str], new: dict[KeyPath, str], params: dict[str, Any]) -> dict[KeyPath, str]:
    # A parameter set again elsewhere is reported where it was set last, not in the spec.
    kept = {p: v for p, v in where.items() if not (p[:1] == ("parameters",) and len(p) > 1 and p[1] in params)}
    return {**kept, **new}


def load_spec(
    path: str | Path,
    *,
    params_file: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> LoadedSpec:
    """Load, merge (spec parameters ← parameter file ← ``--set``) and validate a benchmark spec."""
    source = str(path)
    text = read_text(path)
    data, locations = parse_yaml(text, source)
    where = labelled(locations, source)
    if isinstance(data, dict) and isinstance(data.get("parameters") or {}, dict):
        params = dict(data.get("parameters") or {})
        if params_file is not None:
            extra, extra_where = load_params_file(params_file)
            params.update(extra)
            where = _override(where, extra_where, extra)
        for text_of_set in overrides:
            key, value = parse_override(text_of_set)
            params[key] = value
            where = _override(where, {("parameters", key): f"--set {text_of_set}"}, {key: value})
        if params or "parameters" in data:
            data = {**data, "parameters": params}
    spec = validate_spec(data, source, where)
    base_dir = Path(path).resolve().parent
    template_text = None
    if spec.job.template:
        label = f"{locate(where, ('job', 'template'))}: job.template"
        template_path = base_dir / spec.job.template
        try:
            template_text = read_text(template_path, "template")
        except SpecError as e:
            raise SpecError(f"{label}: {e}") from e
    return LoadedSpec(spec=spec, source=source, base_dir=base_dir, text=text, template_text=template_text)
