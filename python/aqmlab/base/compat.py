"""Small shims for the Python versions aqmlab supports (3.10 and later).

``tomllib`` joined the standard library in Python 3.11; on 3.10 the same parser is the ``tomli``
package (a dependency there, see pyproject.toml). Every module imports it from here::

    from ..base.compat import tomllib
"""

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
