"""The settings ab's -A, -C, -X, -g and -v stand for, in every entry point's
words: what they become in the engine's configuration, and their errors."""

import base64

import pydantic
import pytest

import corebench
from corebench.config.settings import LoadSettings, SettingError, engine_config

URL = "http://127.0.0.1:8080/"


def config(**s):
    return engine_config(LoadSettings(url=URL, **s))


def headers(**s):
    return [tuple(h) for h in config(**s).model_dump()["headers"]]


def test_auth_is_basic_authorization_of_the_credentials_as_given():
    assert headers(auth=" user:pa:ss", headers=[("X-A", "1")]) == [
        ("X-A", "1"),
        ("Authorization", "Basic " + base64.b64encode(b"user:pa:ss").decode()),
    ]


def test_cookies_go_in_one_header():
    assert headers(cookies=["a=1", "b=2; c=3", "d=;"]) == [("Cookie", "a=1; b=2; c=3; d=")]
    assert headers(cookies=[]) == []


@pytest.mark.parametrize(
    "settings, key, fragment",
    [
        ({"auth": "nopassword"}, "auth", "USER:PASSWORD"),
        ({"auth": "u:p", "headers": [("authorization", "x")]}, "auth", "Authorization header"),
        ({"cookies": ["novalue"]}, "cookies", "name=value"),
        ({"cookies": ["=1"]}, "cookies", "name=value"),
        ({"cookies": [";"]}, "cookies", "name=value"),
        ({"cookies": ["a=1\r\nX: y"]}, "cookies", "name=value"),
        ({"cookies": ["a=1"], "headers": [("Cookie", "b=2")]}, "cookies", "Cookie header"),
    ],
)
def test_bad_credentials_and_cookies_name_their_setting(settings, key, fragment):
    with pytest.raises(SettingError, match=fragment) as e:
        config(**settings)
    assert e.value.key == key


def test_proxy_trace_and_heads_reach_the_engine():
    c = config(proxy="127.0.0.1:3128", trace=True, heads=True)
    assert (c.proxy, c.trace, c.capture_heads) == ("127.0.0.1:3128", True, True)
    assert (config().proxy, config().trace, config().capture_heads) == (None, False, False)


def test_the_engine_refuses_a_remote_proxy_under_the_proxy_key():
    from corebench import engine

    with pytest.raises(corebench.UsageError) as e:
        engine.check(corebench.load_config(URL, proxy="192.0.2.1:3128"))
    assert getattr(e.value, "key", None) == "proxy" and "not on a loopback address" in str(e.value)


def test_http_names_every_protocol_the_engine_speaks():
    # Taken from the engine's generated type, not restated.
    assert config(http="2").http_version == "2" and config(http="1.0").http_version == "1.0"
    with pytest.raises(pydantic.ValidationError, match=r"'3' is not a protocol corebench speaks: give 1\.0, 1\.1, 2"):
        LoadSettings(url=URL, http="3")
