"""A layout's `classes:` section: mobile-env's own extension classes named by import path.

mobile-env builds its channel, UE movement, arrival pattern, utility and scheduler from
classes in its config (`channel`, `channel_params`, ...). A layout names a user's subclasses
of them the same way:

    classes:
      pythonpath: [.]                    # folders searched first (relative to the layout file)
      channel: logdistance:LogDistance   # MODULE:CLASS, a subclass of mobile-env's Channel
      channel_params: {exponent: 3.5}    # its constructor's keyword arguments

Validation imports each class (from `pythonpath`, the working directory or `PYTHONPATH`),
checks that it subclasses mobile-env's base and implements the base's methods, and records the
folder each module was found in (`pythonpath`, absolute): a Ray worker or evaluation process
whose working directory differs imports the same module. Loading a layout file
(`mobrl.scenarios.load`) then builds each class once with its parameters (`check_built`). The section is absent from a layout that does not give it, so such a layout's
data stays what it was. A layout with classes runs on mobile-env's own step (engine=stock):
mobrl's fast engine reimplements mobile-env's stock classes, not a user's
(`mobrl.scenarios.mobile_core.engine_for`).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, first_line
from mobrl.core.imports import absolute, on_sys_path


@dataclass(frozen=True)
class Base:
    """A mobile-env base class a layout's class must subclass, and what it must implement."""

    module: str
    name: str
    #: the methods mobile-env calls that the base leaves abstract
    methods: tuple[str, ...]
    #: how they are called, for the fix of an error
    signature: str
    #: constructor arguments mobile-env or mobrl set, with where their value comes from
    reserved: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"{self.module}.{self.name}"


#: mobile-env's seeding gives each class its own seed from the layout's
_SEED = {"seed": "mobile-env derives it from the layout's seed"}
_RNG = {"reset_rng_episode": "mobrl keeps one random stream across episodes"}

#: the classes a layout may name, in mobile-env's config order, with their bases
BASES: dict[str, Base] = {
    "channel": Base(
        "mobile_env.core.channels", "Channel", ("power_loss",),
        "power_loss(self, bs, ue) returning the loss in dB", _SEED,
    ),
    "movement": Base(
        "mobile_env.core.movement", "Movement", ("move", "initial_position"),
        "move(self, ue) and initial_position(self, ue), each returning (x, y)",
        {**_SEED, "width": "set movement.width instead", "height": "set movement.height instead",
         **_RNG},
    ),
    "arrival": Base(
        "mobile_env.core.arrival", "Arrival", ("arrival", "departure"),
        "arrival(self, ue) and departure(self, ue), each returning a step",
        {**_SEED, "ep_time": "set episode_length instead", **_RNG},
    ),
    "utility": Base(
        "mobile_env.core.utilities", "Utility", ("utility", "scale", "unscale"),
        "utility(self, rate), scale(self, utility) and unscale(self, utility), and set "
        "self.lower and self.upper (or subclass BoundedLogUtility)", _SEED,
    ),
    "scheduler": Base(
        "mobile_env.core.schedules", "Scheduler", ("share",),
        "share(self, bs, rates) returning each link's rate", _SEED,
    ),
}  # fmt: skip
#: every key of the section, in the order errors list them
KEYS = ("pythonpath", *(k for name in BASES for k in (name, f"{name}_params")))
#: the layout key that picks what a class replaces, and its value naming mobile-env's own
#: class (which the layout's class replaces; any other value contradicts it)
REPLACES = {
    "channel": ("radio", "channel", "okumura_hata"),
    "scheduler": ("radio", "scheduler", "resource_fair"),
    "movement": ("movement", "model", "random_waypoint"),
    "arrival": ("arrival", "model", "always"),
}


def named(section: dict[str, Any] | None) -> dict[str, str]:
    """The classes a validated section names: key -> import path, in mobile-env's order."""
    section = section or {}
    return {key: section[key] for key in BASES if section.get(key)}


def describe(section: dict[str, Any] | None) -> str:
    """`channel=mod:Class, ...`: the classes of a section, for messages."""
    return ", ".join(f"{key}={spec}" for key, spec in named(section).items())


def config_entries(section: dict[str, Any]) -> dict[str, Any]:
    """mobile-env config entries of a validated section: each class and its `*_params`,
    imported from the section's `pythonpath` (then the working directory, `PYTHONPATH`)."""
    from mobrl.core.imports import import_object

    on_sys_path(section.get("pythonpath") or [])
    entries: dict[str, Any] = {}
    for key, spec in named(section).items():
        entries[key] = import_object(spec, f"classes.{key}")
        entries[f"{key}_params"] = dict(section.get(f"{key}_params") or {})
    return entries


def own_service(layout: Any) -> bool:
    """Whether `layout` names its own utility or scheduler: a step's utilities are then its
    classes', not the arithmetic of mobrl.network.service (mobile-env's BoundedLogUtility of
    resource-fair shares) that `env.reward=marginal`, `env.obs=topk_gain` and the link-set
    baselines (`capped`, `oracle`) score links with."""
    found = named(layout.get("classes")) if isinstance(layout, dict) else {}
    return bool({"utility", "scheduler"} & set(found))


