"""Ready targets by name: Apache httpd and nginx (`web.py`), and the
services a stack starts beside them, PHP-FPM (`phpfpm.py`) and PostgreSQL
(`postgresql.py`), each from the Debian packages, rendered per start on a
port and in a folder of its own."""

from corebench.targets.recipes.web import MPMS, RECIPES, WSGI_MODES, RecipeError, expand, place_apps, settings

__all__ = ["MPMS", "RECIPES", "WSGI_MODES", "RecipeError", "expand", "place_apps", "settings"]
