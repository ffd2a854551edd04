"""ab's -v lines, folded: each status once, with the responses it stands for."""

from types import SimpleNamespace

from corebench.output.verbose import AbVerbose
from corebench.result import Heads


def run(status_counts, heads=None):
    return SimpleNamespace(status_counts=status_counts, heads=heads)


def test_levels():
    heads = Heads(request="POST /a HTTP/1.1\r\nHost: x\r\n\r\n", response="HTTP/1.1 200 OK\r\n\r\n")
    r = run({200: 7, 404: 1, 503: 2}, heads)
    assert AbVerbose(0).render(r, None) == AbVerbose(1).render(r, None) == ""
    assert AbVerbose(2).render(r, None) == (
        "INFO: POST header == \n---\nPOST /a HTTP/1.1\r\nHost: x\r\n\r\n\n---\n"
        "LOG: header received:\nHTTP/1.1 200 OK\r\n\r\n\n"
        "WARNING: Response code not 2xx (404)\n"
        "WARNING: Response code not 2xx (503) (2 responses)\n"
    )
    assert (
        AbVerbose(4)
        .render(r, None)
        .endswith(
            "LOG: Response code = 200 (7 responses)\n"
            "WARNING: Response code not 2xx (404)\n"
            "WARNING: Response code not 2xx (503) (2 responses)\n"
        )
    )


def test_without_a_response_only_the_request_is_shown():
    r = run({}, Heads(request="GET / HTTP/1.1\r\n\r\n", response=None))
    assert AbVerbose(3).render(r, None) == "INFO: GET header == \n---\nGET / HTTP/1.1\r\n\r\n\n---\n"
