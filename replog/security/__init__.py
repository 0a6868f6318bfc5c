"""Security that touches the outside world: TLS files, certificates, principals of callers,
the ACL cache and the RPC interceptor. The rules themselves (ACL matching, principal mapping,
tokens, quotas) are pure code in replog/core."""
