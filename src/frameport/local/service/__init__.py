"""The service's rules: accounts, identity, permissions, callers, chunked uploads, rate limits,
downloads, previews and deployment archives."""
