"""A pydantic model's JSON schema made a Kubernetes *structural* schema (apiextensions.k8s.io/v1).

What a structural schema is (``k8s.io/apiextensions-apiserver/pkg/apiserver/schema``): every node
has a ``type`` (or ``x-kubernetes-int-or-string`` / ``x-kubernetes-preserve-unknown-fields``);
no ``$ref``, no ``additionalProperties`` beside ``properties``, no ``uniqueItems``; ``nullable``
instead of a ``null`` type; inside ``oneOf``/``anyOf`` only value validations (no ``type``,
``description`` or ``default``). The conversion:

- ``$ref`` is inlined; ``Optional[X]`` is X with ``nullable: true``; ``const`` is a one-value ``enum``;
- ``exclusiveMinimum: n`` (JSON Schema 2020) is OpenAPI 3.0's ``minimum: n`` + ``exclusiveMinimum: true``;
- a union of ``int`` and ``str`` is ``x-kubernetes-int-or-string``; any other union of types, and a
  field a ``mode="before"`` validator reshapes (``timeout: 10m``, ``backend: local``), accepts any
  value here (``x-kubernetes-preserve-unknown-fields``) and is checked by the loader;
- a discriminated union of objects (the plugins, by ``kind``) is one object with every member's
  properties and a ``oneOf`` that ties the ``kind`` to each member's required keys;
- defaults are left out: the API server would write them into every stored object;
  ``title``, ``format`` and ``propertyNames`` too (none is needed to validate).
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel

ANY: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
_DROPPED = {"title", "default", "format", "propertyNames", "uniqueItems", "examples", "discriminator", "$defs"}
_VALUE_KEYS = {"enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
               "minProperties", "maxProperties", "multipleOf"}


def structural(model: type[BaseModel], describe: bool = True) -> dict[str, Any]:
    """The structural schema of ``model`` (camelCase aliases)."""
    schema = model.model_json_schema(by_alias=True)
    return _Converter(schema.get("$defs", {}), reshaped_fields(model), describe).node(schema)


def reshaped_fields(model: type[BaseModel]) -> dict[str, set[str]]:
    """By model name (the JSON schema's ``title``): the keys of fields that a ``mode="before"``
    validator reshapes, whose accepted input the JSON schema does not describe."""
    out: dict[str, set[str]] = {}
    for cls in _models(model, set()):
        keys = set()
        for decorator in cls.__pydantic_decorators__.field_validators.values():
            if decorator.info.mode in ("before", "plain", "wrap"):
                for name in decorator.info.fields:
                    keys.add(cls.model_fields[name].alias or name)
        if keys:
            out[cls.__name__] = keys
    return out


def _models(model: type[BaseModel], seen: set[type]) -> set[type[BaseModel]]:
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for cls in _classes(field.annotation):
            _models(cls, seen)
    return seen


def _classes(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [c for arg in get_args(annotation) for c in _classes(arg)]


class _Converter:
    def __init__(self, defs: dict[str, Any], reshaped: dict[str, set[str]], describe: bool) -> None:
        self.defs, self.reshaped, self.describe = defs, reshaped, describe

    def node(self, s: dict[str, Any]) -> dict[str, Any]:
        s = self._resolved(s)
        if not s:
            return dict(ANY)
        variants = s.get("anyOf") or s.get("oneOf")
        if variants is not None:
            return self._union(s, [self._resolved(v) for v in variants])
        if "allOf" in s and len(s["allOf"]) == 1:
            return self.node({**{k: v for k, v in s.items() if k != "allOf"}, **self._resolved(s["allOf"][0])})
        kind = s.get("type")
        if kind == "object":
            return self._object(s)
        if kind == "array":
            out = {"type": "array", "items": self.node(s.get("items") or {})}
            return self._values(s, out)
        if kind is None:
            return dict(ANY) if "const" not in s and "enum" not in s else self._values(s, {"type": "string"})
        if kind == "null":
            return {"type": "string", "nullable": True, "enum": [None]}
        return self._values(s, {"type": kind})

    def _resolved(self, s: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in s:
            target = self.defs[s["$ref"].rsplit("/", 1)[-1]]
            s = {**target, **{k: v for k, v in s.items() if k != "$ref"}}
        return s

    def _values(self, s: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        if "const" in s:
            out["enum"] = [s["const"]]
        for key in _VALUE_KEYS:
            if key in s and key not in out:
                out[key] = s[key]
        for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(s.get(bound), (int, float)) and not isinstance(s.get(bound), bool):
                out[plain], out[bound] = s[bound], True
        if self.describe and s.get("description"):
            out["description"] = _first_sentence(s["description"])
        return out

    def _object(self, s: dict[str, Any]) -> dict[str, Any]:
        props = s.get("properties")
        if props is None:
            extra = s.get("additionalProperties", True)
            if extra is True or extra == {}:
                return self._values(s, {"type": "object", **ANY})
            return self._values(s, {"type": "object", "additionalProperties": self.node(extra)})
        loose = self.reshaped.get(s.get("title", ""), set())
        out: dict[str, Any] = {"type": "object", "properties": {
            k: (dict(ANY) if k in loose else self.node(v)) for k, v in props.items()}}
        if s.get("required"):
            out["required"] = list(s["required"])
        return self._values(s, out)

    def _union(self, s: dict[str, Any], variants: list[dict[str, Any]]) -> dict[str, Any]:
        nullable = any(v.get("type") == "null" for v in variants)
        variants = [v for v in variants if v.get("type") != "null"]
        if len(variants) == 1:
            out = self.node({**{k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}, **variants[0]})
        elif variants and all(v.get("type") == "object" and "properties" in v for v in variants):
            out = self._tagged(variants)
        elif {v.get("type") for v in variants} == {"integer", "string"}:
            out = {"x-kubernetes-int-or-string": True}
        else:
            out = dict(ANY)
        if nullable:
            out["nullable"] = True
        if self.describe and s.get("description") and "description" not in out:
            out["description"] = _first_sentence(s["description"])
        return out

    def _tagged(self, variants: list[dict[str, Any]]) -> dict[str, Any]:
        """A union of objects: one object with every member's properties; a ``oneOf`` of each
        member's tag and required keys when a ``kind`` tells them apart."""
        members = [self.node(v) for v in variants]
        merged = _merge(members)
        tags = [m["properties"].get("kind", {}).get("enum") for m in members]
        if all(t and len(t) == 1 for t in tags):
            merged["properties"]["kind"] = {"type": "string", "enum": [t[0] for t in tags]}
            merged["oneOf"] = [{"properties": {"kind": {"enum": t}}, "required": sorted({"kind", *m.get("required", [])})}
                               for t, m in zip(tags, members)]
            merged["required"] = ["kind"]
        return merged


def _merge(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema accepting what each of ``schemas`` accepts, as loosely typed as needed."""
    first = schemas[0]
    if all(s == first for s in schemas):
        return dict(first)
    types = {s.get("type") for s in schemas}
    if types != {first.get("type")} or None in types:
        return dict(ANY)
    if first["type"] == "object" and all("properties" in s for s in schemas):
        keys = list(dict.fromkeys(k for s in schemas for k in s["properties"]))
        props = {k: _merge([s["properties"][k] for s in schemas if k in s["properties"]]) for k in keys}
        return {"type": "object", "properties": props}
    if first["type"] == "array":
        return {"type": "array", "items": _merge([s["items"] for s in schemas])}
    return {"type": first["type"], **({"nullable": True} if any(s.get("nullable") for s in schemas) else {})}


def _first_sentence(text: str) -> str:
    line = " ".join(text.split())
    end = line.find(". ")
    return line[: end + 1] if end != -1 else line
