"""Who is calling: a principal `User:<name>` from a certificate's subject or a signed token.

`ssl.principal.mapping.rules` (Kafka's SslPrincipalMapper): rules separated by commas, tried in
order; the first whose pattern matches the whole subject gives the name.

    RULE:pattern/replacement/      the replacement, with $1... for the pattern's groups
    RULE:pattern/replacement/L     ... in lower case (U: upper case)
    DEFAULT                        the subject as it is, e.g. "CN=alice,OU=payments"

A subject that no rule matches has no principal, and the caller is refused.
"""

from __future__ import annotations

import dataclasses
import re

USER = "User"

_RULE = re.compile(r"RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)")


class MappingError(ValueError):
    """The rules do not parse, or no rule applies to a subject."""


@dataclasses.dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        match = self.pattern.fullmatch(subject)
        if match is None:
            return None
        name = match.expand(self.replacement)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


@dataclasses.dataclass(frozen=True)
class PrincipalMapper:
    rules: tuple[_Rule, ...]

    @classmethod
    def parse(cls, text: str) -> PrincipalMapper:
        rules: list[_Rule] = []
        rest = text.strip() or "DEFAULT"
        while rest:
            if rest.startswith("DEFAULT"):
                rules.append(_Rule(None))
                rest = rest[len("DEFAULT"):]
            else:
                match = _RULE.match(rest)
                if match is None:
                    raise MappingError(f"cannot read the principal mapping rule at {rest!r}: expected "
                                       "RULE:pattern/replacement/[LU] or DEFAULT")
                pattern, replacement, case = (part.replace("\\/", "/") for part in match.groups())
                try:
                    compiled = re.compile(pattern)
                except re.error as error:
                    raise MappingError(f"the pattern {pattern!r} of a principal mapping rule is not a "
                                       f"regular expression: {error}") from None
                # Java's $1 is Python's \g<1>.
                rules.append(_Rule(compiled, re.sub(r"\$(\d+)", r"\\g<\1>", replacement), case))
                rest = rest[match.end():]
            rest = rest.strip()
            if rest.startswith(","):
                rest = rest[1:].strip()
            elif rest:
                raise MappingError(f"expected a comma between principal mapping rules at {rest!r}")
        return cls(tuple(rules))

    def name_of(self, subject: str) -> str:
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        raise MappingError(f"no ssl.principal.mapping.rules rule applies to the subject {subject!r}")

    def principal_of(self, subject: str) -> str:
        return f"{USER}:{self.name_of(subject)}"
