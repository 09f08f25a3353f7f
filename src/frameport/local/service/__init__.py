"""The service's rules, in rooms: accounts, rows, transactions, realtime, uploads, downloads;
beside them the state every handler shares and how it is opened, who is calling, the clock,
rate limits and crash points."""
