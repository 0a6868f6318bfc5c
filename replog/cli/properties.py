"""`--property KEY=VALUE`, as Kafka's console tools take it: switches (true/false) and texts, by name."""

from __future__ import annotations

from replog.client import ClientError

# In a text, these stand for the characters a shell makes awkward to give.
ESCAPES = {"\\t": "\t", "\\n": "\n", "\\r": "\r"}


def parse_properties(given: list[str], switches: tuple[str, ...], texts: tuple[str, ...],
                     prefix: str) -> dict[str, bool | bytes]:
    """The properties given, as keyword arguments: a name without `prefix`, dots as underscores
    ("print.key" -> "key", "key.separator" -> "key_separator"); ClientError naming a key that is none of
    `switches` and `texts`, or a switch that is not true or false."""
    chosen: dict[str, bool | bytes] = {}
    for text in given:
        name, equals, value = text.partition("=")
        if not equals:
            raise ClientError(f"--property takes KEY=VALUE, got {text!r}")
        field = name.removeprefix(prefix).replace(".", "_")
        if name in switches:
            if value.lower() not in ("true", "false"):
                raise ClientError(f"--property {name} is true or false, not {value!r}")
            chosen[field] = value.lower() == "true"
        elif name in texts:
            for escape, character in ESCAPES.items():
                value = value.replace(escape, character)
            chosen[field] = value.encode()
        else:
            raise ClientError(f"--property {name!r} is not one replog reads; those are: {', '.join(switches + texts)}")
    return chosen
