"""What a test's code names, read from its compiled code: the names it loads, imports and binds, its string
constants, and the tests/ functions and classes it reaches (its fixtures, the helpers it calls or imports), followed
transitively. The quick tier's rule and the release-file rule read tests this way; a word in a comment or a
docstring does not count, and code outside tests/ (the library) is not followed."""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.name  # "tests"


@functools.lru_cache(maxsize=None)
def _modulein_tests(module: str) -> bool:
    file = getattr(sys.modules.get(module), "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(TESTS)


def in_tests(obj) -> bool:
    return isinstance(getattr(obj, "__module__", None), str) and _modulein_tests(obj.__module__)


@functools.lru_cache(maxsize=None)
def _tests_module(name: str):
    """The module or package ``name`` (``tests.x``, ``tests.helpers.x``...) of tests/, imported if it was not yet
    (tests import helpers in their bodies; the helpers import nothing heavy at their top), or None."""
    if not name.startswith(f"{PACKAGE}."):
        return None
    if name not in sys.modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, AttributeError, ValueError):  # a parent that is a module, not a package
            return None
        if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(TESTS):
            return None
        importlib.import_module(name)
    return sys.modules[name]


def _codes(code):
    """``code`` and the code nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _codes(const)


@functools.lru_cache(maxsize=None)
def code_facts(obj) -> tuple[frozenset, frozenset, tuple]:
    """The names that ``obj``'s code uses, its string constants, and the tests/ functions and classes it names
    (module globals, attributes of a tests/ module, and what the code imports from tests/)."""
    if inspect.isclass(obj):
        members = [getattr(value, "__func__", value) for value in vars(obj).values()]
        members += [value.fget for value in members if isinstance(value, property)]
        return frozenset(), frozenset(), tuple(value for value in members if inspect.isfunction(value))
    names, strings = set(), set()
    for code in _codes(obj.__code__):
        names.update(code.co_names, code.co_varnames)
        strings.update(const for const in code.co_consts if isinstance(const, str))
    space = sys.modules[obj.__module__].__dict__
    modules = {_tests_module(getattr(space.get(name), "__name__", "")) for name in names}  # tests.x as a global
    modules |= {_tests_module(name) for name in names}  # from tests.helpers.x import y
    packages = {PACKAGE} | {module.__name__ for module in modules - {None} if hasattr(module, "__path__")}
    modules |= {_tests_module(f"{package}.{name}") for package in packages for name in names}  # import x from a package
    values = [space.get(name) for name in names]
    values += [getattr(module, name, None) for module in modules - {None} for name in names]
    values = [getattr(value, "__wrapped__", value) for value in values]  # a fixture definition -> its function
    followed = tuple(value for value in values if (inspect.isfunction(value) or inspect.isclass(value))
                     and in_tests(value) and value is not obj)
    return frozenset(names), frozenset(strings), followed


def reachable_facts(roots):
    """``(names, strings)`` of each function or class reachable from ``roots`` through tests/ code, breadth first."""
    seen, todo = set(), list(roots)
    while todo:
        obj = todo.pop(0)
        if obj in seen:
            continue
        seen.add(obj)
        names, strings, followed = code_facts(obj)
        yield names, strings
        todo.extend(followed)


def item_code(item) -> list:
    """A pytest item's test function and the functions of the tests/ fixtures it uses ([] when it has no function)."""
    function = getattr(item, "function", None)
    if function is None:
        return []
    fixtures = [fixture.func for defs in item._fixtureinfo.name2fixturedefs.values() for fixture in defs
                if in_tests(fixture.func)]
    return [function, *fixtures]
