"""The price lists `catalog refresh` reads, served from recorded answers on 127.0.0.1.

One stub for every refresh test: tests/fixtures/prices/ holds the base answers in each provider's
own format (AWS's region index, two regional AmazonEC2 offer files and the spot feed; two pages
of Azure's Retail Prices API linked by NextPageLink; two pages of GCP's SKUs linked by
nextPageToken), and tests/fixtures/refresh/<scenario>/ holds the answers of a scenario that
replace them (`Stub.scenario`). The INFRA_COMPILE_PRICES_* variables point at the stub, so plain
http is allowed at that origin only.

A test may replace any route (`routes[path]`: a document sent as JSON, bytes, a (status, headers,
body) triple, a function of the query, or a `raw` function of the handler), queue failures
answered first (`fail[path]`: [(status, headers)]), and read what was asked (`requests`) and the
backoff waits the client took (`pauses`).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

from compiler.catalog.refresh import http as refresh_http

ROOT = Path(__file__).resolve().parents[1]
PRICES = ROOT / "tests" / "fixtures" / "prices"
SCENARIOS = ROOT / "tests" / "fixtures" / "refresh"
AWS = "/offers/v1.0/aws/AmazonEC2/"
INDEX = AWS + "current/region_index.json"
OFFER = AWS + "20261128180441/{}/index.json"
SPOT = "/spot.js"
AZURE = "/api/retail/prices"
GCP = "/v1/services/6F81-5844-456A/skus"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def raw(fn):
    """Mark a route as a function of the request handler (it writes the answer itself)."""
    fn.raw = True
    return fn


class Stub:
    """Routes (path -> answer) over the recorded lists, failures to answer first, what was asked."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.origin = ""
        self.routes: dict[str, object] = {}
        self.fail: dict[str, list[tuple[int, dict]]] = {}
        self.pauses: list[float] = []

    def defaults(self) -> None:
        self.aws(PRICES / "aws")
        self.azure(PRICES / "azure")
        self.routes[GCP] = lambda q: load(PRICES / "gcp" / ("page2.json" if q.get("pageToken") else "page1.json"))

    def aws(self, folder: Path) -> None:
        """The region index, each region's offer file and the spot feed in `folder`."""
        index = load(folder / "region_index.json")
        self.routes = {p: a for p, a in self.routes.items() if not p.startswith(AWS)}
        self.routes[INDEX] = index
        for region in index["regions"]:
            file = folder / f"{region}.json"
            if file.exists():
                self.routes[OFFER.format(region)] = file.read_bytes()
        self.routes[SPOT] = (folder / "spot.js").read_bytes()

    def azure(self, folder: Path) -> None:
        """page1.json, and page2.json where there is one (page 1's NextPageLink then leads to it)."""
        page1 = load(folder / "page1.json")
        second = folder / "page2.json"
        if second.exists():
            page1["NextPageLink"] = self.origin + AZURE + "?$skip=100"
            self.routes[AZURE] = lambda q: page1 if q.get("$skip") != ["100"] else load(second)
        else:
            page1["NextPageLink"] = None
            self.routes[AZURE] = lambda q: page1

    def scenario(self, name: str) -> None:
        """Serve tests/fixtures/refresh/<name>/'s answers in place of the base ones it has."""
        folder = SCENARIOS / name
        if (folder / "aws").exists():
            self.aws(folder / "aws")
        if (folder / "azure").exists():
            self.azure(folder / "azure")


def _answer(handler: BaseHTTPRequestHandler, answer) -> None:
    if callable(answer) and getattr(answer, "raw", False):
        answer(handler)
        return
    status, headers, body = answer if isinstance(answer, tuple) else (200, {}, answer)
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    handler.send_response(status)
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def serve(monkeypatch, api_key: str = "test-key") -> Iterator[Stub]:
    """A pytest fixture's body: `yield from serve(monkeypatch)`."""
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            parts = urllib.parse.urlsplit(self.path)
            state.requests.append(self.path)
            failures = state.fail.get(parts.path)
            answer = failures.pop(0) + (b"",) if failures else state.routes.get(parts.path)
            if callable(answer) and not getattr(answer, "raw", False):
                answer = answer(urllib.parse.parse_qs(parts.query))
            try:
                _answer(self, answer if answer is not None else (404, {}, b"not found"))
            except OSError:
                pass     # the client left (a limit stopped it)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.origin = f"http://127.0.0.1:{server.server_address[1]}"
    state.defaults()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("INFRA_COMPILE_PRICES_AWS_URL", state.origin)
    monkeypatch.setenv("INFRA_COMPILE_PRICES_AWS_SPOT_URL", state.origin + SPOT)
    monkeypatch.setenv("INFRA_COMPILE_PRICES_AZURE_URL", state.origin + AZURE)
    monkeypatch.setenv("INFRA_COMPILE_PRICES_GCP_URL", state.origin + GCP)
    monkeypatch.setenv("INFRA_COMPILE_GCP_API_KEY", api_key)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setattr(refresh_http, "pause", state.pauses.append)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
