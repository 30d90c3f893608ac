"""Errors that name a parameter: :class:`ParameterError`, whose message (a :class:`Wording`) each face says in its own
terms: the library with Python's names, ``ts2`` with its options (the parser's own dest -> option table), the demo with
its fields. The face translates the name, never the text."""
from __future__ import annotations

import ast
import re
from typing import Any, Callable, Mapping, NamedTuple

__all__ = ["EXTRA_OF", "Mention", "ParameterError", "Wording", "install_hint", "mention", "missing_extra_error",
           "value_error", "wording_of"]


class Mention(NamedTuple):
    """One parameter named in a :class:`Wording`. ``python``: how the library writes it (``n_bootstrap``,
    ``clean_quotes=True``, ``model='x'``, ``human column``); ``argument``: what follows the option on a command line
    (None: the option alone, as for ``clean_quotes=True`` -> ``--clean-quotes``); ``shown``: False where a command line
    leaves it off (a value of None, or a parameter the text names without a word)."""

    name: str
    python: str
    argument: str | None = None
    shown: bool = True

    def worded(self, option: str | None) -> str:
        """As a face says it, ``option`` being its own name for the parameter (None: Python's wording)."""
        if option is None:
            return self.python
        if not self.shown:
            return ""
        return option if self.argument is None else f"{option} {self.argument}"


_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _valued(name: str, value: Any, python_value: str, quoted: bool) -> Mention:
    """``name=VALUE``: on a command line the option and the value (as given, or ``repr`` when ``quoted``); True is
    the option alone, None leaves it off."""
    argument = None if value is True else repr(value) if quoted else str(value)
    return Mention(name, f"{name}={python_value}", argument, value is not None)


def _mention(item: str, values: Mapping[str, Any], used: set) -> Mention:
    """One ``NAME=``, ``NAME=!r`` (its value from ``values``) or ``NAME=LITERAL`` (``True``, ``'item'``, ``FILE``)."""
    name, _, rest = item.strip().partition("=")
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not a parameter name in a wording: {name!r}")
    if rest in ("", "!r"):
        used.add(name)
        return _valued(name, values[name], repr(values[name]), rest == "!r")
    try:
        value = ast.literal_eval(rest)
    except (ValueError, SyntaxError):
        value = rest  # a placeholder (FILE, DIR, PATH): written as it is
    return _valued(name, value, rest, False)


def _append(parts: list, part) -> None:
    if isinstance(part, str):
        if not part:
            return
        if parts and isinstance(parts[-1], str):
            parts[-1] += part
            return
    parts.append(part)


def _parse(template: str, values: Mapping[str, Any]) -> tuple:
    parts: list = []
    used: set = set()
    position = 0
    for match in _FIELD.finditer(template):
        _append(parts, template[position:match.start()])
        position = match.end()
        token, field = match.group(0), match.group(1)
        if token in ("{{", "}}"):
            _append(parts, token[0])
            continue
        if field is None:
            raise ValueError(f"single {token!r} in the wording {template!r}")
        if "=" in re.split("[:!]", field, maxsplit=1)[0]:  # NAME=..., or several, as a call lists them
            parts.append(tuple(_mention(item, values, used) for item in field.split(",")))
            continue
        key, colon, spec = field.partition(":")
        key, bang, conversion = key.partition("!")
        if key in values:
            used.add(key)
            value = values[key]
            inner = wording_of(value)
            if inner is not None and not bang and not colon:  # a text naming parameters: they stay named
                for part in inner.parts:
                    _append(parts, part)
            else:
                value = repr(value) if conversion == "r" else str(value) if conversion == "s" else value
                _append(parts, format(value, spec))
        elif _IDENTIFIER.fullmatch(key) and not bang:
            label = spec if colon else key  # {human:human column}: the library's words; {options:} says nothing
            parts.append((Mention(key, label, None, label != ""),))
        else:
            raise ValueError(f"{{{field}}} in the wording {template!r} names no value and no parameter")
    _append(parts, template[position:])
    unused = set(values) - used
    if unused:
        raise TypeError(f"the wording {template!r} does not use {sorted(unused)}")
    return tuple(parts)


def _say(part, option: Callable[[str], str | None]) -> str:
    if isinstance(part, str):
        return part
    if option is None:
        return ", ".join(m.python for m in part)
    return " ".join(filter(None, (m.worded(option(m.name)) for m in part)))


