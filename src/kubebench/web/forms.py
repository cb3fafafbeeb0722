"""The launch request: a pasted spec (YAML) or a form, and the located errors of a bad one.

A form becomes a spec text, which is then loaded like any other, so both paths validate alike;
an error of the generated spec names the form field it came from.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Template file name a form's template is saved under (next to the spec, which refers to it).
TEMPLATE_FILE = "job.yaml.j2"


class MetricField(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    unit: str = ""
    goal: Literal["maximize", "minimize"] = "maximize"
    primary: bool = False


class LaunchForm(BaseModel):
    """What the launch page's form sends: a job (image + command, or a template), a sweep, repeats."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=63)
    image: str | None = None
    command: Union[list[str], str, None] = None
    template: str | None = Field(None, description="YAML text of a job template (Jinja2), instead of image + command")
    # values are checked by the spec they become (one message per problem, located by name)
    parameters: dict[str, Any] = Field(default_factory=dict, description="name → value, or list of values to sweep")
    repeats: int = Field(1, ge=1, le=10_000)
    backend: str = Field("local", description="a backend of the plugin registry (built-in: local, kubernetes)")
    metrics: list[Union[MetricField, str]] = Field(default_factory=list)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from .. import registry

        known = registry.names("backends")
        if value not in known:
            raise ValueError(f"unknown backend {value!r}; valid: {', '.join(sorted(known))}")
        return value

    @field_validator("command")
    @classmethod
    def _split(cls, value: Union[list[str], str, None]) -> list[str] | None:
        if isinstance(value, str):
            try:
                return shlex.split(value) or None
            except ValueError as e:
                raise ValueError(f"cannot split the command line: {e}") from None
        return value or None


class LaunchRequest(BaseModel):
    """``{"spec": YAML text, "params": optional YAML text}`` or ``{"form": {…}}``."""

    model_config = ConfigDict(extra="forbid")

    spec: str | None = Field(None, description="the benchmark spec as YAML text")
    params: str | None = Field(None, description="optional parameter file (YAML text) overriding the spec's")
    form: LaunchForm | None = None


def form_spec(form: LaunchForm) -> str:
    """The spec text a form stands for."""
    job: dict = {}
    if form.template:
        job["template"] = TEMPLATE_FILE
    else:
        if form.image:
            job["image"] = form.image
        if form.command:
            job["command"] = form.command
    spec: dict = {"name": form.name, "job": job}
    if form.parameters:
        spec["parameters"] = form.parameters
    spec["repeats"] = form.repeats
    spec["backend"] = form.backend
    if form.metrics:
        spec["metrics"] = [{"name": m} if isinstance(m, str) else m.model_dump(exclude_defaults=True)
                           for m in form.metrics]
    return yaml.safe_dump(spec, sort_keys=False)


class Problem(BaseModel):
    """One located problem of a launch request."""

    loc: str
    field: str | None = None
    line: int | None = None
    column: int | None = None
    message: str


_LOCATED = re.compile(r"^(?P<file>[^:\n]+?):(?P<line>\d+)(?::(?P<column>\d+))?: (?P<rest>.*)$")
_FIELD = re.compile(r"^(?P<field>[A-Za-z_][\w.\[\]=-]*|\(top level\))(?: \((?P<context>[^)]*)\))?: (?P<message>.*)$")
_INDEX = re.compile(r"\[(\d+)\]")
# the form field a path of the generated spec comes from
_FORM_FIELDS = {"job.command": "command", "job.image": "image", "job.template": "template", "job": "command"}


def spec_problems(message: str, files: dict[str, str], spec_text: str = "") -> list[Problem]:
    """Located problems from a SpecError message (``file:line:col: field: message`` lines).

    ``files`` maps the file names the message may hold to the names shown (``spec``, ``params``,
    ``template``). A problem named by a field path only (a rendering error) is located in
    ``spec_text`` by that path.
    """
    problems = []
    for text in message.splitlines():
        for path, shown in files.items():
            text = text.replace(path, shown)
        found = _LOCATED.match(text)
        if not found:
            problems.append(_by_field(text, files, spec_text))
            continue
        line, column = int(found["line"]), int(found["column"]) if found["column"] else None
        field_match = _FIELD.match(found["rest"])
        field, msg = (field_match["field"], _with_context(field_match)) if field_match else (None, found["rest"])
        where = f"line {line}" + (f", column {column}" if column else "")
        if found["file"] != "spec":
            where = f"{found['file']} {where}"
        problems.append(Problem(loc=where, field=field, line=line, column=column, message=msg))
    return merged(problems)


def _with_context(found: re.Match) -> str:
    return f"{found['message']} ({found['context']})" if found["context"] else found["message"]


def _by_field(text: str, files: dict[str, str], spec_text: str) -> Problem:
    """A problem named by a field path (``job.command[2] (trial n=1): …``), located in the spec's YAML."""
    from ..spec.load import parse_yaml
    from ..errors import SpecError

    found = _FIELD.match(text)
    if not found:
        return Problem(loc=_file_of(text, files), message=text)
    field = found["field"]
    path = tuple(int(p) if p.isdigit() else p for p in _INDEX.sub(r".\1", field).split("."))
    try:
        locations = parse_yaml(spec_text, "spec")[1] if spec_text else {}
    except SpecError:
        locations = {}
    for end in range(len(path), 0, -1):
        if path[:end] in locations:
            line, column = locations[path[:end]]
            return Problem(loc=f"line {line}, column {column}", field=field, line=line, column=column,
                           message=_with_context(found))
    return Problem(loc="spec", field=field, message=_with_context(found))


def _file_of(text: str, files: dict[str, str]) -> str:
    """Which file a message that has no line is about: the one it starts with, else the spec."""
    for shown in files.values():
        if text.startswith((f"{shown}:", f"{shown} ")):
            return shown
    return "spec"


def form_problems(problems: list[Problem]) -> list[Problem]:
    """Problems of a form's generated spec, each named by the form field it came from."""
    named = []
    for p in problems:
        field = _INDEX.sub("", p.field or "")
        top = field.split(".")[0]
        form_field = _FORM_FIELDS.get(field) or _FORM_FIELDS.get(".".join(field.split(".")[:2])) or top or "form"
        if p.loc.startswith("template"):
            form_field = "template"
        where = f"template line {p.line}" if form_field == "template" and p.line else form_field
        inner = (p.field or "").split(".", 1)[1] if top == "parameters" and "." in (p.field or "") else ""
        message = f"{inner}: {p.message}" if inner else p.message  # which parameter
        named.append(Problem(loc=where, field=form_field, line=p.line if form_field == "template" else None,
                             column=p.column if form_field == "template" else None, message=message))
    return merged(named)


def merged(problems: list[Problem]) -> list[Problem]:
    """One problem per place: a union's members each give a message for the same value."""
    by_place: dict[tuple, Problem] = {}
    for p in problems:
        key = (p.loc, p.field, p.line, p.column)
        if key in by_place:
            if p.message not in by_place[key].message:
                by_place[key] = by_place[key].model_copy(update={"message": f"{by_place[key].message}; {p.message}"})
        else:
            by_place[key] = p
    return list(by_place.values())
