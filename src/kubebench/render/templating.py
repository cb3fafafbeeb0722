"""Jinja2 (sandboxed) and Jsonnet rendering, with the template's file and line in every error."""

from __future__ import annotations

import traceback
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import TemplateError


@cache
def _environment() -> Any:
    from .sandbox import BoundedSandbox

    # Sandboxed, bounded and strict: templates come from users, and a misspelt parameter must fail loudly.
    return BoundedSandbox()


@lru_cache(maxsize=512)
def _compiled(text: str) -> Any:
    # a sweep renders the same few strings once per trial: compile each once
    return _environment().from_string(text)


def render_string(text: str, context: dict[str, Any], where: str) -> str:
    """Render one Jinja2 string (a field of the job shorthand)."""
    if "{{" not in text and "{%" not in text:
        return text
    import jinja2

    from .sandbox import render_bounded

    try:
        return render_bounded(_compiled(text), context)
    except TemplateError as e:  # a limit
        raise TemplateError(f"{where}: {e} in {_shown(text)}") from e
    except jinja2.TemplateError as e:
        raise TemplateError(f"{where}: {_jinja_message(e)} in {_shown(text)}") from e
    except Exception as e:  # an expression of the user's failed (1/0, a bad filter argument…)
        raise TemplateError(f"{where}: {type(e).__name__}: {e} in {_shown(text)}") from e


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "…"


def render_template_file(path: Path, context: dict[str, Any], text: str) -> dict[str, Any]:
    """Render the text of a ``.j2`` (YAML out) or ``.jsonnet`` template to a manifest mapping."""
    if path.suffix == ".jsonnet":
        manifest = _render_jsonnet(path, text, context)
    else:
        manifest = _load_yaml(_render_jinja_file(path, text, context), path)
    if not isinstance(manifest, dict) or "kind" not in manifest:
        raise TemplateError(f"{path}: the template must produce one manifest (a mapping with `kind`)")
    return manifest


def _render_jinja_file(path: Path, text: str, context: dict[str, Any]) -> str:
    import jinja2

    from .sandbox import render_bounded

    try:
        return render_bounded(_compiled(text), context)
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"{path}:{e.lineno}: template syntax error: {e.message}") from e
    except Exception as e:  # TemplateError, a limit, or an expression of the user's that failed (1/0…)
        line = _template_line(e)
        message = _jinja_message(e) if isinstance(e, jinja2.TemplateError) else f"{type(e).__name__}: {e}"
        if isinstance(e, TemplateError):
            message = str(e)
        raise TemplateError(f"{path}{f':{line}' if line else ''}: {message}") from e


def _template_line(e: BaseException) -> int | None:
    # Jinja rewrites tracebacks so that frames of template code carry the template's line numbers.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<template>"]
    return frames[-1].lineno if frames else None


def _jinja_message(e: Exception) -> str:
    import jinja2

    if isinstance(e, jinja2.UndefinedError):
        return f"undefined variable: {e.message}"
    return f"template error: {getattr(e, 'message', None) or e}"


def _load_yaml(text: str, path: Path) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f":{mark.line + 1}" if mark else ""
        raise TemplateError(f"{path}{where}: rendered template is not valid YAML: {e.problem}") from e
    except yaml.YAMLError as e:
        raise TemplateError(f"{path}: rendered template is not valid YAML: {e}") from e


def _render_jsonnet(path: Path, text: str, context: dict[str, Any]) -> Any:
    from .jsonnet import evaluate

    try:
        return evaluate(str(path), text, context)
    except TemplateError as e:
        # Jsonnet's message already names file:line:column of the failing expression.
        raise TemplateError(f"{path}: {e}") from e
