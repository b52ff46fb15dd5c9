import ArtCacheCore
import ArtCacheFetch
import Foundation

/// A thumbnail in the tier (`[tier2] variants`): one object,
/// `variants/<variant key>`, its size and the original it was rendered from
/// in its metadata.
package struct Tier2Variant: Sendable, Equatable {
    package var data: Data
    package var contentType: String
    package var width: Int
    package var height: Int
    /// The sha256 of the original's bytes it was rendered from.
    package var sourceSHA256: String

    package init(data: Data, contentType: String, width: Int, height: Int, sourceSHA256: String) {
        (self.data, self.contentType, self.width, self.height, self.sourceSHA256) = (data, contentType, width, height, sourceSHA256)
    }
}

extension Tier2 {
    package static func variantKey(_ key: CacheKey) -> String { "variants/" + key.hex }

    /// The thumbnail `key` rendered from the original `sourceSHA256`, or nil
    /// (variants off, not there, rendered from other bytes, the tier failing
    /// or slow): the caller renders it.
    package func readVariant(_ key: CacheKey, sourceSHA256: String, priority: PriorityHandle) async throws -> Tier2Variant? {
        guard settings.variants, let pass = admission() else { return nil }
        do {
            let answer = try await objects.get(Self.variantKey(key), timeout: settings.timeout, maxBody: 64 << 20, priority: priority)
            guard answer.status == 200 else { return answered(answer.status, key, miss: \.variantMisses) }
            succeeded()
            guard answer.headers["x-amz-meta-source-sha256"] == sourceSHA256,
                  let width = answer.headers["x-amz-meta-width"].flatMap({ Int($0) }),
                  let height = answer.headers["x-amz-meta-height"].flatMap({ Int($0) }),
                  let type = answer.headers["content-type"] else {
                tally.withLock { $0.variantMisses += 1 }
                return nil
            }
            tally.withLock { $0.variantHits += 1 }
            return Tier2Variant(data: answer.body, contentType: type, width: width, height: height, sourceSHA256: sourceSHA256)
        } catch where error.code == .cancelled {
            cancelled(pass)
            throw CancellationError()
        } catch {
            failed(error, key)
            return nil
        }
    }

    /// Writes a thumbnail (behind its answer: the caller runs it as a background job).
    package func writeVariant(_ key: CacheKey, _ variant: Tier2Variant, priority: PriorityHandle) async throws {
        let metadata = ["source-sha256": variant.sourceSHA256, "width": String(variant.width), "height": String(variant.height)]
        do {
            try await objects.put(Self.variantKey(key), body: variant.data, contentType: variant.contentType,
                                  metadata: metadata, timeout: settings.writeTimeout, priority: priority)
            tally.withLock { $0.variantWrites += 1 }
        } catch where error.code == .cancelled {
            throw CancellationError()
        } catch {
            tally.withLock { $0.writeErrors += 1 }
            throw error
        }
    }
}