class Wording(str):
    """A message naming parameters: the ``str`` is the library's wording, each parameter by its Python name
    (``n_bootstrap must be >= 0, got -1``); :meth:`worded` says it as a face does, each parameter as that face's own
    control (``--n-bootstrap must be >= 0, got -1``). The face translates the name, never the text.

    ``Wording(template, **values)``: ``{key}`` (``{key!r}``, ``{key:spec}``) formats ``values[key]`` as
    :meth:`str.format` does, keeping the parameters of a value that is itself a Wording (or an error whose message is
    one); ``{name}`` without a value is parameter ``name`` (``{name:words}``: the library says ``words`` for it;
    ``{name:}``: it says nothing, the error still names it); ``{name=}`` is ``name=`` and its value from ``values``
    (``{name=!r}``: a command line quotes it too), ``{name=True}``/``{name='item'}``/``{name=FILE}`` a literal or a
    placeholder; ``{a=, b=}`` several, as a call lists them (``a=1, b=None``; a command line: ``--a 1``).

        >>> w = Wording("use fewer resamples ({n_bootstrap}) or {grouping='item'}")
        >>> str(w)
        "use fewer resamples (n_bootstrap) or grouping='item'"
        >>> w.worded({"n_bootstrap": "--n-bootstrap", "grouping": "--group-by"})
        'use fewer resamples (--n-bootstrap) or --group-by item'
    """

    parts: tuple

    def __new__(cls, template: str = "", /, **values: Any) -> "Wording":
        if isinstance(template, Wording) and not values:
            return template
        return cls._of(_parse(template, values))

    @classmethod
    def _of(cls, parts: tuple) -> "Wording":
        self = super().__new__(cls, "".join(_say(p, None) for p in parts))
        self.parts = parts
        return self

    def __reduce__(self):  # pickled with its parts (errors cross process boundaries: Ray actors, worker pools)
        return _rebuild, (self.parts,)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters named, in order of first mention."""
        return tuple(dict.fromkeys(m.name for p in self.parts if not isinstance(p, str) for m in p))

    def worded(self, option: Mapping[str, str] | Callable[[str], str | None]) -> str:
        """The text with each parameter said as ``option`` names it (a mapping or a function; a parameter it does not
        name keeps its Python wording)."""
        get = option.get if isinstance(option, Mapping) else option
        return "".join(_say(p, get) for p in self.parts)

    @classmethod
    def joined(cls, separator: str, texts) -> "Wording":
        """``separator.join(texts)``, the parameters each text names kept."""
        parts: list = []
        for k, text in enumerate(texts):
            for part in ((separator,) if k else ()) + (wording_of(text) or Wording("{text}", text=text)).parts:
                _append(parts, part)
        return cls._of(tuple(parts))

    def one_line(self) -> "Wording":
        """Every run of white space as one space, ends stripped (``" ".join(text.split())``), parameters kept."""
        parts = [re.sub(r"\s+", " ", p) if isinstance(p, str) else p for p in self.parts]
        if parts and isinstance(parts[0], str):
            parts[0] = parts[0].lstrip()
        if parts and isinstance(parts[-1], str):
            parts[-1] = parts[-1].rstrip()
        return Wording._of(tuple(p for p in parts if p != ""))


def _rebuild(parts: tuple) -> Wording:
    return Wording._of(parts)


def mention(name: str, *value: Any, quoted: bool = False) -> Wording:
    """Parameter ``name`` alone (``mention("lower_is_better")``), or with its value (``mention("model", "x")``:
    ``model='x'``, on a command line ``--model x``; ``quoted``: ``--model 'x'``): for a name known only at run time."""
    part = _valued(name, value[0], repr(value[0]), quoted) if value else Mention(name, name)
    return Wording._of(((part,),))


def wording_of(message: Any) -> Wording | None:
    """The :class:`Wording` of a text or of an error whose message is one; None when it names no parameter that way."""
    if isinstance(message, Wording):
        return message
    if isinstance(message, BaseException) and len(message.args) == 1 and isinstance(message.args[0], Wording) \
            and str(message) == message.args[0]:
        return message.args[0]
    return None


class ParameterError(ValueError):
    """A bad argument, the message naming the parameter(s) that set it: ``ParameterError(template, **values)`` (the
    template as :class:`Wording` reads it). ``str(error)`` says each parameter as Python does (``n_bootstrap must be
    >= 0, got -1``); ``ts2`` says the option that sets it (``--n-bootstrap must be >= 0, got -1``), the demo its field.
    A ``ValueError``: ``except ValueError`` still catches it.

        >>> error = ParameterError("{n_bootstrap} must be >= 0, got {value}", value=-1)
        >>> str(error), error.parameters
        ('n_bootstrap must be >= 0, got -1', ('n_bootstrap',))
    """

    def __init__(self, template: str, /, **values: Any):
        super().__init__(Wording(template, **values))

    @property
    def wording(self) -> Wording:
        return self.args[0]

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters the message names."""
        return self.wording.parameters


def value_error(template: str, /, **values: Any) -> ValueError:
    """The error for a message that may or may not name a parameter (it words a value that may, e.g. another error):
    a :class:`ParameterError` where it does, else a plain ``ValueError`` (with the :class:`Wording` as its message)."""
    message = Wording(template, **values)
    return ParameterError(message) if message.parameters else ValueError(message)


# ----------------------------------------------------------------------------- missing optional dependencies

#: top-level module -> the ``ts2-evaluate`` extra that installs it
EXTRA_OF = {
    "torch": "models", "torchvision": "models", "transformers": "models", "accelerate": "models",
    "open_clip": "models", "sentence_transformers": "models", "sentencepiece": "models", "google": "models",
    "httpx": "served", "diffusers": "generate", "matplotlib": "report", "gradio": "demo",
    "ray": "ray",
}


def install_hint(extra: str) -> str:
    """How to install ``extra``: from a clone today, by name once the package is on PyPI."""
    return (f"install the {extra} extra: pip install '.[{extra}]' from a clone of ts2-evaluate "
            f"(pip install 'ts2-evaluate[{extra}]' once it is on PyPI)")


def missing_extra_error(error: ImportError) -> ValueError | None:
    """A one-line ``ValueError`` naming the extra for a missing optional dependency, else ``None``."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    extra = EXTRA_OF.get(name)
    if not isinstance(error, ModuleNotFoundError) or extra is None:
        return None
    return ValueError(f"{error}; {install_hint(extra)}")
