internal import GRDB

/// The index schema, versioned by GRDB's DatabaseMigrator.
///
/// Totals (entries, originals, bytes, inline bytes) live in a one-row table,
/// so checking the size limits after a write is O(1) whatever the row count.
/// Since v4 they are adjusted in bulk by the code that inserts and deletes
/// (``Totals``), once per transaction, not by a trigger per row.
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
        migrator.registerMigration("v4-store-v2") { db in
            // Store v2: `blob` NULL = the bytes are in inline_blob; variants
            // record the original bytes they were made from; totals kept by
            // the code that writes (in bulk), not by a trigger per row.
            // Blob files of v1 are moved afterwards, in resumable chunks
            // (LegacyBlobMigration): this step only changes the schema.
            try db.execute(sql: """
                CREATE TABLE new_entry (
                    key TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    host TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('original', 'variant')),
                    parent_key TEXT REFERENCES entry(key) ON DELETE CASCADE,
                    spec TEXT,
                    blob TEXT,
                    content_type TEXT NOT NULL,
                    declared_type TEXT,
                    size INTEGER NOT NULL CHECK (size >= 0),
                    sha256 TEXT NOT NULL,
                    source_sha256 TEXT,
                    width INTEGER,
                    height INTEGER,
                    etag TEXT,
                    last_modified TEXT,
                    expires_at DOUBLE,
                    fresh_for DOUBLE,
                    created_at DOUBLE NOT NULL,
                    accessed_at DOUBLE NOT NULL,
                    hit_count INTEGER NOT NULL DEFAULT 0,
                    CHECK ((kind = 'original') = (parent_key IS NULL))
                );
                INSERT INTO new_entry (key, url, host, kind, parent_key, spec, blob, content_type, declared_type, size,
                    sha256, width, height, etag, last_modified, expires_at, fresh_for, created_at, accessed_at, hit_count)
                SELECT key, url, host, kind, parent_key, spec, blob, content_type, declared_type, size,
                    sha256, width, height, etag, last_modified, expires_at, fresh_for, created_at, accessed_at, hit_count
                FROM entry;
                DROP TABLE entry;
                ALTER TABLE new_entry RENAME TO entry;
                -- Covering the LRU walk: eviction reads victims from the index alone.
                CREATE INDEX entry_lru ON entry(accessed_at, key, size, kind);
                CREATE INDEX entry_parent_key ON entry(parent_key) WHERE parent_key IS NOT NULL;
                CREATE INDEX entry_host ON entry(host);
                CREATE INDEX entry_legacy_blob ON entry(blob) WHERE blob LIKE 'objects/__/__/%';

                CREATE TABLE inline_blob (
                    key TEXT PRIMARY KEY NOT NULL REFERENCES entry(key) ON DELETE CASCADE,
                    data BLOB NOT NULL
                );
                ALTER TABLE totals ADD COLUMN inline_bytes INTEGER NOT NULL DEFAULT 0;
                UPDATE totals SET entries = (SELECT count(*) FROM entry),
                    originals = (SELECT count(*) FROM entry WHERE kind = 'original'),
                    bytes = (SELECT coalesce(sum(size), 0) FROM entry), inline_bytes = 0 WHERE id = 1;
                -- A cache with v1 blob files: CacheStore+Migration moves them, then drops this marker.
                INSERT INTO counter (name, value) SELECT 'legacy_layout', 1 WHERE EXISTS (SELECT 1 FROM entry);
                """)
        }
        migrator.registerMigration("v5-lru-horizon") { db in
            // Eviction by horizon: rows accessed before `horizon` are evicted
            // (counted out of the totals, invisible to reads) and deleted in
            // the background, in chunks (CacheStore+Housekeeping). An older artcache
            // would see them as live: this migration makes it refuse the cache.
            try db.execute(sql: "ALTER TABLE totals ADD COLUMN horizon DOUBLE NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v6-touch-log") { db in
            // Access times are appended here, not written into their rows:
            // appends fill the log's last pages, where a row update rewrote
            // two random pages of the index (TouchLog). An older
            // artcache would not read the log: this migration makes it refuse
            // the cache.
            try db.execute(sql: """
                CREATE TABLE touch_log (
                    id INTEGER PRIMARY KEY,
                    key TEXT NOT NULL,
                    at DOUBLE NOT NULL,
                    hits INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v7-placeholders") { db in
            // An original's placeholder (issue 21): its dominant colour
            // (`#rrggbb`) and ThumbHash, computed from a small decode after it
            // is stored; NULL until then (rows from before get theirs when
            // next read, or from `verify --repair`).
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN color TEXT;
                ALTER TABLE entry ADD COLUMN thumbhash BLOB;
                """)
        }
        migrator.registerMigration("v8-fetched-url") { db in
            // Provider profiles (issue 21): the URL an original was fetched
            // from when a profile chose another rendition than the URL given
            // (the key stays the given URL's), and that rendition's size.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN fetched_url TEXT;
                ALTER TABLE entry ADD COLUMN rendition INTEGER;
                """)
        }
        migrator.registerMigration("v9-freshness") { db in
            // Freshness apart from eviction (issue 22): the origin's stale
            // rules kept with each original (`directives`: 1 must-revalidate,
            // 2 immutable), and the final failures remembered per URL for
            // `[download] negative_ttl` (404, 410, not an image), seen by
            // every process that opens the cache.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN stale_while_revalidate DOUBLE;
                ALTER TABLE entry ADD COLUMN stale_if_error DOUBLE;
                ALTER TABLE entry ADD COLUMN directives INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE negative (
                    key TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    message TEXT NOT NULL,
                    status INTEGER,
                    failed_at DOUBLE NOT NULL,
                    until DOUBLE NOT NULL
                );
                """)
        }
        migrator.registerMigration("v10-background-indexes") { db in
            // Background work with one owner (issue 34): the touch-log fold
            // reads the log by key, the negative cleanup by `until`.
            try db.execute(sql: """
                CREATE INDEX IF NOT EXISTS touch_log_key ON touch_log(key);
                CREATE INDEX IF NOT EXISTS negative_until ON negative(until);
                """)
        }
        migrator.registerMigration("v11-format-upgrades") { db in
            // Browsers first (issue 35): where a variant stands with format
            // upgrades behind answers (CacheEntry.UpgradeState): 0 open (a
            // cold encoding, an upgrade may be tried), 1 no gain (tried: the
            // better encoding did not save enough bytes, never tried again),
            // 2 upgraded (these are the better bytes). A new render of the
            // variant (new original bytes) writes the row again with 0.
            // (Issue 49: bits from 2 on record "no gain" per other format,
            // CacheEntry.noGainFormats; the low two bits are the state above.)
            try db.execute(sql: "ALTER TABLE entry ADD COLUMN upgrade INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v12-download-leases") { db in
            // One download per URL across processes (issue 49): the process
            // downloading a URL holds its lease (pid, a token per opened
            // store, an expiry; a dead holder's lapses); another one waits
            // for its result. A holder that failed leaves its failure for a
            // few seconds, for those waiting (DownloadLeases).
            try db.execute(sql: """
                CREATE TABLE download_lease (
                    key TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    holder_pid INTEGER NOT NULL,
                    holder TEXT NOT NULL,
                    expires_at DOUBLE NOT NULL,
                    failure_reason TEXT,
                    failure_message TEXT
                );
                """)
        }
        migrator.registerMigration("v13-frames") { db in
            // Animated sources (issue 52): an original's frames, recorded
            // with its size and placeholder (1 for a still); NULL when not
            // known (rows from before: read as 1).
            try db.execute(sql: "ALTER TABLE entry ADD COLUMN frames INTEGER")
        }
        return migrator
    }

    /// The SQL condition of a live row of `table` (at or above the eviction
    /// horizon). Rows below it were evicted and wait for the reclaimer: no
    /// read returns them and the totals no longer count them.
    static func live(_ table: String = "entry") -> String {
        "\(table).accessed_at >= (SELECT horizon FROM totals WHERE id = 1)"
    }

    /// Rows accessed before this time are evicted (0: none ever were).
    static func horizon(_ db: Database) throws -> Double {
        try Double.fetchOne(db.cachedStatement(sql: "SELECT horizon FROM totals WHERE id = 1")) ?? 0
    }

    /// Adds `delta` to a named counter (hits, misses, evictions, evicted_bytes).
    static func bump(_ db: Database, _ name: String, by delta: Int64) throws {
        guard delta != 0 else { return }
        try db.cachedStatement(sql: """
            INSERT INTO counter (name, value) VALUES (?, ?)
            ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
            """).execute(arguments: [name, delta])
    }

    static func totals(_ db: Database) throws -> Totals {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT entries, originals, bytes, inline_bytes FROM totals WHERE id = 1"))
        return Totals(entries: row?["entries"] ?? 0, originals: row?["originals"] ?? 0,
                      bytes: row?["bytes"] ?? 0, inlineBytes: row?["inline_bytes"] ?? 0)
    }

    /// Totals recomputed from the live rows (verify, migration).
    static func recount(_ db: Database) throws -> Totals {
        let row = try Row.fetchOne(db, sql: """
            SELECT count(*) AS n, coalesce(sum(kind = 'original'), 0) AS o, coalesce(sum(size), 0) AS b,
                coalesce(sum(CASE WHEN blob IS NULL THEN size ELSE 0 END), 0) AS i FROM entry WHERE \(live())
            """)
        return Totals(entries: row?["n"] ?? 0, originals: row?["o"] ?? 0, bytes: row?["b"] ?? 0, inlineBytes: row?["i"] ?? 0)
    }
}

