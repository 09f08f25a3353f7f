"""Realtime: the hub of open connections and their subscriptions, event names and channels,
subscription queries."""
