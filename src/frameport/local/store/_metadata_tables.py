"""The DDL of the service's own metadata tables, run by `Store` when it opens.

Row tables of user databases are created by `_rowstore` when a table is created.
"""


def _keyed_items(table: str, columns: str) -> str:
    """A table of the columns or of the indexes of user tables, by key: each with its own
    `columns` and a status that turns final at `ready_at`."""
    return f"""
    CREATE TABLE IF NOT EXISTS {table} (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, table_seq INTEGER NOT NULL, key TEXT NOT NULL,
        {columns}
        status TEXT NOT NULL, final_status TEXT NOT NULL, error TEXT NOT NULL,
        ready_at REAL NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        UNIQUE (table_seq, key)
    );
    CREATE INDEX IF NOT EXISTS {table}_status ON {table} (status);
    """


METADATA_TABLES: tuple[str, ...] = (
    # meta
    """
    CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    # accounts
    """
    CREATE TABLE IF NOT EXISTS users (
        id TEXT PRIMARY KEY, email TEXT UNIQUE, phone TEXT UNIQUE, name TEXT NOT NULL,
        password_hash TEXT, status INTEGER NOT NULL DEFAULT 1, labels TEXT NOT NULL DEFAULT '[]',
        email_verification INTEGER NOT NULL DEFAULT 0,
        phone_verification INTEGER NOT NULL DEFAULT 0,
        impersonator INTEGER NOT NULL DEFAULT 0, prefs TEXT NOT NULL DEFAULT '{}',
        password_update TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        accessed_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        secret_hash TEXT NOT NULL, expire REAL NOT NULL, ip TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS sessions_user ON sessions(user_id);
    CREATE TABLE IF NOT EXISTS teams (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, prefs TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS memberships (
        id TEXT PRIMARY KEY, team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, roles TEXT NOT NULL,
        confirm INTEGER NOT NULL, invited TEXT NOT NULL, joined TEXT,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS memberships_user ON memberships(user_id)
    """,
    # databases
    """
    CREATE TABLE IF NOT EXISTS tdb_databases (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS tdb_tables (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        database_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        row_security INTEGER NOT NULL,
        permissions TEXT NOT NULL,
        next_position INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (database_id, id)
    );
    """
    + _keyed_items(
        "tdb_columns",
        """
        position INTEGER NOT NULL, type TEXT NOT NULL, format TEXT NOT NULL,
        size INTEGER NOT NULL, required INTEGER NOT NULL, array INTEGER NOT NULL,
        default_json TEXT NOT NULL, min_json TEXT NOT NULL, max_json TEXT NOT NULL,
        elements TEXT NOT NULL, encrypt INTEGER NOT NULL,""",
    )
    + _keyed_items(
        "tdb_indexes",
        "type TEXT NOT NULL, columns TEXT NOT NULL, lengths TEXT NOT NULL, orders TEXT NOT NULL,",
    ),
    # buckets
    """
    CREATE TABLE IF NOT EXISTS buckets (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL, permissions TEXT NOT NULL, file_security INTEGER NOT NULL,
        enabled INTEGER NOT NULL, maximum_file_size INTEGER NOT NULL,
        allowed_file_extensions TEXT NOT NULL, compression TEXT NOT NULL,
        encryption INTEGER NOT NULL, antivirus INTEGER NOT NULL,
        transformations INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    )
    """,
    # files
    """
    CREATE TABLE IF NOT EXISTS files (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        bucket_id TEXT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
        id TEXT NOT NULL, name TEXT NOT NULL, folder TEXT NOT NULL, permissions TEXT NOT NULL,
        signature TEXT NOT NULL, mime_type TEXT NOT NULL, size_original INTEGER NOT NULL,
        size_actual INTEGER NOT NULL, chunks_total INTEGER NOT NULL,
        chunks_uploaded INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        UNIQUE (bucket_id, id)
    )
    """,
    # functions
    """
    CREATE TABLE IF NOT EXISTS functions (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL, runtime TEXT NOT NULL, entrypoint TEXT NOT NULL,
        commands TEXT NOT NULL, deployment_id TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS deployments (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        function_id TEXT NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
        id TEXT NOT NULL, entrypoint TEXT NOT NULL, commands TEXT NOT NULL,
        activate INTEGER NOT NULL, status TEXT NOT NULL, build_logs TEXT NOT NULL,
        source_size INTEGER NOT NULL, chunks_total INTEGER NOT NULL,
        chunks_uploaded INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        UNIQUE (function_id, id)
    )
    """,
    # transactions
    """
    CREATE TABLE IF NOT EXISTS transactions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
        operations INTEGER NOT NULL, owner TEXT, expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS transaction_operations (
        transaction_seq INTEGER NOT NULL REFERENCES transactions(seq) ON DELETE CASCADE,
        position INTEGER NOT NULL, operation TEXT NOT NULL, staged_at TEXT NOT NULL,
        PRIMARY KEY (transaction_seq, position)
    )
    """,
)
