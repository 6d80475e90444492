"""One small HTTP client for the providers' public price lists.

The price lists are large, public and sometimes slow: a request gets a timeout, a throttled (429)
or failing (5xx) answer is tried again after an exponential backoff (or the server's Retry-After),
up to a fixed number of tries, and then the whole refresh stops with an error for people. A host
that cannot be reached at all (refused, no DNS, no route) is not tried again: waiting does not
make a missing proxy setting appear.

Everything a list answers is treated as hostile:
- only https is requested (http only at an origin the user set in an INFRA_COMPILE_PRICES_*
  variable); no file:, ftp: or data: handler is installed at all, a link found in a page must stay
  on the origin of the page it was found in, a redirect must keep to the same rules, and at most
  MAX_REDIRECTS of them, never in a loop;
- a paged list stops after MAX_PAGES pages, a document after its byte limit, the whole refresh
  after MAX_TOTAL_SECONDS (a server that drips bytes forever is stopped too);
- JSON's NaN and Infinity, and numbers that overflow a float, are refused;
- every message is one line, names the endpoint (scheme, host and path: no query, no user
  information), and has the API key and any `key=`-like query value redacted, so a 403 page that
  echoes the request cannot print the key.

urllib is enough here and honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY by itself.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import re
import socket
import string
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from compiler.catalog.refresh import endpoints
from compiler.diagnostics import CompileError, Diagnostic, Source, printable

TIMEOUT_SECONDS = 60.0       # per connect or read; an offer file streams for minutes, each read is short
TRIES = 5                    # 1 try and 4 retries on 429 / 5xx / timeouts
BACKOFF_SECONDS = 2.0        # the first wait; doubled after each retry
MAX_WAIT_SECONDS = 120.0     # no Retry-After is obeyed beyond this
MAX_REDIRECTS = 5
MAX_PAGES = 1000             # a paged list; the catalog's instances fill a few dozen
MAX_DOCUMENT_BYTES = 64 * 2**20      # a page, an index or the spot feed (GCP's 5000-SKU pages are a few MB)
MAX_OFFER_BYTES = 32 * 2**30         # one AWS regional offer file, streamed (us-east-1's is several GB)
MAX_TOTAL_SECONDS = 4 * 3600.0       # the whole refresh: every AWS region's offer file on a slow line
CHUNK_BYTES = 1 << 16
USER_AGENT = "infra-compile-catalog-refresh"
PROXY_HINT = ("check the network; behind a proxy set HTTPS_PROXY (and HTTP_PROXY), "
              "or point the provider's INFRA_COMPILE_PRICES_* variable at a mirror")
LINK_HINT = ("a price list is read over https and its links must stay on its own host (plain http only at an "
             "address set in an INFRA_COMPILE_PRICES_* variable); nothing was written")
LIMIT_HINT = "the list may be misbehaving; nothing was written; try again later, or fewer --regions"
REDACTED = "<redacted>"
MAX_SHOWN = 200              # characters of a URL or a detail shown in a message

# Query parameters that carry credentials in common APIs (Google's `key`, signed URLs' signatures).
_SECRET_QUERY = re.compile(r"(?i)((?:^|[?&;\s\"'])(?:key|api_?key|access_?token|token|sig|signature|"
                           r"x-amz-signature|x-amz-credential|x-amz-security-token|password)=)[^&#\s\"'<>]*")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@")


def redact(text: str) -> str:
    """`text` with the API key (as given, and URL-quoted), `key=`-like query values and user
    information in URLs replaced by <redacted>."""
    text = _SECRET_QUERY.sub(lambda m: m.group(1) + REDACTED, text)
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    for secret in endpoints.secrets():
        if len(secret) >= 4:     # a shorter "key" would redact ordinary words; the pattern still applies
            for form in sorted({secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)},
                               key=len, reverse=True):
                text = text.replace(form, REDACTED)
    return re.sub(f"(?:{re.escape(REDACTED)})+", REDACTED, text)


def one_line(text: str) -> str:
    """Control characters (newlines, terminal escapes) shown as escapes: a message stays one line."""
    return printable(text)


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    text = one_line(redact(str(text)))
    return text if len(text) <= limit else text[:limit] + "..."


def where(url: str) -> str:
    """An endpoint as messages name it: scheme, host and path, never the query or user information."""
    parts = urllib.parse.urlsplit(str(url))
    host = parts.netloc.rpartition("@")[2]
    return shown(urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")))


def refresh_error(provider: str, code: str, message: str, hint: str | None = None) -> CompileError:
    """A refresh failure rendered like every other diagnostic: `catalog refresh aws: error[C021]: ...`,
    on one line, with secrets redacted."""
    hint = one_line(redact(hint)) if hint else None
    return CompileError([Diagnostic(code, one_line(redact(message)), hint=hint)], 2,
                        Source.of(f"catalog refresh {provider}", ""))


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is not None:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, ValueError, OSError):
        return None


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, socket.gaierror):
        return f"name resolution failed ({reason.strerror or reason})"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    if isinstance(exc, http.client.IncompleteRead):
        return f"the connection closed {exc.expected or 'some'} bytes before the end of the answer"
    return shown(str(reason) or type(reason).__name__)


def pause(seconds: float) -> None:
    """The wait between tries (a module function, so a test can replace it)."""
    time.sleep(seconds)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} overflows a number")
    return value


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects under the client's rules: the same schemes as any request, at most MAX_REDIRECTS,
    never back to an address already visited."""

    def __init__(self, client: "PriceClient"):
        self.client = client

    def http_error_302(self, req, fp, code, msg, headers):
        location = headers.get("Location") or headers.get("URI")
        if not location:
            return None          # a 3xx without a target: an HTTP error like any other
        quoted = urllib.parse.quote(location, encoding="iso-8859-1", safe=string.punctuation)
        target = urllib.parse.urljoin(req.full_url, quoted)
        hops = getattr(req, "hops", (req.full_url,))
        first = hops[0]
        try:
            if target in hops:
                raise self.client.refused(first, f"redirects in a loop (HTTP {code} back to {where(target)})")
            if len(hops) > MAX_REDIRECTS:
                raise self.client.refused(first, f"redirects more than {MAX_REDIRECTS} times "
                                                 f"(the last to {where(target)})")
            self.client.check_url(target, f"redirect of {where(first)} (HTTP {code})")
            new = self.redirect_request(req, fp, code, msg, headers, target)
        finally:
            fp.close()
        if new is None:
            return None
        new.hops = hops + (target,)
        return self.parent.open(new, timeout=req.timeout)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


