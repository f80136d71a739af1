"""The jinja environment chat templates are rendered in, as transformers 5 builds it.

transformers' own (``utils.chat_template_utils._compile_jinja_template``): a sandbox with
``trim_blocks`` and ``lstrip_blocks``, loop controls, a ``tojson`` that keeps non-ASCII
and HTML characters, ``raise_exception``, ``strftime_now``, a limited ``dict`` and a
``namespace`` that refuses underscore names. Only its ``{% generation %}`` tag (for
assistant masks) is left out: FastTokenizer hands such templates to transformers.
Tests compare every rendering with transformers'.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

GENERATION_TAG = re.compile(r"\{\%-?\s*generation\s*-?\%\}")


def _raise_exception(message: str) -> None:
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """``dict`` without attribute access to the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


@lru_cache(maxsize=8)
def compile_template(source: str) -> Any:
    """The compiled template (cached by its text, as transformers caches it)."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:  # jinja's signature trick
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    "Chat templates cannot store underscore-prefixed attributes on a "
                    f"namespace, but got {name!r}. Please rename the attribute."
                )

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(source)