/// The counted size of the store, or a change to it.
struct Totals: Sendable, Equatable {
    var entries = 0
    var originals = 0
    var bytes: Int64 = 0
    var inlineBytes: Int64 = 0

    var fileBytes: Int64 { bytes - inlineBytes }

    /// Counts `entry` in (+1) or out (-1).
    mutating func add(_ entry: CacheEntry, _ sign: Int = 1) {
        add(kind: entry.kind, size: entry.size, inline: entry.isInline, sign)
    }

    /// Counts a row of `kind` and `size` in (+1) or out (-1), by its columns.
    mutating func add(kind: EntryKind, size: Int64, inline: Bool, _ sign: Int = 1) {
        entries += sign
        originals += kind == .original ? sign : 0
        bytes += Int64(sign) * size
        inlineBytes += inline ? Int64(sign) * size : 0
    }

    /// Adds another change (or count) to this one.
    mutating func add(_ other: Totals) {
        entries += other.entries
        originals += other.originals
        bytes += other.bytes
        inlineBytes += other.inlineBytes
    }

    static func - (a: Totals, b: Totals) -> Totals {
        Totals(entries: a.entries - b.entries, originals: a.originals - b.originals,
               bytes: a.bytes - b.bytes, inlineBytes: a.inlineBytes - b.inlineBytes)
    }

