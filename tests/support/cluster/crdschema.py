"""A CRD's structural ``openAPIV3Schema`` as a JSON Schema validator, as the API server applies it to
custom resources (``k8s.io/apiextensions-apiserver/pkg/apiserver/schema``, ``…/validation``):

- OpenAPI 3.0 semantics: ``nullable``, the boolean ``exclusiveMinimum``/``exclusiveMaximum`` (JSON
  Schema draft 4), ``x-kubernetes-int-or-string``, and ``x-kubernetes-preserve-unknown-fields`` on a
  node without a type (any value);
- unknown fields (not in ``properties`` of an object that does not preserve them) are reported apart
  from invalid values, so that the emulator prunes them (``Warn``) or refuses them (``Strict``) as a
  server does; ``oneOf``/``anyOf`` are value validations;
- CEL rules (``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

from typing import Any

import jsonschema

_KEEP = {"type", "properties", "items", "required", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum",
         "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
         "multipleOf", "oneOf", "anyOf", "allOf", "not", "additionalProperties"}


def to_json_schema(node: Any, junctor: bool = False) -> Any:
    """The JSON Schema (draft 4) of a structural schema node."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _KEEP:
            continue
        if key == "properties":
            out[key] = {k: to_json_schema(v, junctor) for k, v in value.items()}
        elif key in ("items", "not", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value, junctor)
        elif key in ("oneOf", "anyOf", "allOf"):
            out[key] = [to_json_schema(v, True) for v in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if not junctor and out.get("type") == "object" and "properties" in out and "additionalProperties" not in out \
            and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable") and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def validator(schema: dict) -> jsonschema.protocols.Validator:
    """A validator of objects against a CRD version's ``openAPIV3Schema``."""
    return jsonschema.Draft4Validator(to_json_schema(schema))


def field_check(check: jsonschema.protocols.Validator, doc: dict) -> tuple[list[str], list[str]]:
    """``(unknown fields as dotted paths, invalid values)`` of ``doc``; ``metadata`` is the API
    server's ObjectMeta, not the schema's."""
    unknown, errors = [], []
    for e in check.iter_errors(doc):
        if list(e.absolute_path)[:1] == ["metadata"]:
            continue
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            known = e.schema.get("properties") or {}
            unknown += [".".join(map(str, [*e.absolute_path, k])) for k in e.instance if k not in known]
        else:
            errors.append(f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}")
    return unknown, errors
