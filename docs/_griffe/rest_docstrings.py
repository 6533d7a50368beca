"""Griffe extension for the documentation build: render the reST-isms of our docstrings
as Markdown before mkdocstrings renders them.

Our docstrings are free-form text with ``double backticks`` (a Markdown code span as
well), Sphinx roles, ``>>>`` examples and ``::`` literal blocks. This extension

* turns ``:class:`~a.b.C``` (and ``func``, ``meth``, ``mod``, ``attr``, ``data``,
  ``exc``, ``obj``) into an optional cross-reference: a link when the target is
  rendered in the API reference, plain code otherwise (no warning either way);
* fences runs of ``>>>`` lines (with their output) as ``pycon`` code blocks, without
  ``# doctest:`` flags;
* drops the reST ``::`` marker that introduces an indented literal block (the indented
  block is a code block in Markdown already), and the double backticks of indented reST
  block quotes, which Markdown shows as code blocks too;
* gives classes made with ``attrs.frozen`` / ``attrs.define`` the ``__init__`` signature
  attrs generates (griffe reads source statically and knows only dataclasses), so
  their pages show their constructor.

It only edits docstring text in memory, never the source files. Loaded from
``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj):`(~?)([^`<>]+)`")
_PROMPT = re.compile(r"^(\s*)>>> ")
_DOCTEST_FLAG = re.compile(r"\s*# doctest:[^#]*$")
_LITERAL_MARKER = re.compile(r"(?<=\S)::[ \t]*$")
_BARE_MARKER = re.compile(r"^[ \t]*::[ \t]*$")
_PACKAGES = ("accountant", "optimizers")


def _target(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as seen from ``obj`` (unchanged if it cannot be resolved)."""
    if name.split(".", 1)[0] in _PACKAGES:
        return name
    first, _, rest = name.partition(".")
    try:
        resolved = obj.resolve(first)
    except Exception:  # griffe.NameResolutionError and alias errors: leave it as written
        return name
    return f"{resolved}.{rest}" if rest else resolved


def _roles(obj: griffe.Object, text: str) -> str:
    def replace(match: re.Match) -> str:
        role, short, name = match.groups()
        display = name.rsplit(".", 1)[-1] if short else name
        if role in ("func", "meth"):
            display += "()"
        identifier = html.escape(_target(obj, name), quote=True)
        code = f"<code>{html.escape(display)}</code>"
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    return _ROLE.sub(replace, text)


def _doctests(text: str) -> str:
    """Fence each run of ``>>>`` lines, with the output lines after them, up to a blank line."""
    lines = text.split("\n")
    out: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else _PROMPT.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        if out and out[-1].strip():
            out.append("")
        block = [_DOCTEST_FLAG.sub("", line) for line in block]
        out += [f"{indent}```pycon", *(f"{indent}{line}" for line in block), f"{indent}```"]
    return "\n".join(out)


def _literal_markers(text: str) -> str:
    lines = [_LITERAL_MARKER.sub(":", line) for line in text.split("\n")]
    return "\n".join("" if _BARE_MARKER.match(line) else line for line in lines)


def _indented_blocks(text: str) -> str:
    """Remove ````...```` quoting inside indented blocks (Markdown code blocks), where it
    would be shown literally."""
    out: list[str] = []
    in_block = fenced = False
    previous_blank = True
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        indented = line.startswith("    ") and line.strip() != ""
        in_block = not fenced and indented and (in_block or previous_blank)
        out.append(line.replace("``", "") if in_block else line)
        previous_blank = not line.strip()
        if previous_blank:
            continue
        if not indented:
            in_block = False
    return "\n".join(out)


def convert(obj: griffe.Object, text: str) -> str:
    """The Markdown form of the docstring ``text`` of ``obj``."""
    return _indented_blocks(_literal_markers(_doctests(_roles(obj, text))))


_ATTRS_DECORATORS = {"attrs.frozen", "attrs.define", "attrs.mutable", "attr.s", "attr.attrs"}
_ATTRS_FIELDS = {"attrs.field", "attr.ib", "attr.attrib"}


def _call_arguments(value: Any) -> dict[str, Any] | None:
    """Keyword arguments of an ``attrs.field(...)`` call, or ``None`` if ``value`` is not one."""
    if isinstance(value, griffe.ExprCall) and value.canonical_path in _ATTRS_FIELDS:
        return {
            argument.name: argument.value
            for argument in value.arguments
            if isinstance(argument, griffe.ExprKeyword)
        }
    return None


def _attrs_init(cls: griffe.Class) -> None:
    """Add the ``__init__`` attrs generates: one parameter per annotated field, in order."""
    decorators = [d.value for d in cls.decorators if isinstance(d.value, griffe.Expr)]
    if "__init__" in cls.members or not any(
        d.canonical_path in _ATTRS_DECORATORS for d in decorators
    ):
        return
    positional, keyword = [], []
    for member in cls.members.values():
        if member.is_alias or not member.is_attribute or member.annotation is None:
            continue
        labels = member.labels
        class_variable = "class-attribute" in labels and "instance-attribute" not in labels
        if "property" in labels or class_variable:
            continue  # properties and ClassVars are not fields
        arguments = _call_arguments(member.value)
        if arguments is None:
            default = member.value
            arguments = {}
        elif "default" in arguments:
            default = arguments["default"]
        elif "factory" in arguments:
            default = f"{arguments['factory']}()"
        else:
            default = None
        if str(arguments.get("init", "True")) == "False":
            continue
        kw_only = str(arguments.get("kw_only", "False")) == "True"
        kind = (
            griffe.ParameterKind.keyword_only
            if kw_only
            else griffe.ParameterKind.positional_or_keyword
        )
        name = str(arguments.get("alias", member.name.lstrip("_"))).strip("'\"")
        parameter = griffe.Parameter(name, annotation=member.annotation, kind=kind, default=default)
        (keyword if kw_only else positional).append(parameter)
    self_parameter = griffe.Parameter(
        "self", annotation=None, kind=griffe.ParameterKind.positional_or_keyword
    )
    init = griffe.Function(
        "__init__",
        lineno=0,
        endlineno=0,
        parent=cls,
        parameters=griffe.Parameters(self_parameter, *positional, *keyword),
        returns="None",
    )
    cls.set_member("__init__", init)


class ReSTDocstrings(griffe.Extension):
    """Convert every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = convert(obj, obj.docstring.value)
            if obj.is_class:
                _attrs_init(obj)
            stack.extend(member for member in obj.members.values() if not member.is_alias)
