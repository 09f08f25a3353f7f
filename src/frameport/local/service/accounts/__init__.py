"""Accounts and who calls: users, sessions, teams and memberships, the caller and its roles,
permission strings, who may see or change a team."""
