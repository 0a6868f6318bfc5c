"""Names given on the command line, checked by Kafka's rules before any request is made."""

from __future__ import annotations

import argparse

from replog.core.topic_plan import validate_topic_name


def topic_name(text: str) -> str:
    """An argparse type: a legal topic name (argparse names the option in its refusal)."""
    problem = validate_topic_name(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text
