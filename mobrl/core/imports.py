"""Objects named by import path (`MODULE:NAME`, `MODULE.NAME`, or `FILE.py:NAME`): a user's env
factory, rule, or mobile-env class, found on the working directory and `PYTHONPATH` like
`python -m` finds them (a file's own folder joins `sys.path`, so it may import its
neighbours), with one-line errors that name the key, the value and the fix."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, first_line


def is_import_path(value: Any) -> bool:
    """Whether `value` looks like `MODULE:NAME` or `FILE.py:NAME` (how mobrl tells a user's
    object from a name of its own, such as a baseline's)."""
    if not isinstance(value, str) or ":" not in value:
        return False
    module, _, name = value.rpartition(":")
    if module.endswith(".py"):
        return bool(name)
    return bool(name) and all(part.isidentifier() for part in module.split("."))


def split_path(spec: str, key: str) -> tuple[str, str]:
    """`MODULE:NAME` (or `MODULE.NAME`, or `FILE.py:NAME`) as (module or file, attribute
    path), or a one-line error."""
    spec = str(spec).strip()
    if ":" in spec:
        module, _, name = spec.rpartition(":")
    else:
        module, _, name = spec.rpartition(".")
    parts = ([] if module.endswith(".py") else module.split(".")) + name.split(".")
    if not module or not name or not all(part.isidentifier() for part in parts):
        raise UserError(
            f"{key}={spec!r} is not an import path. Write it as MODULE:NAME, "
            "e.g. {key}=my_envs:make_env.".replace("{key}", key)
        )
    return module, name


def _on_path() -> None:
    """The working directory first on `sys.path`, as `python -m` puts it (a console script
    such as `mobrl` starts without it)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _from_file(path: str, spec: str, key: str) -> Any:
    """The module of a Python file (imported once per process, by its absolute path)."""
    import importlib.util

    file = os.path.abspath(path)
    if not os.path.isfile(file):
        raise UserError(f"{key}={spec}: no file {file}. Fix the path before the colon.")
    import zlib

    stem = os.path.splitext(os.path.basename(file))[0]
    name = f"mobrl_user_{stem}_{zlib.crc32(file.encode()):08x}"
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.dirname(file)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file may import its neighbours
    found = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(found)  # type: ignore[arg-type]
    sys.modules[name] = module
    was, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ beside it
    try:
        found.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.dont_write_bytecode = was
    return module


def import_object(spec: str, key: str) -> Any:
    """The object `spec` names (`MODULE:NAME`, NAME may be dotted), imported from the working
    directory or `PYTHONPATH`; a missing module or attribute, or an error while importing
    the user's module, is a one-line `UserError` naming `key`."""
    module_name, name = split_path(spec, key)
    _on_path()
    try:
        if module_name.endswith(".py"):
            module = _from_file(module_name, spec, key)
        else:
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and module_name.split(".")[0] == err.name.split(".")[0]:
            raise UserError(
                f"{key}={spec}: no module named '{err.name}' on the working directory "
                f"({os.getcwd()}) or PYTHONPATH. Run from the directory that holds it or add "
                "its directory to PYTHONPATH."
            ) from err
        raise UserError(
            f"{key}={spec}: importing '{module_name}' failed: {first_line(err)}. "
            "Install what it imports."
        ) from err
    except Exception as err:  # the user's module raised while being imported
        raise UserError(
            f"{key}={spec}: importing '{module_name}' raised {type(err).__name__}: "
            f"{first_line(err)}. Fix the module."
        ) from err
    target: Any = module
    for part in name.split("."):
        if not hasattr(target, part):
            found = sorted(n for n in dir(target) if not n.startswith("_"))[:8]
            raise UserError(
                f"{key}={spec}: '{module_name}' has no attribute '{name}'"
                + (f" (it has: {', '.join(found)})" if found else "")
                + ". Fix the name after the colon."
            )
        target = getattr(target, part)
    return target


def absolute(spec: Any, base: str | os.PathLike | None = None) -> Any:
    """`spec` with a file's path made absolute (`FILE.py:NAME`; a relative one from `base`,
    default the working directory), so another process started elsewhere finds the same
    file; module paths and other values unchanged."""
    if not isinstance(spec, str):
        return spec
    module, sep, name = spec.rpartition(":")
    if not (sep and module.endswith(".py")):
        return spec
    path = Path(base or os.getcwd()) / Path(module).expanduser()
    return f"{path.resolve()}:{name}"


def module_folder(spec: str) -> str | None:
    """The `sys.path` folder the module of an imported `spec` (`MODULE:NAME`) came from, for
    processes whose working directory differs; None for a file spec (its path is absolute)
    and for modules installed with Python or into its environment, which every process of
    this Python finds."""
    import sysconfig

    module_name = spec.rpartition(":")[0]
    if module_name.endswith(".py"):
        return None
    module = sys.modules.get(module_name.split(".")[0])
    origin = getattr(module, "__file__", None)
    if origin is None:
        locations = list(getattr(module, "__path__", []) or [])
        if not locations:
            return None
        folder = Path(locations[0]).resolve().parent
    else:
        path = Path(origin).resolve()
        folder = path.parent.parent if hasattr(module, "__path__") else path.parent
    installed = {Path(p).resolve() for k, p in sysconfig.get_paths().items() if "lib" in k}
    return None if folder in installed else str(folder)


def on_sys_path(folders: list[str]) -> None:
    """`folders` first on `sys.path`, in their order (those there already stay where they are)."""
    for folder in reversed([f for f in folders if f and f not in sys.path]):
        sys.path.insert(0, folder)