def check_settings(
    layout: Any, name: str, obs: str, reward: str, sampler: str | None = None
) -> None:
    """One-line errors for env settings a layout naming its own classes cannot take: the
    UE-slot sampler (mobrl's fast engine only), and mobrl's service arithmetic where the
    layout's own utility or scheduler replaces mobile-env's (`own_service`)."""
    found = describe(layout.get("classes")) if isinstance(layout, dict) else ""
    if found and sampler == "ue_slots":
        raise UserError(
            f"env.sampler=ue_slots needs mobrl's fast engine, but layout {name} names its own "
            f"mobile-env classes ({found}) and runs on mobile-env's stock engine. "
            "Use env.sampler=auto or multi_agent."
        )
    setting = "env.reward=marginal" if reward == "marginal" else None
    if obs in ("topk_gain", "topk_impact", "topk_intent"):
        setting = f"env.obs={obs}"
    if setting is not None and own_service(layout):
        own = {k: v for k, v in named(layout["classes"]).items() if k in ("utility", "scheduler")}
        fix = "Use env.obs=topk" if setting.startswith("env.obs") else "Use env.reward=mobile"
        raise UserError(
            f"{setting} scores links with mobile-env's stock utility and resource-fair shares, "
            f"but layout {name} names its own ({describe(own)}). {fix}, or drop those classes."
        )


# --- validation --------------------------------------------------------------------------------


def check(check: Any, data: dict[str, Any]) -> None:
    """Validate `data["classes"]` (the file's section) in place: its keys, each class (an
    import path to a subclass of mobile-env's base implementing its methods), its parameters,
    and what contradicts it elsewhere in the layout; `pythonpath` becomes absolute folders
    with each module's own folder added. `check`: the schema's `Checker`."""
    section = data["classes"]
    if not isinstance(section, dict):
        raise check.fail("classes", "must be a mapping", "Write e.g. classes: {channel: mod:Cls}.")
    check.keys(section, list(KEYS), "classes.")
    section = dict(section)  # the file's own stays as read
    folders = _folders(check, section.get("pythonpath"))
    on_sys_path(folders)
    for key in BASES:
        if section.get(key) is not None:
            section[key] = absolute(section[key], _base(check))
            folders += [f for f in [_check_class(check, key, section[key])] if f]
        _check_params(check, section, key)
    data["classes"] = {"pythonpath": list(dict.fromkeys(folders))}
    data["classes"].update((k, v) for k, v in section.items() if k != "pythonpath")
    _check_contradictions(check, data)


def _folders(check: Any, given: Any) -> list[str]:
    """`classes.pythonpath` as absolute folders (relative ones from the layout file's folder)."""
    if given is None:
        return []
    items = [given] if isinstance(given, str) else given
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise check.fail(
            "classes.pythonpath", f"must be a list of folders, got {given!r}", "Write e.g. [.]."
        )
    base = _base(check)
    out = []
    for item in items:
        folder = (base / Path(item).expanduser()).resolve()
        if not folder.is_dir():
            raise check.fail(
                "classes.pythonpath",
                f"names '{item}', which is no folder ({folder})",
                "Give folders relative to the layout file, or absolute ones.",
            )
        out.append(str(folder))
    return out


def _base(check: Any) -> Path:
    """Where relative paths of the section start: the layout file's folder."""
    return check.path.parent if check.path.suffix else Path.cwd()


def _check_class(check: Any, key: str, spec: Any) -> str | None:
    """Import `classes.<key>` and check it against its base; return the folder its module was
    found in (None: an installed module every process of this Python finds)."""
    from mobrl.core.imports import import_object, is_import_path, module_folder

    where, base = f"classes.{key}", BASES[key]
    if not is_import_path(spec):
        raise check.fail(
            where,
            f"is {spec!r}, not an import path MODULE:CLASS",
            f"Write e.g. {key}: my_{key}s:My{key.title()} (a module on classes.pythonpath, "
            "the working directory or PYTHONPATH).",
        )
    try:
        cls = import_object(spec, where)
    except UserError as err:
        message = str(err)
        if "no module named" in message:  # one more place to look: the layout's own
            message = message.rstrip(".") + ", or list its folder under classes.pythonpath."
        raise UserError(f"scenario file '{check.path}': {message}") from None
    parent = getattr(importlib.import_module(base.module), base.name)
    if not (isinstance(cls, type) and issubclass(cls, parent)):
        raise check.fail(
            where,
            f"'{spec}' is not a subclass of mobile-env's {base.name} ({base.path})",
            f"Subclass {base.path} and implement {base.signature}.",
        )
    missing = [m for m in base.methods if getattr(cls, m, None) is getattr(parent, m)]
    if missing:
        raise check.fail(
            where,
            f"'{spec}' does not implement {' and '.join(missing)} of mobile-env's {base.name}",
            f"Implement {base.signature}.",
        )
    return module_folder(spec)


