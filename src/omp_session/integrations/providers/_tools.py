"""Tool definitions as each provider's request carries them.

A tool is ``{"name", "description", "parameters"}`` with a JSON Schema for ``parameters`` (omp's
``Tool``). pi-ai rewrites schemas per provider; this module covers the schemas omp's own tools and
typical MCP tools use (objects of typed properties, arrays, enums, nested objects, descriptions). A
schema keyword outside that set raises :class:`UnsupportedToolSchema` instead of producing a body that
would differ from omp's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omp_session import errors

__all__ = [
    "UnsupportedToolSchema",
    "anthropic_tools",
    "google_tools",
    "openai_chat_tools",
    "openai_responses_tools",
]

_UNIVERSAL = frozenset(
    {
        "$ref",
        "$defs",
        "$schema",
        "definitions",
        "type",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "description",
        "title",
        "default",
        "nullable",
    }
)
_PER_TYPE = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "prefixItems", "minItems"}),
    "string": frozenset({"format"}),
}
_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_COMBINATORS = ("anyOf", "allOf", "oneOf")
_SIMPLE_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "description",
        "title",
        "default",
        "additionalProperties",
    }
)


UnsupportedToolSchema = errors.UnsupportedToolSchema


def _check_simple(schema: Any, path: str) -> None:
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            _check_simple(item, f"{path}/{index}")
        return
    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key not in _SIMPLE_KEYS:
            raise UnsupportedToolSchema(f"tool schema keyword {key!r} at {path} is not supported")
        if key == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                _check_simple(sub, f"{path}/properties/{name}")
        elif key in ("items", "additionalProperties"):
            _check_simple(value, f"{path}/{key}")


def _parameters(tool: Mapping[str, Any]) -> dict[str, Any]:
    parameters = tool.get("parameters")
    schema = dict(parameters) if isinstance(parameters, Mapping) else {"type": "object", "properties": {}}
    _check_simple(schema, f"{tool.get('name')}#")
    return schema


def _scalar_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        for entry in kind:
            if isinstance(entry, str) and entry != "null":
                return entry
    if isinstance(schema.get("properties"), Mapping):
        return "object"
    if "items" in schema or isinstance(schema.get("prefixItems"), list):
        return "array"
    return None


def _anthropic_node(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_anthropic_node(entry) for entry in schema]
    if not isinstance(schema, Mapping):
        return schema
    scalar = _scalar_type(schema)
    keep = _PER_TYPE.get(scalar or "", frozenset())
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _UNIVERSAL or key in keep:
            result[key] = value
        else:
            raise UnsupportedToolSchema(f"tool schema keyword {key!r} is not kept by Anthropic")
    if (
        scalar == "string"
        and isinstance(result.get("format"), str)
        and result["format"] not in _STRING_FORMATS
    ):
        raise UnsupportedToolSchema(f"string format {result['format']!r} is not kept by Anthropic")
    if scalar == "object" and "additionalProperties" not in result:
        result["additionalProperties"] = False
    if isinstance(result.get("properties"), Mapping):
        result["properties"] = {name: _anthropic_node(sub) for name, sub in result["properties"].items()}
    if isinstance(result.get("additionalProperties"), Mapping):
        normalized = _anthropic_node(result["additionalProperties"])
        result["additionalProperties"] = True if normalized == {} else normalized
    if isinstance(result.get("items"), (list, Mapping)):
        result["items"] = _anthropic_node(result["items"])
    return result


def anthropic_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic ``tools``: ``input_schema`` closed (``additionalProperties: false``) on object nodes.

    omp marks its ``bash``/``python``/``edit``/``find`` tools ``strict``; that rewrite is not reproduced,
    so tools of those names raise :class:`UnsupportedToolSchema`.
    """
    out: list[dict[str, Any]] = []
    for tool in tools:
        name = str(tool.get("name", ""))
        if name in ("bash", "python", "edit", "find") and tool.get("strict") is not False:
            raise UnsupportedToolSchema(
                f"tool {name!r} gets Anthropic's strict schema rewrite, not reproduced here"
            )
        schema = _parameters(tool)
        required = schema.get("required")
        base = {
            **schema,
            "type": "object",
            "properties": schema["properties"] if isinstance(schema.get("properties"), Mapping) else {},
            "required": [entry for entry in required if isinstance(entry, str)]
            if isinstance(required, list)
            else [],
        }
        out.append(
            {
                "name": name,
                "description": tool.get("description") or "",
                "input_schema": _anthropic_node(base),
            }
        )
    return out


def _strict_node(schema: Any) -> Any:
    """OpenAI strict mode for a simple schema: closed objects whose optional properties become
    required-but-nullable."""
    if not isinstance(schema, Mapping):
        return schema
    result: dict[str, Any] = {key: schema[key] for key in sorted(schema)}
    if isinstance(result.get("items"), Mapping):
        result["items"] = _strict_node(result["items"])
    if _scalar_type(result) == "object" or isinstance(result.get("properties"), Mapping):
        found = result.get("properties")
        properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        required = [entry for entry in result.get("required") or [] if isinstance(entry, str)]
        new_properties: dict[str, Any] = {}
        for name, sub in properties.items():
            node = _strict_node(sub)
            if name not in required and isinstance(node, Mapping):
                node = _nullable(node)
            new_properties[name] = node
        result["properties"] = new_properties
        result["required"] = list(properties)
        result["additionalProperties"] = False
    return result


def _nullable(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An optional property under strict mode: the schema or null, its description kept outside."""
    if "title" in schema or "default" in schema:
        raise UnsupportedToolSchema(
            "optional strict-mode properties with a title or default are not supported"
        )
    inner = {key: value for key, value in schema.items() if key != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        out["description"] = schema["description"]
    return out


def openai_responses_tools(tools: Sequence[Mapping[str, Any]], strict: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        schema = _parameters(tool)
        use_strict = strict and tool.get("strict") is not False
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.get("name"),
            "description": tool.get("description") or "",
            "parameters": _strict_node(schema) if use_strict else schema,
        }
        if use_strict:
            entry["strict"] = True
        out.append(entry)
    return out


def openai_chat_tools(tools: Sequence[Mapping[str, Any]], strict: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        schema = _parameters(tool)
        use_strict = strict and tool.get("strict") is not False
        function: dict[str, Any] = {
            "name": tool.get("name"),
            "description": tool.get("description") or "",
            "parameters": _strict_node(schema) if use_strict else schema,
        }
        if use_strict:
            function["strict"] = True
        out.append({"type": "function", "function": function})
    return out


def _google_node(schema: Any) -> Any:
    """pi-ai ``normalizeSchemaForGoogle`` for simple schemas: objects keep their property order
    explicitly (``propertyOrdering``) and always have ``properties``."""
    if isinstance(schema, list):
        return [_google_node(entry) for entry in schema]
    if not isinstance(schema, Mapping):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, Mapping):
            result[key] = {name: _google_node(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, (Mapping, list)):
            result[key] = _google_node(value)
        else:
            result[key] = value
    if result.get("type") == "object":
        properties = result.get("properties")
        if isinstance(properties, Mapping) and len(properties) > 1 and "propertyOrdering" not in result:
            result["propertyOrdering"] = list(properties)
        if "properties" not in result:
            result["properties"] = {}
    return result


def google_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [
        {
            "functionDeclarations": [
                {
                    "name": tool.get("name"),
                    "description": tool.get("description") or "",
                    "parametersJsonSchema": _google_node(_parameters(tool)),
                }
                for tool in tools
            ]
        }
    ]
