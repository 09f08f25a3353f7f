"""Transactions (service interface, "Transactions"): their lifecycle, staging into them,
the staged view reads see, and the all-or-nothing commit."""