def _check_params(check: Any, section: dict[str, Any], key: str) -> None:
    """`classes.<key>_params`: a mapping of keyword arguments, given with its class, without
    the arguments mobile-env or mobrl set."""
    name = f"{key}_params"
    params = section.get(name)
    if params is None:
        return
    where = f"classes.{name}"
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise check.fail(where, f"must be a mapping of arguments, got {params!r}", "Fix it.")
    if section.get(key) is None:
        raise check.fail(
            where, f"is given without classes.{key}", f"Add {key}: MODULE:CLASS, or drop {name}."
        )
    for arg, why in BASES[key].reserved.items():
        if arg in params:
            raise check.fail(f"{where}.{arg}", "is not the class's to take", f"Drop it: {why}.")


def _check_arguments(check: Any, key: str, spec: str, cls: type, params: dict) -> None:
    """Each of `classes.<key>_params` names an argument of the class's `__init__` or of a
    base's: mobile-env's bases take any keyword and ignore it, so a misspelt one would be
    dropped without a word. A class of the user's whose `__init__` takes `**kwargs` alone
    reads its arguments from them: its names cannot be known, so they are not checked."""
    import inspect

    named_args = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    known: list[str] = []
    for owner in cls.__mro__[:-1]:  # object's takes nothing
        if "__init__" in vars(owner):
            arguments = inspect.signature(owner.__init__).parameters.values()
            names = [a.name for a in arguments if a.kind in named_args and a.name != "self"]
            if not names and not owner.__module__.startswith("mobile_env."):
                return  # a user's `__init__(self, **kwargs)`
            known += names
    reserved = BASES[key].reserved
    known = [k for k in dict.fromkeys(known) if k not in reserved]
    for arg in params:
        if arg not in known:
            close = difflib.get_close_matches(arg, known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise check.fail(
                f"classes.{key}_params.{arg}",
                f"is no argument of {spec}'s __init__{hint}",
                (f"Use one of: {', '.join(known)}" if known else "Drop it")
                + f", or name it in {cls.__name__}.__init__.",
            )


def _check_contradictions(check: Any, data: dict[str, Any]) -> None:
    """A class and a layout key that picks another model of the same thing (a class replaces
    mobile-env's own model only: `REPLACES`), and classes in a layout whose radio section or
    movement model needs mobrl's fast engine."""
    from mobrl.radio.config import RadioConfig

    section = data["classes"]
    for key, (owner, name, stock) in REPLACES.items():
        value = data[owner][name]
        if section.get(key) is not None and value != stock:
            raise check.fail(
                f"{owner}.{name}",
                f"is {value}, but classes.{key} names the {key} ({section[key]})",
                f"Drop {owner}.{name} (or set it to {stock}), or drop classes.{key}.",
            )
    model = data["movement"]["model"]
    # what `mobrl.scenarios.beyond_mobile_env` finds: the fast engine's alone
    beyond = {
        "radio": ("radio section", "Drop the radio section (keep mobile-env's model)"),
        "movement": (f"movement model {model}", "Set movement.model: random_waypoint"),
    }
    stock = {
        "radio": RadioConfig.of(data["radio"]).is_stock,
        "movement": model == REPLACES["movement"][2],
    }
    found = [beyond[k] for k in beyond if not stock[k]]
    if found and named(section):
        what, fix = found[0]
        raise check.fail(
            "classes",
            f"run on mobile-env's own step (engine=stock), which does not model this layout's "
            f"{what} (mobrl's fast engine does)",
            f"{fix}, or drop classes.",
        )


def check_built(check: Any, data: dict[str, Any], config: dict[str, Any]) -> None:
    """Build each class of a validated layout once as mobile-env will from `config` (the
    layout's mobile-env config, `mobrl.scenarios.build_config`'s), so a parameter it does not
    take fails here in one line, not later inside a Ray worker."""
    from mobile_env.core.base import MComCore
    from mobile_env.core.util import deep_dict_merge

    section = data["classes"]
    config = MComCore.seeding(deep_dict_merge(MComCore.default_config(), dict(config)))
    for key, spec in named(section).items():
        params = section.get(f"{key}_params") or {}
        _check_arguments(check, key, spec, config[key], params)
        try:
            made = config[key](**config[f"{key}_params"])
        except Exception as err:  # the user's constructor
            raise check.fail(
                f"classes.{key}",
                f"'{spec}' cannot be made with classes.{key}_params {params}: "
                f"{type(err).__name__}: {first_line(err)}",
                f"Fix classes.{key}_params or the class's __init__.",
            ) from None
        if key == "utility" and not all(hasattr(made, a) for a in ("lower", "upper")):
            raise check.fail(
                "classes.utility",
                f"'{spec}' has no lower and upper (mobile-env reads the utility's bounds)",
                f"Implement {BASES['utility'].signature}.",
            )