class Body:
    """A response read within limits: at most `limit` bytes, nothing after the refresh's deadline.
    Network failures while reading become the refresh's errors, naming the endpoint."""

    def __init__(self, client: "PriceClient", url: str, response, limit: int):
        self.client, self.url, self.response, self.limit, self.done = client, url, response, limit, 0
        length = getattr(response, "length", None)
        self.total: int | None = length if isinstance(length, int) and length > 0 else None   # Content-Length

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            return b"".join(iter(lambda: self.read(CHUNK_BYTES), b""))
        if n == 0:
            return b""          # ijson asks for nothing first, to learn the stream gives bytes
        self.client.check_time(self.url)
        try:
            # read1: one receive at most, so a server that drips bytes meets the deadline check
            data = self.response.read1(min(n, CHUNK_BYTES))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise self.client.unreachable(self.url, exc) from None
        if not data and getattr(self.response, "length", None):
            # http.client reads a body cut short of its Content-Length as a quiet end
            raise self.client.unreachable(self.url, ConnectionError(
                f"the connection closed after {self.done} bytes, {self.response.length} before the end of the answer"))
        self.done += len(data)
        if self.done > self.limit:
            raise self.client.over_limit(self.url, f"the answer is larger than {_size(self.limit)}")
        return data

    def close(self) -> None:
        self.response.close()

    def __enter__(self) -> "Body":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _size(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"


@dataclass
class PriceClient:
    """GETs with timeouts and bounded retries. `sleep` (default: `pause`) is injectable so tests
    do not wait; `on_request` hears of each request that succeeded (for progress)."""

    provider: str
    timeout: float = TIMEOUT_SECONDS
    tries: int = TRIES
    backoff: float = BACKOFF_SECONDS
    sleep: Callable[[float], None] | None = None
    on_request: Callable[[str], None] = lambda url: None
    waits: list[float] = field(default_factory=list)    # what was slept, in order (tests read it)

    def __post_init__(self) -> None:
        self.http_origins = endpoints.http_origins(self.provider)
        self.time_limit = MAX_TOTAL_SECONDS
        self.deadline = time.monotonic() + self.time_limit      # the whole refresh, from here
        opener = urllib.request.OpenerDirector()
        # No FileHandler, FTPHandler or DataHandler: any other scheme is an unknown url type.
        for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                        urllib.request.HTTPHandler(), urllib.request.HTTPSHandler(),
                        urllib.request.HTTPDefaultErrorHandler(), _Redirects(self),
                        urllib.request.HTTPErrorProcessor()):
            opener.add_handler(handler)
        self.opener = opener

    # ------------------------------------------------------------ what may be requested

    def check_url(self, url: str, what: str = "address") -> str:
        """`url` if it may be requested: https, or http at an origin the user set explicitly."""
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        if scheme == "https" and urllib.parse.urlsplit(url).hostname:
            return url
        if scheme == "http" and endpoints.origin(url) in self.http_origins:
            return url
        why = "an http address the INFRA_COMPILE_PRICES_* variables do not name" if scheme == "http" \
            else "not an https address" if scheme else "not an absolute https address"
        raise refresh_error(self.provider, "C026", f"refused the {what} {shown(url)}: {why}", LINK_HINT)

    def link(self, page_url: str, link: Any, what: str) -> str:
        """A link found in the document at `page_url` (a next page, an offer file), made absolute:
        it must be a string on the same origin as that document."""
        if not isinstance(link, str) or not link.strip():
            raise self.bad_answer(page_url, f"the {what} is not a URL ({shown(repr(link), 80)})")
        target = urllib.parse.urljoin(page_url, link.strip())
        if endpoints.origin(target) != endpoints.origin(page_url):
            raise refresh_error(self.provider, "C026", f"refused the {what} of {where(page_url)}: "
                                f"{shown(target)} is not on {endpoints.origin(page_url)}", LINK_HINT)
        return self.check_url(target, f"{what} of {where(page_url)}")

    def check_time(self, url: str) -> None:
        if time.monotonic() > self.deadline:
            limit = self.time_limit
            raise self.over_limit(url, "the refresh has run longer than its limit of "
                                       + (f"{limit / 3600:g} h" if limit >= 3600 else f"{limit:g} s"))

    # ------------------------------------------------------------ requests

    def open(self, url: str):
        """The response of a successful GET, to be read (and closed) by the caller."""
        self.check_url(url)
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
        for attempt in range(1, self.tries + 1):
            self.check_time(url)
            wait: float | None = None
            timeout = max(1.0, min(self.timeout, self.deadline - time.monotonic()))
            try:
                response = self.opener.open(request, timeout=timeout)
                self.on_request(url)
                return response
            except urllib.error.HTTPError as exc:
                if exc.code != 429 and exc.code < 500:
                    raise self._http_error(url, exc) from None
                if attempt == self.tries:
                    raise self._http_error(url, exc, tried=True) from None
                wait = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                exc.close()
            except (TimeoutError, socket.timeout) as exc:
                if attempt == self.tries:
                    raise self.unreachable(url, exc) from None
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)) and attempt < self.tries:
                    pass
                else:
                    raise self.unreachable(url, exc) from None
            except (ConnectionError, OSError, http.client.HTTPException, ValueError) as exc:
                raise self.unreachable(url, exc) from None
            delay = min(MAX_WAIT_SECONDS, wait if wait is not None else self.backoff * 2 ** (attempt - 1))
            self.waits.append(delay)
            (self.sleep or pause)(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def stream(self, url: str) -> Body:
        """A large file to read as it arrives (an AWS offer file), within MAX_OFFER_BYTES."""
        return Body(self, url, self.open(url), MAX_OFFER_BYTES)

    def get_bytes(self, url: str) -> bytes:
        """A whole document (a page, an index, the spot feed), within MAX_DOCUMENT_BYTES."""
        with Body(self, url, self.open(url), MAX_DOCUMENT_BYTES) as body:
            return body.read()

    def get_json(self, url: str) -> Any:
        """A whole JSON document (a page of an API, an index, a feed)."""
        return self.parse_json(url, self.get_bytes(url))

    def get_text(self, url: str) -> str:
        try:
            return self.get_bytes(url).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.bad_answer(url, f"not UTF-8 text (byte {exc.start})") from None

    def parse_json(self, url: str, body: bytes | str) -> Any:
        try:
            return json.loads(body, parse_constant=_no_constant, parse_float=_finite)
        except RecursionError:
            raise self.bad_answer(url, "not JSON (nested too deeply)") from None
        except ValueError as exc:
            raise self.bad_answer(url, f"not JSON ({shown(exc, 120)})") from None

    # ------------------------------------------------------------ errors for people

    def unreachable(self, url: str, exc: BaseException) -> CompileError:
        return refresh_error(self.provider, "C020", f"cannot reach {where(url)}: {_reason(exc)}", PROXY_HINT)

    def bad_answer(self, url: str, what: str) -> CompileError:
        return refresh_error(self.provider, "C021", f"unexpected answer from {where(url)}: {what}",
                             "the price list's format may have changed; nothing was written")

    def refused(self, url: str, what: str) -> CompileError:
        return refresh_error(self.provider, "C026", f"refused {where(url)}: {what}", LINK_HINT)

    def over_limit(self, url: str, what: str) -> CompileError:
        return refresh_error(self.provider, "C027", f"stopped reading {where(url)}: {what}", LIMIT_HINT)

    def _http_error(self, url: str, exc: urllib.error.HTTPError, tried: bool = False) -> CompileError:
        try:
            detail = exc.read(400).decode("utf-8", "replace").strip()
        except Exception:  # the body is a courtesy; the status says enough
            detail = ""
        finally:
            exc.close()
        times = f" after {self.tries} tries" if tried else ""
        detail = shown(" ".join(detail.split()), 300)
        text = f"{where(url)} answered HTTP {exc.code} {shown(exc.reason, 80)}{times}"
        text += f": {detail}" if detail else ""
        if exc.code in (401, 403) and self.provider == "gcp":
            hint = ("check the API key (" + " or ".join(endpoints.GCP_KEY_VARIABLES) + ") and that the Cloud Billing "
                    "API is enabled for its project; nothing was written")
        elif exc.code == 429 or exc.code >= 500:
            hint = "the list is throttled or failing; try again later; nothing was written"
        else:
            hint = "check the provider's INFRA_COMPILE_PRICES_* variable, if one is set; nothing was written"
        return refresh_error(self.provider, "C021", text, hint)


def pages(client: PriceClient, first: str, next_link: Callable[[Any, str], str | None]) -> Iterator[tuple[str, Any]]:
    """(url, page) for every page of a paged API, from `first` on; `next_link(page, url)` gives the
    next URL or None. A link back to a page read, or more than MAX_PAGES pages, stops the refresh."""
    url: str | None = first
    seen: set[str] = set()
    while url:
        if url in seen:
            raise client.bad_answer(url, "the next page link points back to a page already read")
        if len(seen) >= MAX_PAGES:
            raise client.over_limit(first, f"more than {MAX_PAGES} pages (the next page link never ends)")
        seen.add(url)
        page = client.get_json(url)
        yield url, page
        url = next_link(page, url)
