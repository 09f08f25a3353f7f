"""Fitting compiled filters into the service's request limits.

A request carries at most 100 query strings of at most 4096 characters each, and the service
ANDs them. A filter is a list of top-level conjuncts (`Part`s); to fit:

1. a part that is too long and is a disjunction (an `or`, or an `equal` with many values) is
   split across requests, each taking a share of the disjuncts (the caller merges the rows
   of all requests by `$id`): `a & (b | c)` is `(a & b) | (a & c)`;
2. a part still too long is relaxed: an `and` keeps the conjuncts that fit, anything else
   is dropped; the conjunct is then checked by the client (its index lands in `relaxed`);
3. too many parts are packed into `and` queries, and what still does not fit (more than
   `max_queries` strings, or more than `MAX_FILTER_URL_LENGTH` characters in the URL) is
   dropped and left to the client as well.

Fulltext `search` queries cannot be checked by the client, so they are never dropped; a filter
whose search parts alone do not fit raises `FilterError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from frameport._core._queries import (
    MAX_QUERIES_PER_REQUEST,
    MAX_QUERY_LENGTH,
    MAX_VALUES_PER_QUERY,
    Member,
    ServiceQuery,
    and_query,
    json_text,
    or_query,
    render_query,
)
from frameport._exceptions import FilterError

#: Filter query strings per request by default, leaving room for select/order/limit/cursor.
MAX_FILTER_QUERIES = MAX_QUERIES_PER_REQUEST - 10
#: A filter is split into at most this many requests; beyond, parts are left to the client.
MAX_REQUESTS = 1000
#: Characters the filter's query strings may take in one request URL, percent-encoded: httpx
#: refuses a URL longer than 65,536 characters, and the page's own queries need room too.
MAX_FILTER_URL_LENGTH = 32_768
_PARAMETER = "queries%5B%5D=&"


@dataclass(frozen=True)
class Part:
    """A query string's content and the top-level conjuncts (indexes) it expresses."""

    conjuncts: frozenset[int]
    query: ServiceQuery


@dataclass(frozen=True)
class FittedRequests:
    """The query strings of each request, and the conjuncts sent only in part (or not)."""

    requests: tuple[tuple[str, ...], ...]
    relaxed: frozenset[int]


def fit_requests(
    parts: Sequence[Part],
    *,
    member: Member,
    max_queries: int = MAX_FILTER_QUERIES,
    max_length: int = MAX_QUERY_LENGTH,
    max_requests: int = MAX_REQUESTS,
    max_url_length: int = MAX_FILTER_URL_LENGTH,
) -> FittedRequests:
    """Distribute `parts` over requests that respect the limits; see the module docstring."""
    if min(max_queries, max_length, max_requests, max_url_length) < 1:
        raise ValueError("the limits must be positive")
    fitter = _Fitter(member, max_queries, max_length, max_requests, max_url_length)
    requests = fitter.fit(list(parts))
    unique = tuple(dict.fromkeys(requests))
    return FittedRequests(unique or ((),), frozenset(fitter.relaxed))


