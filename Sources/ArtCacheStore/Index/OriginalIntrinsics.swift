import ArtCacheCore
import Foundation
internal import GRDB

/// An original's intrinsics (issue 21): its upright size, dominant colour
/// and ThumbHash, computed once from a small decode after it is stored and
/// kept in its row (schema `v7-placeholders`). NULL until computed: rows
/// from before get theirs when next read, or from `verify --repair`.
/// An original's intrinsics as its row keeps them.
package struct OriginalIntrinsics: Sendable, Hashable {
    package let width: Int
    package let height: Int
    /// `#rrggbb`.
    package let color: String
    package let thumbHash: Data
    /// Frames of an animation, 1 for a still; nil: not known (left as it is).
    package let frames: Int?

    package init(width: Int, height: Int, color: String, thumbHash: Data, frames: Int? = nil) {
        self.width = width
        self.height = height
        self.color = color
        self.thumbHash = thumbHash
        self.frames = frames
    }

    /// Into the row of `key` when it holds the bytes `sha256` names and is
    /// live. Returns whether a row took them.
    @discardableResult
    func record(key: String, sha256: String, db: Database) throws -> Bool {
        try db.cachedStatement(sql: """
            UPDATE entry SET width = ?, height = ?, color = ?, thumbhash = ?, frames = coalesce(?, frames)
            WHERE key = ? AND sha256 = ? AND kind = 'original' AND \(Schema.live())
            """).execute(arguments: [width, height, color, thumbHash, frames, key, sha256])
        return db.changesCount > 0
    }
}