    /// Adds this change to the totals row (one statement, whatever it counts).
    func apply(_ db: Database) throws {
        guard self != Totals() else { return }
        try db.cachedStatement(sql: """
            UPDATE totals SET entries = entries + ?, originals = originals + ?, bytes = bytes + ?,
                inline_bytes = inline_bytes + ? WHERE id = 1
            """).execute(arguments: [entries, originals, bytes, inlineBytes])
    }

    /// Replaces the totals row.
    func store(_ db: Database) throws {
        try db.execute(sql: "UPDATE totals SET entries = ?, originals = ?, bytes = ?, inline_bytes = ? WHERE id = 1",
                       arguments: [entries, originals, bytes, inlineBytes])
    }
}

extension Schema {
    /// Opens the index and brings its schema up to date.
    static func openIndex(in directory: String, configuration: GRDB.Configuration) throws(StoreError) -> DatabasePool {
        do {
            let db = try DatabasePool(path: directory + "/index.sqlite", configuration: configuration)
            let migrator = Schema.migrator
            if try db.read({ try migrator.hasBeenSuperseded($0) }) {
                throw StoreError(.incompatibleSchema, "\(directory) was written by a newer artcache (unknown schema version)")
            }
            try migrator.migrate(db)
            try enableIncrementalVacuum(db)
            return db
        } catch let error as StoreError {
            throw error
        } catch {
            throw CacheStore.storeError(error, writing: nil, opening: directory)
        }
    }

    /// A cache made before v2 has `auto_vacuum = NONE`: switch it (VACUUM
    /// rewrites the file once), so evicted inline blobs give space back.
    private static func enableIncrementalVacuum(_ db: DatabasePool) throws {
        let mode = try db.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } ?? 0
        guard mode != 2 else { return }
        try db.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            try db.execute(sql: "VACUUM")
        }
    }
}
