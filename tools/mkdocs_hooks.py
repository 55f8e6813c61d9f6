"""mkdocs hooks of the documentation site (mkdocs.yml's ``hooks:``), a repository tool.

The docstrings are written for Python's ``help()`` and doctest, with Sphinx roles
(``:class:`~tokamata.Limits```); mkdocstrings renders them as Markdown, where a role shows as
literal text before the code. This hook drops the role and, for ``~a.b.C``, keeps the last name
as Sphinx would: the reference reads ``Limits`` where the docstring says
``:class:`~tokamata.Limits```.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):(?=<code>)")
_TILDE = re.compile(r"<code>~(?:[\w]+\.)*([\w]+)</code>")


def on_page_content(html: str, **_kwargs) -> str:
    return _TILDE.sub(r"<code>\1</code>", _ROLE.sub("", html))
