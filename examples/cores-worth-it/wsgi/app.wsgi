"""The first field report's page on a real stack: a small WSGI application
in the shape of the Pylons page the report measured under Apache. A route
table maps the path to a controller; the controller reads the time
(time.localtime(time.time())) and puts it in the context; the view renders
a template through a layout (the report's "autohandler", here jinja2
template inheritance). Served by Apache httpd with mod_wsgi (Debian's
libapache2-mod-wsgi-py3), jinja2 from Debian's python3-jinja2."""

import os
import time

import jinja2

HERE = os.path.dirname(os.path.abspath(__file__))
# Loaded once per process, as a framework does at start-up.
TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")), autoescape=True)


def index(context):
    context["now"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time()))
    return "index.html"


ROUTES = {"/": index, "/index": index}


def application(environ, start_response):
    controller = ROUTES.get(environ.get("PATH_INFO") or "/")
    if controller is None:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "10")])
        return [b"not found\n"]
    context = {"path": environ.get("PATH_INFO") or "/"}
    body = TEMPLATES.get_template(controller(context)).render(**context).encode()
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]
