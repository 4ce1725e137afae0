"""Read a class's ``config = dict(...)`` defaults and their comments from source, without importing it.

The built-in policies import torch; reading their defaults statically lets ``compile_config`` validate a
config (and the CLI answer a typo) without paying for the torch import, and lets the config reference in
``docs/`` be generated from the very comments that sit above each default.
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import io
import tokenize
from typing import Any, Dict, Optional, Tuple

Comments = Dict[str, str]


def _module_source(module_name: str) -> Optional[str]:
    """The source of a module, found without importing it or its parent packages."""
    import os

    top, _, rest = module_name.partition(".")
    spec = importlib.util.find_spec(top)
    if spec is None:
        return None
    if rest:
        if not spec.submodule_search_locations:
            return None
        base = os.path.join(list(spec.submodule_search_locations)[0], *rest.split("."))
        candidates = [base + ".py", os.path.join(base, "__init__.py")]
    else:
        candidates = [spec.origin or ""]
    for path in candidates:
        if path.endswith(".py") and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    return None


def _comment_lines(source: str) -> Dict[int, str]:
    """Map line number -> comment text for every comment in ``source``."""
    comments: Dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    return comments


class _NotStatic:
    """The one ``NOT_STATIC`` (a copy of the parsed defaults keeps it: ``is`` holds)."""

    def __deepcopy__(self, memo: Dict[int, Any]) -> '_NotStatic':
        return self

    def __repr__(self) -> str:
        return 'NOT_STATIC'


#: ``lenient`` parsing's value of a default that is not a literal (its comment is still read)
NOT_STATIC = _NotStatic()


def _dict_node(node: ast.AST, comments: Dict[int, str], prefix: str, out_comments: Comments,
               lenient: bool = False) -> Dict[str, Any]:
    """Evaluate a ``dict(k=v, ...)`` / ``{...}`` node whose leaves are literals; collect each key's comment.
    ``lenient`` (for the comments alone): a leaf that is not a literal is ``NOT_STATIC``, and what a ``dict(base,
    ...)`` or ``**base`` takes from elsewhere is skipped, instead of a ``ValueError``."""
    items = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and (
            lenient or not node.args):
        items = [(kw.arg, kw.value, kw.lineno) for kw in node.keywords if kw.arg is not None or not lenient]
        if any(k is None for k, _, _ in items):
            raise ValueError("**kwargs in config")
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is None:
                if lenient:
                    continue
                raise ValueError("** in config")
            items.append((ast.literal_eval(key), value, key.lineno))
    else:
        if lenient:
            return {}
        raise ValueError("not a dict")
    result: Dict[str, Any] = {}
    for key, value, lineno in items:
        path = f"{prefix}{key}"
        text = comments.get(lineno - 1)
        if text is None:  # a trailing comment on the same line
            text = comments.get(lineno)
        if text:
            out_comments[path] = text
        is_dict = isinstance(value, ast.Dict) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                                                  and value.func.id == "dict")
        if is_dict and not _is_literal(value):
            result[key] = _dict_node(value, comments, path + ".", out_comments, lenient)
        elif lenient and not _is_literal(value):
            result[key] = NOT_STATIC
        else:
            result[key] = ast.literal_eval(value)
    return result


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        return False


def static_class_config(location: str, attribute: str = "config",
                        lenient: bool = False) -> Optional[Tuple[Dict[str, Any], Comments]]:
    """Defaults and comments of ``attribute`` of the class at ``"module:Class"``, or None if not static
    (``lenient``: for its comments, a default that is not a literal is ``NOT_STATIC``)."""
    module_name, class_name = location.split(":")
    try:
        source = _module_source(module_name)
    except (ImportError, ValueError):
        return None
    if source is None:
        return None
    return _class_config_in(source, class_name, attribute, lenient)


def loaded_class_config(cls: type, attribute: str = "config",
                        lenient: bool = False) -> Optional[Tuple[Dict[str, Any], Comments]]:
    """Defaults and comments of ``attribute`` of a loaded class, read from its own source (``inspect``): for a
    class that ``static_class_config`` cannot find by module name (defined in a script's ``__main__`` or in a
    function). None when the source is unavailable or not static."""
    source = _loaded_class_source(cls)
    if source is None:
        return None
    return _class_config_in(source, cls.__name__, attribute, lenient)


def source_available(cls: type) -> bool:
    """Whether ``inspect`` can read the source of a loaded class (not for one defined on stdin or in a REPL)."""
    return _loaded_class_source(cls) is not None


@functools.lru_cache(maxsize=256)
def _loaded_class_source(cls: type) -> Optional[str]:
    """``inspect.getsource`` of a loaded class, dedented (None when unavailable); cached: it scans the whole file."""
    import inspect
    import textwrap

    try:
        return textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return None


def _class_config_in(source: str, class_name: str, attribute: str,
                     lenient: bool = False) -> Optional[Tuple[Dict[str, Any], Comments]]:
    """A copy of the parsed defaults and comments (parsing is cached per source text: every config compile asks)."""
    return copy.deepcopy(_parsed_class_config(source, class_name, attribute, lenient))


@functools.lru_cache(maxsize=256)
def _parsed_class_config(source: str, class_name: str, attribute: str,
                         lenient: bool = False) -> Optional[Tuple[Dict[str, Any], Comments]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    comments = _comment_lines(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in stmt.targets):
                    try:
                        if isinstance(stmt.value, ast.Name):  # ``config = NAME``: a module-level dict of the same file
                            return _parsed_module_dict(source, stmt.value.id, lenient)
                        out_comments: Comments = {}
                        return _dict_node(stmt.value, comments, "", out_comments, lenient), out_comments
                    except (ValueError, SyntaxError):
                        return None
    return None


def module_dict_config(module_name: str, name: str) -> Tuple[Dict[str, Any], Comments]:
    """Defaults and comments of the module-level ``name = dict(...)`` in ``module_name`` (must be static)."""
    source = _module_source(module_name)
    assert source is not None, module_name
    found = _parsed_module_dict(source, name)
    if found is None:
        raise KeyError(f"{module_name}.{name}")
    return copy.deepcopy(found)


@functools.lru_cache(maxsize=64)
def _parsed_module_dict(source: str, name: str, lenient: bool = False) -> Optional[Tuple[Dict[str, Any], Comments]]:
    tree = ast.parse(source)
    comments = _comment_lines(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            out_comments: Comments = {}
            return _dict_node(node.value, comments, "", out_comments, lenient), out_comments
    return None
