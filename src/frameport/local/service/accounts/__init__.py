"""Accounts and who calls: account rows and sessions, the caller and its roles, permission
strings, teams and memberships."""
