"""`catalog refresh` and `--catalog` against hostile answers and files (issue 60).

A price list or an overlay is input from outside: each test below is one attack that was tried,
served by a stub HTTP server on 127.0.0.1 (tests/refresh_fixtures.py; the INFRA_COMPILE_PRICES_*
variables point there, so plain http is allowed at that origin only) from the recorded answers in
tests/fixtures/prices/,
with one document changed. Every refusal must be exit 2, one error line naming the endpoint or
file and one hint line, no traceback or internal error, no secret, nothing written, and no local
file read through a link (an audit hook sees every file opened).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from refresh_fixtures import AZURE, GCP, INDEX, OFFER, PRICES, ROOT, Stub, _answer, load, raw, serve
from typer.testing import CliRunner

from compiler.catalog.refresh import http as refresh_http
from compiler.cli import app

KEY = "AIzaSy-Secret+Key/42"          # '+' and '/' so its URL-quoted forms differ from it

OPENED: list[str] = []          # every file opened in this process, while a test listens


def _audit(event: str, args: tuple) -> None:
    if event == "open" and OPENED and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)        # hooks cannot be removed; this one only records while OPENED is armed


def _json(name: str) -> dict:
    return load(PRICES / name)


@pytest.fixture
def stub(monkeypatch):
    yield from serve(monkeypatch, KEY)


def cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def refused(r, provider: str, code: str, *names: str) -> str:
    """The refusal's error line, after checking it is one line and a hint, exit 2, nothing on
    stdout, and names everything in `names` (the endpoint or file)."""
    assert r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[1].startswith("   hint: "), r.stderr
    assert lines[0].startswith(f"catalog refresh {provider}: error[{code}]: "), r.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert r.stdout == ""
    return lines[0]


def refresh_to(tmp_path: Path, provider: str, *extra: str):
    out = tmp_path / "overlay.yaml"
    if OPENED:
        OPENED[:] = ["<armed>"]         # what the refresh opens, not what the test wrote before it
    r = cli("catalog", "refresh", provider, "-o", str(out), *extra)
    assert not out.exists() or r.exit_code == 0, "a failed refresh wrote its file"
    return r


def bait(tmp_path: Path) -> Path:
    """A local file a link could point at: a valid Azure page pricing ND H100 v5 at 1.0."""
    page = _json("azure/page2.json")
    page["Items"] = [dict(_json("azure/page1.json")["Items"][0], retailPrice=1.0)]
    path = tmp_path / "bait.json"
    path.write_text(json.dumps(page))
    return path


@pytest.fixture
def opened():
    """Files opened while the test runs; the listener is checked to hear (no test that cannot fail)."""
    OPENED[:] = ["<armed>"]
    yield OPENED
    probe = OPENED and Path(__file__)
    probe.read_bytes()
    heard = str(probe) in OPENED
    OPENED.clear()
    assert heard, "the audit hook heard no open(): the test proved nothing"


# ---------------------------------------------------------------- links and redirects

@pytest.mark.parametrize("link", ["file://{bait}", "FILE://localhost{bait}", "ftp://127.0.0.1/page2.json",
                                  "data:application/json,%7B%22Items%22%3A%5B%5D%7D",
                                  "http://127.0.0.1:9/api/retail/prices?$skip=100",
                                  "https://prices.example.net/api/retail/prices?$skip=100", "//evil.example/x"])
def test_a_next_page_link_off_the_lists_origin_is_refused_and_never_followed(stub, tmp_path, opened, link):
    path = bait(tmp_path)
    page1 = stub.routes[AZURE](({}))
    page1["NextPageLink"] = link.format(bait=path)
    stub.routes[AZURE] = page1
    r = refresh_to(tmp_path, "azure")
    line = refused(r, "azure", "C026", f"{stub.origin}{AZURE}")
    assert "next page link" in line
    assert str(path) not in opened and len(stub.requests) == 1


def test_an_aws_offer_file_link_to_a_local_file_is_refused_and_never_opened(stub, tmp_path, opened):
    path = tmp_path / "offer.json"
    path.write_bytes((PRICES / "aws" / "us-east-1.json").read_bytes())
    index = copy.deepcopy(stub.routes[INDEX])
    index["regions"]["us-east-1"]["currentVersionUrl"] = f"file://{path}"
    stub.routes[INDEX] = index
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C026", f"{stub.origin}{INDEX}", "us-east-1 offer file link")
    assert str(path) not in opened


def test_a_redirect_on_the_same_origin_is_followed(stub, tmp_path):
    # the control for the refusals below: a redirect as such is not refused
    stub.routes["/moved.js"] = stub.routes["/spot.js"]
    stub.routes["/spot.js"] = (302, {"Location": "/moved.js"}, b"")
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    assert r.exit_code == 0, r.stderr
    assert "/moved.js" in stub.requests


@pytest.mark.parametrize("target", ["file://{bait}", "ftp://127.0.0.1/spot.js", "http://127.0.0.1:9/spot.js",
                                    "data:text/plain,callback(%7B%7D)"])
def test_a_redirect_to_another_scheme_or_origin_is_refused(stub, tmp_path, opened, target):
    path = bait(tmp_path)
    stub.routes["/spot.js"] = (302, {"Location": target.format(bait=path)}, b"")
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C026", "redirect of " + stub.origin + "/spot.js")
    assert str(path) not in opened


def test_a_redirect_loop_is_one_line(stub, tmp_path):
    stub.routes["/spot.js"] = (302, {"Location": "/elsewhere.js"}, b"")
    stub.routes["/elsewhere.js"] = (301, {"Location": "/spot.js"}, b"")
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    line = refused(r, "aws", "C026", f"{stub.origin}/spot.js")
    assert "redirects in a loop" in line


def test_an_endless_chain_of_redirects_stops(stub, tmp_path):
    stub.routes.update({f"/hop{i}": (307, {"Location": f"/hop{i + 1}"}, b"") for i in range(50)})
    stub.routes["/spot.js"] = (302, {"Location": "/hop0"}, b"")
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C026", f"{stub.origin}/spot.js", f"more than {refresh_http.MAX_REDIRECTS} times")
    assert sum(p.startswith("/hop") for p in stub.requests) == refresh_http.MAX_REDIRECTS


def test_only_https_is_requested_where_no_variable_names_an_http_address(monkeypatch):
    from compiler.diagnostics import CompileError

    def refused_url(client, url):
        with pytest.raises(CompileError) as err:
            client.check_url(url)
        return err.value.diagnostics[0].code

    for name in ("INFRA_COMPILE_PRICES_AWS_URL", "INFRA_COMPILE_PRICES_AWS_SPOT_URL"):
        monkeypatch.delenv(name, raising=False)
    client = refresh_http.PriceClient("aws")
    assert client.check_url("https://pricing.us-east-1.amazonaws.com/x") == "https://pricing.us-east-1.amazonaws.com/x"
    for url in ("http://pricing.us-east-1.amazonaws.com/x", "file:///etc/passwd", "ftp://a/b", "gopher://a/",
                "https:///no-host", "/relative"):
        assert refused_url(client, url) == "C026"
    # an http address a variable names allows http at that origin only, and for that provider only
    monkeypatch.setenv("INFRA_COMPILE_PRICES_AWS_URL", "http://mirror.internal:8080/aws")
    client = refresh_http.PriceClient("aws")
    assert client.check_url("http://MIRROR.internal:8080/offers/x")
    assert refused_url(client, "http://mirror.internal:8081/offers/x") == "C026"
    assert refused_url(refresh_http.PriceClient("azure"), "http://mirror.internal:8080/offers/x") == "C026"


# ---------------------------------------------------------------- pages, bytes, time

def test_an_azure_list_whose_next_link_changes_forever_stops_with_an_error(stub, tmp_path, monkeypatch):
    monkeypatch.setattr(refresh_http, "MAX_PAGES", 25)
    page = _json("azure/page2.json")

    def forever(q):
        n = int((q.get("$skip") or ["0"])[0])
        return dict(page, NextPageLink=f"{stub.origin}{AZURE}?$skip={n + 100}")

    stub.routes[AZURE] = forever
    start = time.monotonic()
    r = refresh_to(tmp_path, "azure")
    refused(r, "azure", "C027", f"{stub.origin}{AZURE}", "more than 25 pages")
    assert len(stub.requests) == 25 and time.monotonic() - start < 10


@pytest.mark.parametrize("provider, path", [("azure", AZURE), ("aws", "/spot.js"), ("aws", OFFER.format("us-east-1"))])
def test_a_document_over_its_byte_limit_stops_the_refresh(stub, tmp_path, monkeypatch, provider, path):
    monkeypatch.setattr(refresh_http, "MAX_DOCUMENT_BYTES", 4096)
    monkeypatch.setattr(refresh_http, "MAX_OFFER_BYTES", 4096)
    stub.routes[path] = b" " * 100_000 + b"{}"
    r = refresh_to(tmp_path, provider, *(["--regions", "us-east-1"] if provider == "aws" else []))
    refused(r, provider, "C027", stub.origin + path, "larger than 4096 bytes")


def test_a_server_that_drips_bytes_forever_meets_the_refresh_deadline(stub, tmp_path, monkeypatch):
    monkeypatch.setattr(refresh_http, "MAX_TOTAL_SECONDS", 1.0)
    stop = threading.Event()

    @raw
    def drip(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        for _ in range(200):        # 10 s at most: a refresh with no deadline fails, it does not hang
            if stop.wait(0.05):
                return
            handler.wfile.write(b" ")
            handler.wfile.flush()

    stub.routes["/spot.js"] = drip
    start = time.monotonic()
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    stop.set()
    refused(r, "aws", "C027", f"{stub.origin}/spot.js", "longer than its limit of 1 s")
    assert time.monotonic() - start < 5


# ---------------------------------------------------------------- secrets

def test_a_403_page_that_echoes_the_request_never_prints_the_api_key(stub, tmp_path):
    @raw
    def echo(handler):
        body = (f"<h1>403 Forbidden</h1>\nRequest: GET {handler.path}\nkey={KEY} "
                f"{urllib.parse.quote(KEY, safe='')} {urllib.parse.quote_plus(KEY)} "
                f'{{"error": {{"key": "{KEY}", "url": "http://user:pw@host/?api_key=abc123"}}}}').encode()
        _answer(handler, (403, {}, body))

    stub.routes[GCP] = echo
    r = refresh_to(tmp_path, "gcp")
    line = refused(r, "gcp", "C021", f"{stub.origin}{GCP}", "HTTP 403")
    secrets = {KEY, urllib.parse.quote(KEY, safe=""), urllib.parse.quote_plus(KEY), "abc123", "user:pw"}
    assert not [s for s in secrets if s in r.stderr + r.stdout]
    assert "<redacted>" in line
    assert "?" not in line.split(": ")[1]        # the endpoint is named without its query


def test_no_message_of_a_successful_gcp_refresh_holds_the_key(stub, tmp_path):
    r = refresh_to(tmp_path, "gcp")
    assert r.exit_code == 0, r.stderr
    assert all(KEY in urllib.parse.unquote(p) for p in stub.requests)      # it was sent...
    assert KEY not in r.stderr + r.stdout + (tmp_path / "overlay.yaml").read_text()   # ...never shown


# ---------------------------------------------------------------- numbers

def _gcp_units(page: dict, sku_id: str, units, nanos=0) -> dict:
    page = copy.deepcopy(page)
    sku = next(s for s in page["skus"] if s["skuId"] == sku_id)
    sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units=units, nanos=nanos)
    return page


@pytest.mark.parametrize("units, nanos", [("1e308", 0), ("99999999999999999999", 0), ("NaN", 0), ("-5", 0),
                                          ("0", 1e9), (True, 0), ({"units": 1}, 0)])
def test_a_gcp_price_that_is_no_price_is_refused(stub, tmp_path, units, nanos):
    page1 = _json("gcp/page1.json")
    stub.routes[GCP] = lambda q: _json("gcp/page2.json") if q.get("pageToken") else _gcp_units(
        page1, "A3C0-0000-0001", units, nanos)
    r = refresh_to(tmp_path, "gcp")
    refused(r, "gcp", "C021", f"{stub.origin}{GCP}", "SKU A3C0-0000-0001")


def test_a_gcp_price_the_catalog_would_refuse_names_the_endpoint_not_a_temporary_file(stub, tmp_path):
    # 9000 USD per GPU-hour is a price; eight of them are 72000 per node-hour, over the catalog's bound
    page1 = _json("gcp/page1.json")
    gpu = next(s for s in page1["skus"] if s["category"]["resourceGroup"] == "GPU"
               and s["category"]["usageType"] == "OnDemand" and "H100 80GB GPU" in s["description"])
    stub.routes[GCP] = lambda q: _json("gcp/page2.json") if q.get("pageToken") else _gcp_units(
        page1, gpu["skuId"], "9000")
    r = refresh_to(tmp_path, "gcp")
    line = refused(r, "gcp", "C021", f"{stub.origin}{GCP}", "a3-highgpu-8g", "outside 0 to 10000")
    assert "tmp" not in line and ".yaml" not in line


def test_a_refreshed_overlay_the_catalog_refuses_is_named_by_its_endpoint():
    # the last guard (an overlay that does not load) names the list, not the file it would become
    from compiler.catalog import refresh
    from compiler.catalog.refresh.rows import Refreshed
    from compiler.diagnostics import CompileError, render_all

    done = Refreshed("aws", "aws-price-list", {"url": "https://pricing.example/offers/index.json?key=x"})
    text = "instances: {p5.48xlarge: {prices: {us-east-1: {on_demand: 20000, source: aws-price-list}}}}\n"
    with pytest.raises(CompileError) as err:
        refresh._loads_as_overlay(text, done)
    shown = render_all(err.value.diagnostics, err.value.source)
    assert shown.startswith("catalog refresh aws: error[C021]: the prices read from https://pricing.example/offers/"
                            "index.json do not load as a catalog overlay at $.instances['p5.48xlarge']")
    assert "must be <= 10000" in shown and "key=x" not in shown and len(shown.splitlines()) == 2


@pytest.mark.parametrize("price", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b'"NaN"', b"1e308", b"-1"])
def test_an_azure_retail_price_that_is_no_price_is_refused(stub, tmp_path, price):
    page = _json("azure/page2.json")
    page["Items"] = [dict(_json("azure/page1.json")["Items"][0], retailPrice="PRICE")]
    stub.routes[AZURE] = json.dumps(page).replace('"PRICE"', price.decode()).encode()
    r = refresh_to(tmp_path, "azure")
    refused(r, "azure", "C021", f"{stub.origin}{AZURE}")


@pytest.mark.parametrize("price", ["NaN", "Infinity", "1e308", "-55.04", "55,04", "0x37"])
def test_an_aws_offer_price_that_is_no_price_is_refused(stub, tmp_path, price):
    path = OFFER.format("us-east-1")
    text = stub.routes[path].decode()
    assert '"55.0400000000"' in text       # p5.48xlarge's on-demand rate in the recorded file
    stub.routes[path] = text.replace('"55.0400000000"', json.dumps(price)).encode()
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C021", stub.origin + path, "pricePerUnit.USD")


def test_an_aws_spot_price_of_infinity_is_refused(stub, tmp_path):
    text = stub.routes["/spot.js"].decode()
    assert '"21.4560"' in text
    stub.routes["/spot.js"] = text.replace('"21.4560"', '"Infinity"').encode()
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C021", f"{stub.origin}/spot.js", "not a finite number")


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9, 0.999])
def test_a_truncated_aws_offer_file_is_a_clear_error(stub, tmp_path, keep):
    path = OFFER.format("us-east-1")
    whole = stub.routes[path]
    stub.routes[path] = whole[:int(len(whole) * keep)]
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C021", stub.origin + path, "truncated or not JSON")


def test_an_offer_file_cut_short_of_its_length_is_a_clear_error(stub, tmp_path):
    path = OFFER.format("us-east-1")
    whole = stub.routes[path]

    @raw
    def short(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(whole)))
        handler.end_headers()
        handler.wfile.write(whole[:len(whole) // 2])
        handler.close_connection = True

    stub.routes[path] = short
    r = refresh_to(tmp_path, "aws", "--regions", "us-east-1")
    refused(r, "aws", "C020", stub.origin + path, "before the end of the answer")


@pytest.mark.parametrize("region", ["../../etc", "US East", "a" * 80, "us-east-1\u001b[2J"])
def test_a_region_name_that_is_no_region_name_is_refused(stub, tmp_path, region):
    index = copy.deepcopy(stub.routes[INDEX])
    index["regions"][region] = index["regions"].pop("us-west-2")
    stub.routes[INDEX] = index
    r = refresh_to(tmp_path, "aws")
    line = refused(r, "aws", "C021", f"{stub.origin}{INDEX}", "is not a region name")
    assert "\x1b" not in line


# ---------------------------------------------------------------- the -o file

def test_an_existing_output_file_that_is_not_an_overlay_is_refused_before_any_download(stub, tmp_path):
    out = tmp_path / "overlay.yaml"
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    for text, code in [(laughs, "E005"), ("sources:\n  ours: {title: our quote, url: 'https://a.example', "
                                          "as_of: '2099-01-01'}\n", "C007")]:
        out.write_text(text)
        r = cli("catalog", "refresh", "aws", "-o", str(out))
        assert r.exit_code == 2 and f"error[{code}]" in r.stderr and r.stderr.startswith(f"{out}:"), r.stderr
        assert stub.requests == [] and out.read_text() == text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_an_output_path_that_is_a_pipe_is_refused(stub, tmp_path):
    fifo = tmp_path / "overlay.yaml"
    os.mkfifo(fifo)
    # a subprocess: a read that blocked on the pipe would hang this test, not fail it
    r = subprocess.run([sys.executable, "-m", "compiler.cli", "catalog", "refresh", "aws", "-o", str(fifo)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    r.exit_code = r.returncode
    refused(r, "aws", "C024", str(fifo), "not a regular file")
    assert stub.requests == []


# ---------------------------------------------------------------- overlays (--catalog)

def catalog_cli(overlay: Path):
    return cli("catalog", "--catalog", str(overlay), "--section", "sources")


def overlay_error(r, path: Path, code: str, json_path: str, message: str) -> str:
    """An overlay refusal in the project's format: `file:line:col: error[CODE] at $.path: message`,
    the line with a caret, and a hint."""
    assert r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    head = r.stderr.splitlines()[0]
    assert re.match(rf"^{re.escape(str(path))}:\d+:\d+: error\[{code}\] at {re.escape(json_path)}: ", head), head
    assert message in head, head
    assert "   hint: " in r.stderr
    return head


SOURCE = "sources:\n  ours: {{title: negotiated, url: 'https://acme.example/q', as_of: '{as_of}'}}\n"


def test_an_overlay_as_of_in_the_future_is_refused(tmp_path):
    # tests/conftest.py's SOURCE_DATE_EPOCH: today is 2026-11-28
    path = tmp_path / "ours.yaml"
    path.write_text(SOURCE.format(as_of="2099-01-01"))
    overlay_error(catalog_cli(path), path, "C007", "$.sources.ours.as_of", "as_of 2099-01-01 is in the future")
    path.write_text(SOURCE.format(as_of="2026-11-30"))
    overlay_error(catalog_cli(path), path, "C007", "$.sources.ours.as_of", "(today is 2026-11-28)")
    # a day ahead is a time zone ahead, not the future
    for as_of in ("2026-11-29", "2026-11-28", "2020-01-01"):
        path.write_text(SOURCE.format(as_of=as_of))
        r = catalog_cli(path)
        assert r.exit_code == 0 and as_of in r.stdout, r.stderr


def test_the_future_is_counted_to_source_date_epoch(tmp_path, monkeypatch):
    path = tmp_path / "ours.yaml"
    path.write_text(SOURCE.format(as_of="2030-06-01"))
    assert catalog_cli(path).exit_code == 2
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(1906848000))      # 2030-06-05
    assert catalog_cli(path).exit_code == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_an_overlay_path_that_is_a_pipe_or_a_device_is_refused_at_once(tmp_path):
    fifo = tmp_path / "ours.yaml"
    os.mkfifo(fifo)
    # a subprocess: a read that blocked on the pipe would hang this test, not fail it
    for path in (fifo, Path("/dev/zero")):
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "compiler.cli", "catalog", "--catalog", str(path)],
                           capture_output=True, text=True, timeout=60, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"{path}: error[E001]: is not a regular file (a pipe, socket or device)"), r.stderr
        assert "hint:" in r.stderr and time.monotonic() - start < 30


BAD_OVERLAYS = [
    # (text, code, JSON path, message)
    ("instances:\n  ../../etc/passwd: {provider: aws}\n", "C002", "$.instances['../../etc/passwd']", "bad name"),
    ("instances:\n  p5.48xlarge:\n    prices:\n      'us-east-1; rm -rf /': {on_demand: 1, source: aws-ec2-p-prices}\n",
     "C002", "$.instances['p5.48xlarge'].prices['us-east-1; rm -rf /']", "bad name"),
    ("sources:\n  Ours Q4: {title: our quote, url: 'https://a.example', as_of: '2026-01-01'}\n", "C002",
     "$.sources['Ours Q4']", "bad name"),
    ("instances:\n  p5.48xlarge:\n    prices:\n      us-east-1: {on_demand: .nan, source: aws-ec2-p-prices}\n",
     "E007", "$.instances['p5.48xlarge'].prices.us-east-1.on_demand", "must be finite"),
    ("instances:\n  p5.48xlarge:\n    prices:\n      us-east-1: {on_demand: 1e400, source: aws-ec2-p-prices}\n",
     "E007", "$.instances['p5.48xlarge'].prices.us-east-1.on_demand", "must be finite"),
    ("instances:\n  p5.48xlarge:\n    prices:\n      us-east-1: {on_demand: -.inf, source: aws-ec2-p-prices}\n",
     "E007", "$.instances['p5.48xlarge'].prices.us-east-1.on_demand", "must be finite"),
    ("instances:\n  p5.48xlarge:\n    prices:\n      us-east-1: {on_demand: 1.0e308, source: aws-ec2-p-prices}\n",
     "C002", "$.instances['p5.48xlarge'].prices.us-east-1.on_demand", "must be <= 10000"),
    ('sources:\n  ours: {title: "\\e[2Jgone", url: "https://a.example", as_of: "2026-01-01"}\n', "C002",
     "$.sources.ours.title", "control character"),
    # a right-to-left override makes a title read other than it is stored
    ('sources:\n  ours: {title: "quote \\u202efdp.exe", url: "https://a.example", as_of: "2026-01-01"}\n', "C002",
     "$.sources.ours.title", "control character"),
]


@pytest.mark.parametrize("text, code, json_path, message", BAD_OVERLAYS)
def test_a_bad_overlay_is_an_error_at_its_line_with_a_hint(tmp_path, text, code, json_path, message):
    path = tmp_path / "ours.yaml"
    path.write_text(text)
    overlay_error(catalog_cli(path), path, code, json_path, message)


def test_an_overlay_over_the_size_limit_deeply_nested_or_expanding_is_refused(tmp_path):
    from compiler.source import MAX_BYTES

    path = tmp_path / "ours.yaml"
    cases = [("# " + "x" * MAX_BYTES + "\n", "E002"), ("a: " + "[" * 5000 + "]" * 5000 + "\n", "E004"),
             ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
                 f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                 for p, c in zip("abcdefgh", "bcdefghi")), "E005")]
    for text, code in cases:
        path.write_text(text)
        start = time.monotonic()
        r = catalog_cli(path)
        assert r.exit_code == 2 and f"error[{code}]" in r.stderr and r.stderr.startswith(f"{path}:"), r.stderr
        assert "Traceback" not in r.stderr and time.monotonic() - start < 5


def test_the_limits_docs_catalog_md_states_are_the_code_s():
    doc = (ROOT / "docs" / "catalog.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| C027 |"))
    assert f"more than {refresh_http.MAX_PAGES:,} pages" in row
    assert f"a page over {refresh_http.MAX_DOCUMENT_BYTES // 2**20} MiB" in row
    assert f"an offer file over {refresh_http.MAX_OFFER_BYTES // 2**30} GiB" in row
    assert f"over {refresh_http.MAX_TOTAL_SECONDS / 3600:g} hours" in row
    assert f"more than {refresh_http.MAX_REDIRECTS} redirects" in next(
        line for line in doc.splitlines() if line.startswith("| C026 |"))


# ---------------------------------------------------------------- any shape where a list expects another

ODD = [None, "", "NaN", -1, 1e308, [], {}, "x" * 300, True, 0, "\x1b[2J", "1e308", ["us-east-1"],
       {"a": [1]}, 12345678901234567890, "N/A*", "../../x"]


def _mutated(doc, rng: "random.Random", times: int = 3):
    """`doc` with up to `times` values, anywhere in it, replaced by one of ODD."""
    doc = copy.deepcopy(doc)

    def places(node, at=()):
        if at:
            yield at
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            yield from places(v, at + (k,))

    every = list(places(doc))
    for at in rng.sample(every, min(times, len(every))):
        node = doc
        try:
            for k in at[:-1]:
                node = node[k]
            node[at[-1]] = rng.choice(ODD)
        except (KeyError, IndexError, TypeError):
            pass        # an earlier change replaced this place's parent
    return doc


@pytest.mark.parametrize("seed", range(45))
def test_a_list_of_any_odd_shape_is_read_or_refused_never_an_internal_error(stub, tmp_path, seed):
    import random

    rng = random.Random(seed)
    provider = ("aws", "azure", "gcp")[seed % 3]
    if provider == "aws":
        which = (INDEX, OFFER.format("us-east-1"), "/spot.js")[seed // 3 % 3]
        if which == "/spot.js":
            text = stub.routes[which].decode()
            feed = json.loads(text[text.index("(") + 1:text.rindex(")")])
            stub.routes[which] = f"callback({json.dumps(_mutated(feed, rng))});".encode()
        elif which == INDEX:
            stub.routes[which] = _mutated(stub.routes[which], rng)
        else:
            stub.routes[which] = _mutated(json.loads(stub.routes[which]), rng)
    elif provider == "azure":
        page1 = _mutated(stub.routes[AZURE]({}), rng)
        stub.routes[AZURE] = lambda q: page1 if q.get("$skip") != ["100"] else _json("azure/page2.json")
    else:
        page1 = _mutated(_json("gcp/page1.json"), rng)
        stub.routes[GCP] = lambda q: _json("gcp/page2.json") if q.get("pageToken") else page1
    r = refresh_to(tmp_path, provider, *(["--regions", "us-east-1"] if provider == "aws" else []))
    if r.exit_code != 0:
        refused(r, provider, r.stderr[r.stderr.index("[") + 1:r.stderr.index("]")])


def _gcp_group_a_list(stub: Stub) -> None:
    page1 = _json("gcp/page1.json")
    for sku in page1["skus"]:
        sku["category"]["resourceGroup"] = [sku["category"]["resourceGroup"]]
    stub.routes[GCP] = lambda q: _json("gcp/page2.json") if q.get("pageToken") else page1


def _azure_term_a_list(stub: Stub) -> None:
    page = _json("azure/page2.json")
    items = _json("azure/page1.json")["Items"]
    page["Items"] = [dict(item, reservationTerm=[item.get("reservationTerm")]) for item in items]
    stub.routes[AZURE] = page


def _spot_region_a_list(stub: Stub) -> None:
    text = stub.routes["/spot.js"].decode()
    feed = json.loads(text[text.index("(") + 1:text.rindex(")")])
    for region in feed["config"]["regions"]:
        region["region"] = [region["region"]]
    stub.routes["/spot.js"] = f"callback({json.dumps(feed)});".encode()


def _lease_a_list(stub: Stub) -> None:
    offer = json.loads(stub.routes[OFFER.format("us-east-1")])
    for terms in offer["terms"]["Reserved"].values():
        for term in terms.values():
            term["termAttributes"]["LeaseContractLength"] = [term["termAttributes"]["LeaseContractLength"]]
    stub.routes[OFFER.format("us-east-1")] = offer


@pytest.mark.parametrize("provider, change", [("gcp", _gcp_group_a_list), ("azure", _azure_term_a_list),
                                              ("aws", _spot_region_a_list), ("aws", _lease_a_list)])
def test_a_list_where_a_name_is_expected_is_no_internal_error(stub, tmp_path, provider, change):
    # a list where a name is looked up in a table: unhashable, an internal error before
    change(stub)
    r = refresh_to(tmp_path, provider, *(["--regions", "us-east-1"] if provider == "aws" else []))
    assert "internal error" not in r.stderr
    if r.exit_code != 0:
        refused(r, provider, r.stderr[r.stderr.index("[") + 1:r.stderr.index("]")])
