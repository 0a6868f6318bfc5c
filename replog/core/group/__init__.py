"""Consumer groups (KIP-848): the group coordinator's rules, pure."""
