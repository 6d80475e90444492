"""One small HTTP client for the providers' public price lists.

The price lists are large, public and sometimes slow: a request gets a timeout, a throttled (429)
or failing (5xx) answer is tried again after an exponential backoff (or the server's Retry-After),
up to a fixed number of tries, and then the whole refresh stops with an error for people. A host
that cannot be reached at all (refused, no DNS, no route) is not tried again: waiting does not
make a missing proxy setting appear.

urllib is enough here and honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY by itself. Error messages
name an endpoint without its query string, so an API key passed as `key=` never reaches a log.
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from compiler.diagnostics import CompileError, Diagnostic, Source

TIMEOUT_SECONDS = 60.0       # per connect or read; an offer file streams for minutes, each read is short
TRIES = 5                    # 1 try and 4 retries on 429 / 5xx / timeouts
BACKOFF_SECONDS = 2.0        # the first wait; doubled after each retry
MAX_WAIT_SECONDS = 120.0     # no Retry-After is obeyed beyond this
USER_AGENT = "infra-compile-catalog-refresh"
PROXY_HINT = ("check the network; behind a proxy set HTTPS_PROXY (and HTTP_PROXY), "
              "or point the provider's INFRA_COMPILE_PRICES_* variable at a mirror")


def where(url: str) -> str:
    """An endpoint as messages name it: scheme, host and path, never the query (it may hold a key)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def refresh_error(provider: str, code: str, message: str, hint: str | None = None) -> CompileError:
    """A refresh failure rendered like every other diagnostic: `catalog refresh aws: error[C010]: ...`."""
    return CompileError([Diagnostic(code, message, hint=hint)], 2, Source.of(f"catalog refresh {provider}", ""))


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, socket.gaierror):
        return f"name resolution failed ({reason.strerror or reason})"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def pause(seconds: float) -> None:
    """The wait between tries (a module function, so a test can replace it)."""
    time.sleep(seconds)


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

    def open(self, url: str):
        """The response of a successful GET, to be read (and closed) by the caller."""
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
        for attempt in range(1, self.tries + 1):
            wait: float | None = None
            try:
                response = urllib.request.urlopen(request, timeout=self.timeout)
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
            except (ConnectionError, OSError) as exc:
                raise self.unreachable(url, exc) from None
            delay = min(MAX_WAIT_SECONDS, wait if wait is not None else self.backoff * 2 ** (attempt - 1))
            self.waits.append(delay)
            (self.sleep or pause)(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def get_json(self, url: str) -> Any:
        """A whole JSON document (a page of an API, an index, a feed)."""
        response = self.open(url)
        try:
            with response:
                body = response.read()
        except (OSError, ValueError) as exc:
            raise self.unreachable(url, exc) from None
        return self.parse_json(url, body)

    def get_text(self, url: str) -> str:
        response = self.open(url)
        try:
            with response:
                return response.read().decode("utf-8")
        except (OSError, ValueError) as exc:
            raise self.unreachable(url, exc) from None

    def parse_json(self, url: str, body: bytes | str) -> Any:
        try:
            return json.loads(body)
        except ValueError as exc:
            raise self.bad_answer(url, f"not JSON ({exc})") from None

    def unreachable(self, url: str, exc: BaseException) -> CompileError:
        return refresh_error(self.provider, "C020", f"cannot reach {where(url)}: {_reason(exc)}", PROXY_HINT)

    def bad_answer(self, url: str, what: str) -> CompileError:
        return refresh_error(self.provider, "C021", f"unexpected answer from {where(url)}: {what}",
                             "the price list's format may have changed; nothing was written")

    def _http_error(self, url: str, exc: urllib.error.HTTPError, tried: bool = False) -> CompileError:
        try:
            detail = exc.read(400).decode("utf-8", "replace").strip().replace("\n", " ")
        except Exception:  # the body is a courtesy; the status says enough
            detail = ""
        finally:
            exc.close()
        times = f" after {self.tries} tries" if tried else ""
        text = f"{where(url)} answered HTTP {exc.code} {exc.reason}{times}" + (f": {detail[:300]}" if detail else "")
        return refresh_error(self.provider, "C021", text)


def pages(client: PriceClient, first: str, next_link: Callable[[Any, str], str | None]) -> Iterator[Any]:
    """Every page of a paged API, from `first` on; `next_link(page, url)` gives the next URL or None."""
    url: str | None = first
    seen: set[str] = set()
    while url:
        if url in seen:
            raise client.bad_answer(url, "the next page link points back to a page already read")
        seen.add(url)
        page = client.get_json(url)
        yield page
        url = next_link(page, url)
