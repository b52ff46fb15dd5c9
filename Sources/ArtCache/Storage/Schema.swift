internal import GRDB

/// The index schema, versioned by GRDB's DatabaseMigrator.
///
/// Totals (entries, bytes, originals) are kept by triggers in a one-row table,
/// so checking the size limits after a write is O(1) whatever the row count.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE entry (
                    key TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    host TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('original', 'variant')),
                    parent_key TEXT REFERENCES entry(key) ON DELETE CASCADE,
                    spec TEXT,
                    blob TEXT NOT NULL,
                    content_type TEXT NOT NULL,
                    declared_type TEXT,
                    size INTEGER NOT NULL CHECK (size >= 0),
                    sha256 TEXT NOT NULL,
                    width INTEGER,
                    height INTEGER,
                    etag TEXT,
                    last_modified TEXT,
                    expires_at DOUBLE,
                    created_at DOUBLE NOT NULL,
                    accessed_at DOUBLE NOT NULL,
                    hit_count INTEGER NOT NULL DEFAULT 0,
                    CHECK ((kind = 'original') = (parent_key IS NULL))
                );
                CREATE INDEX entry_accessed_at ON entry(accessed_at);
                CREATE INDEX entry_parent_key ON entry(parent_key) WHERE parent_key IS NOT NULL;
                CREATE INDEX entry_host ON entry(host);

                CREATE TABLE totals (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    entries INTEGER NOT NULL,
                    originals INTEGER NOT NULL,
                    bytes INTEGER NOT NULL
                );
                INSERT INTO totals (id, entries, originals, bytes) VALUES (1, 0, 0, 0);
                CREATE TRIGGER entry_after_insert AFTER INSERT ON entry BEGIN
                    UPDATE totals SET entries = entries + 1,
                        originals = originals + (NEW.kind = 'original'),
                        bytes = bytes + NEW.size WHERE id = 1;
                END;
                CREATE TRIGGER entry_after_delete AFTER DELETE ON entry BEGIN
                    UPDATE totals SET entries = entries - 1,
                        originals = originals - (OLD.kind = 'original'),
                        bytes = bytes - OLD.size WHERE id = 1;
                END;
                CREATE TRIGGER entry_after_update_size AFTER UPDATE OF size ON entry BEGIN
                    UPDATE totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 1;
                END;

                CREATE TABLE counter (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                CREATE TABLE repair (
                    declared TEXT NOT NULL,
                    sniffed TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (declared, sniffed)
                );
                """)
        }
        migrator.registerMigration("v2-retry-queue") { db in
            try db.execute(sql: """
                CREATE TABLE retry_queue (
                    url TEXT PRIMARY KEY NOT NULL,
                    reason TEXT NOT NULL,
                    message TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    first_failed_at DOUBLE NOT NULL,
                    last_failed_at DOUBLE NOT NULL
                );
                """)
        }
        migrator.registerMigration("v3-fresh-for") { db in
            // The origin's freshness lifetime, renewed by a 304 that carries no
            // caching headers. Rows from before: estimated from what they kept.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN fresh_for DOUBLE;
                UPDATE entry SET fresh_for = max(0, expires_at - created_at) WHERE expires_at IS NOT NULL;
                """)
        }
        return migrator
    }

    /// Adds `delta` to a named counter (hits, misses, evictions, evicted_bytes).
    static func bump(_ db: Database, _ name: String, by delta: Int64) throws {
        guard delta != 0 else { return }
        try db.execute(sql: """
            INSERT INTO counter (name, value) VALUES (?, ?)
            ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
            """, arguments: [name, delta])
    }

    static func totals(_ db: Database) throws -> (entries: Int, originals: Int, bytes: Int64) {
        let row = try Row.fetchOne(db, sql: "SELECT entries, originals, bytes FROM totals WHERE id = 1")
        return (row?["entries"] ?? 0, row?["originals"] ?? 0, row?["bytes"] ?? 0)
    }
}
