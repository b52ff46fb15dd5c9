import ArtCacheCore
import Foundation

/// How long an answer may be kept downstream (browsers, front caches): the
/// one decision every path that answers a request maps to `Cache-Control`
/// — the async path, a memory hit, the connection's raw hit, `HEAD` — made
/// here, from the answer and what is queued behind it, never per path.
package enum AnswerLifetime: String, Sendable, Hashable {
    /// The final answer: its original's freshness (capped by `[service] cache_max_age`).
    case final
    /// A cold answer a format upgrade will replace: briefly (60 s at most),
    /// so clients come back for the better bytes.
    case upgrading
    /// Kept nowhere, so nobody downstream may keep it (`no-store`, never a
    /// `304`): a placeholder standing in for an error, an answer made from
    /// an undersized original, an original its origin marked `no-store`.
    case notKept

    /// The lifetime of `response`, answered with an upgrade queued or
    /// running behind it (`upgrading`) or not.
    package init(_ response: ImageResponse, upgrading: Bool = false) {
        if response.error != nil || response.notKept != nil {
            self = .notKept
        } else {
            self = upgrading ? .upgrading : .final
        }
    }
}

extension ImagePipeline.NegotiatedImage {
    /// ``AnswerLifetime`` of this answer.
    package var lifetime: AnswerLifetime { AnswerLifetime(response, upgrading: upgrading) }
}
