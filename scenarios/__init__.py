"""mobrl's built-in mobile-env layouts (installed as the package `mobrl.layouts`).

This folder is data, not a user's own `./scenarios/`: mobrl skips a `./scenarios/` that holds
this file, so running mobrl from its source tree does not list the built-ins twice.
"""