@dataclass
class _Fitter:
    member: Member
    max_queries: int
    max_length: int
    max_requests: int
    max_url_length: int
    relaxed: set[int] = field(default_factory=set)

    def fit(self, parts: list[Part]) -> list[tuple[str, ...]]:
        pending = [_flatten(parts)]
        done: list[tuple[str, ...]] = []
        while pending:
            request = pending.pop(0)
            room = self.max_requests - len(done) - len(pending)
            split = self._split(request, room)
            if split is None:
                done.append(self._within_limits(request))
            else:
                pending[0:0] = [_flatten(shares) for shares in split]
        return done

    def length(self, query: ServiceQuery) -> int:
        return len(render_query(query, self.member))

    def url_length(self, parts: Sequence[Part]) -> int:
        """An upper bound of what `parts` add to the URL (httpx encodes a space as `+`)."""
        texts = (render_query(part.query, self.member) for part in parts)
        return sum(len(quote(text, safe="")) + len(_PARAMETER) for text in texts)

    def _split(self, request: list[Part], room: int) -> list[list[Part]] | None:
        """Split the request on its first too-long disjunction, if that fits in `room`."""
        for position, part in enumerate(request):
            if self.length(part.query) <= self.max_length or not _is_disjunction(part.query):
                continue
            groups = self._pack_disjuncts(part.query)
            if 1 < len(groups) <= room:
                before, after = request[:position], request[position + 1 :]
                return [[*before, Part(part.conjuncts, group), *after] for group in groups]
        return None

    def _pack_disjuncts(self, query: ServiceQuery) -> list[ServiceQuery]:
        """The disjuncts of `query`, packed into as few queries of allowed length as fit."""
        groups: list[ServiceQuery] = []
        group = _DisjunctGroup(self)
        for item in _disjuncts(query):
            if not group.add(item):
                groups.append(group.query())
                group = _DisjunctGroup(self)
                group.add(item)
        groups.append(group.query())
        return groups

    def _within_limits(self, request: list[Part]) -> tuple[str, ...]:
        parts: list[Part] = []
        for part in request:
            relaxed = self._relax(part.query)
            if relaxed is not part.query:
                self.relaxed.update(part.conjuncts)
            if relaxed is not None:
                parts.append(Part(part.conjuncts, relaxed))
        if len(parts) > self.max_queries:
            parts = self._pack_conjuncts(parts)
        if len(parts) > self.max_queries or self.url_length(parts) > self.max_url_length:
            parts = self._drop_excess(parts)
        return tuple(render_query(part.query, self.member) for part in parts)

    def _relax(self, query: ServiceQuery) -> ServiceQuery | None:
        """`query` if it fits, else a looser query that does (None: no condition at all)."""
        if self.length(query) <= self.max_length:
            return query
        if query.method == "and":
            kept = self._fitting_conjuncts([_child(value) for value in query.values])
            if kept:
                return and_query(kept)
        if query.contains_search():
            raise FilterError(
                "A condition with .search() is too long for one query string of the service "
                f"({self.max_length} characters); shorten the search text or the conditions "
                "combined with it by |."
            )
        return None

    def _fitting_conjuncts(self, children: list[ServiceQuery]) -> list[ServiceQuery]:
        """The children to keep in an `and` that must fit: searches first, then the shortest."""
        lengths = {id(child): self.length(child) for child in children}
        ranked = sorted(
            children, key=lambda child: (not child.contains_search(), lengths[id(child)])
        )
        kept: list[ServiceQuery] = []
        total = len(json_text({"method": "and", "values": []})) - 1
        for child in ranked:
            if total + lengths[id(child)] + 1 <= self.max_length:
                kept.append(child)
                total += lengths[id(child)] + 1
            elif child.contains_search():
                relaxed = self._relax(child)
                if relaxed is None or total + self.length(relaxed) + 1 > self.max_length:
                    raise FilterError(
                        "The .search() conditions of this filter do not fit in one query "
                        f"string of the service ({self.max_length} characters)."
                    )
                kept.append(relaxed)
                total += self.length(relaxed) + 1
        kept.sort(key=children.index)
        return kept

    def _pack_conjuncts(self, parts: list[Part]) -> list[Part]:
        """Join consecutive parts into `and` queries while they fit in one string."""
        packed: list[Part] = []
        members: list[Part] = []
        for part in [*parts, None]:
            candidate = [*members, part] if part is not None else members
            joined = and_query([member.query for member in candidate]) if candidate else None
            if part is not None and joined is not None and self.length(joined) <= self.max_length:
                members = candidate
                continue
            if members:
                conjuncts = frozenset().union(*(member.conjuncts for member in members))
                packed.append(Part(conjuncts, and_query([member.query for member in members])))
            members = [part] if part is not None else []
        return packed

    def _drop_excess(self, parts: list[Part]) -> list[Part]:
        """The parts that fit in one request's count and URL length, searches first."""
        searches = [part for part in parts if part.query.contains_search()]
        used = self.url_length(searches)
        if len(searches) > self.max_queries or used > self.max_url_length:
            raise FilterError(
                f"The filter has more .search() conditions than one request can carry "
                f"({self.max_queries} query strings, {self.max_url_length} characters in "
                "the URL)."
            )
        kept = [*searches]
        for part in parts:
            if part.query.contains_search():
                continue
            size = self.url_length([part])
            if len(kept) < self.max_queries and used + size <= self.max_url_length:
                kept.append(part)
                used += size
            else:
                self.relaxed.update(part.conjuncts)
        kept_ids = {id(part) for part in kept}
        return [part for part in parts if id(part) in kept_ids]


@dataclass
class _DisjunctGroup:
    """Disjuncts packed into one query: single-value `equal`s on one column merge."""

    fitter: _Fitter
    segments: list[ServiceQuery] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)

    def add(self, item: ServiceQuery) -> bool:
        """Add `item` if the group still fits (the first item is always taken)."""
        last = self.segments[-1] if self.segments else None
        mergeable = (
            last is not None
            and item.method == "equal"
            and last.method == "equal"
            and last.column == item.column
            and len(last.values) + len(item.values) <= MAX_VALUES_PER_QUERY
        )
        if mergeable and last is not None:
            extra = sum(len(json_text(value)) + 1 for value in item.values)
            merged = ServiceQuery("equal", last.column, last.values + item.values)
            candidate_lengths = [*self.lengths[:-1], self.lengths[-1] + extra]
            candidate_segments = [*self.segments[:-1], merged]
        else:
            candidate_lengths = [*self.lengths, self.fitter.length(item)]
            candidate_segments = [*self.segments, item]
        if self.segments and _or_length(candidate_lengths) > self.fitter.max_length:
            return False
        self.segments, self.lengths = candidate_segments, candidate_lengths
        return True

    def query(self) -> ServiceQuery:
        return or_query(self.segments)


def _or_length(lengths: list[int]) -> int:
    if len(lengths) == 1:
        return lengths[0]
    return len(json_text({"method": "or", "values": []})) + sum(lengths) + len(lengths) - 1


def _is_disjunction(query: ServiceQuery) -> bool:
    return query.method == "or" or (query.method == "equal" and len(query.values) > 1)


def _disjuncts(query: ServiceQuery) -> list[ServiceQuery]:
    """The alternatives of an `or` or a multi-value `equal`, each `equal` one value apiece."""
    items: list[ServiceQuery] = []
    for child in query.values if query.method == "or" else (query,):
        child = _child(child)
        if child.method == "equal" and len(child.values) > 1:
            items.extend(ServiceQuery("equal", child.column, (value,)) for value in child.values)
        else:
            items.append(child)
    return items


def _child(value: object) -> ServiceQuery:
    if not isinstance(value, ServiceQuery):
        raise TypeError(f"and/or must nest queries, got {value!r}")
    return value


def _flatten(parts: list[Part]) -> list[Part]:
    """Top-level `and` parts become one part per operand (the service ANDs the strings)."""
    flat: list[Part] = []
    for part in parts:
        if part.query.method == "and":
            flat.extend(_flatten([Part(part.conjuncts, _child(v)) for v in part.query.values]))
        else:
            flat.append(part)
    return flat
