import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// The memory tier: an in-process LRU of encoded images in front of the disk
/// cache, with strict byte and count limits (`[memory]`). An image larger
/// than the whole byte limit is not kept. Thread-safe; reads never suspend.
final class MemoryCache: Sendable {
    typealias Stats = MemoryTierStats

    /// An image's place in the tier. Outside this file it is only held
    /// (``ImagePipeline/MemoryTicket``) and given back to ``touch(_:unless:freshAt:)``:
    /// every field is read and written under `state`'s lock.
    final class Node {
        fileprivate let key: String
        fileprivate var value: ImageResponse
        fileprivate var cost: Int64
        /// In the tier: false once evicted, replaced or dropped (a held
        /// node is then never answered from again).
        fileprivate var live = true
        fileprivate var newer: Node?
        /// Not counted: `nodes` keeps every linked node alive, and a node
        /// is unlinked before it leaves `nodes` (``State/remove(_:)``), so
        /// this never dangles; a weak reference cost a side-table load on
        /// every hit.
        fileprivate unowned(unsafe) var older: Node?

        init(key: String, value: ImageResponse, cost: Int64) {
            self.key = key
            self.value = value
            self.cost = cost
        }
    }

    /// A doubly linked list (newest at `head`) plus an index. Only touched
    /// under `state`'s lock.
    private struct State: @unchecked Sendable {
        // @unchecked: `Node` is a reference type read and mutated only while
        // the enclosing `Locked` holds its lock; a node that leaves the lock
        // (``held(forKey:freshAt:)``) is an opaque handle: its fields are
        // `fileprivate` and only this file's locked closures use them.
        var nodes: [String: Node] = [:]
        var head: Node?   // most recently used
        var tail: Node?   // least recently used
        var stats = Stats()

        mutating func unlink(_ node: Node) {
            if let older = node.older { older.newer = node.newer } else { tail = node.newer }
            if let newer = node.newer { newer.older = node.older } else { head = node.older }
            node.newer = nil
            node.older = nil
        }

        mutating func pushNewest(_ node: Node) {
            node.older = head
            node.newer = nil
            head?.newer = node
            head = node
            if tail == nil { tail = node }
        }

        mutating func remove(_ node: Node) {
            node.live = false
            unlink(node)
            nodes[node.key] = nil
            stats.entries -= 1
            stats.bytes -= node.cost
        }
    }

    private let state: Locked<State>
    let maxBytes: Int64
    let maxEntries: Int

    init(settings: MemorySettings) {
        maxBytes = settings.maxBytes
        maxEntries = settings.maxEntries
        var initial = State()
        initial.stats.maxBytes = settings.maxBytes
        initial.stats.maxEntries = settings.maxEntries
        state = Locked(initial)
    }

    var stats: Stats { state.withLock { $0.stats } }

    /// The image under `key`, marked most recently used; counts a hit or a
    /// miss. An image whose original stopped being fresh before `now` is a
    /// miss (the disk tier revalidates it; its answer replaces this one).
    func image(forKey key: String, freshAt now: Date = Date()) -> ImageResponse? {
        held(forKey: key, freshAt: now)?.image
    }

    /// ``image(forKey:freshAt:)`` and its node, to be touched again
    /// without a lookup (``touch(_:unless:freshAt:)``).
    func held(forKey key: String, freshAt now: Date) -> (image: ImageResponse, node: Node)? {
        state.withLock { s in
            guard let node = s.nodes[key], node.value.freshUntil.map({ $0 > now }) ?? true else {
                s.stats.misses += 1
                return nil
            }
            s.stats.hits += 1
            s.unlink(node)
            s.pushNewest(node)
            return (node.value, node)
        }
    }

    /// A hit of a node held since an earlier one: marked most recently used
    /// and counted, when it is still in the tier and fresh at `now` and no
    /// fresh image is kept under `shadowing` (a key answered before it).
    /// False (nothing counted) otherwise: the caller looks up again.
    func touch(_ node: Node, unless shadowing: String?, freshAt now: Date) -> Bool {
        state.withLock { s in
            guard node.live, node.value.freshUntil.map({ $0 > now }) ?? true else { return false }
            if let shadowing, let other = s.nodes[shadowing], other.value.freshUntil.map({ $0 > now }) ?? true { return false }
            s.stats.hits += 1
            if s.head !== node {
                s.unlink(node)
                s.pushNewest(node)
            }
            return true
        }
    }

    /// Keeps `image` under `key`, evicting least recently used images until
    /// both limits hold.
    func store(_ image: ImageResponse, forKey key: String) {
        let cost = Int64(image.data.count)
        guard maxEntries > 0, cost <= maxBytes else { return }
        state.withLock { s in
            if let old = s.nodes[key] { s.remove(old) }
            let node = Node(key: key, value: image, cost: cost)
            s.nodes[key] = node
            s.pushNewest(node)
            s.stats.entries += 1
            s.stats.bytes += cost
            while s.stats.entries > maxEntries || s.stats.bytes > maxBytes, let victim = s.tail {
                s.remove(victim)
                s.stats.evictions += 1
            }
        }
    }

    /// Drops the original `parentKey` and every variant of it (its bytes
    /// were replaced: the variants in the index went with the old bytes).
    /// A walk over the tier: replacements are rare, hits never pay for it.
    func removeFamily(of parentKey: String) {
        state.withLock { s in
            for node in Array(s.nodes.values) where node.key == parentKey || node.value.entry?.parentKey == parentKey {
                s.remove(node)
            }
        }
    }

    /// Drops the image under `key`, if any.
    func remove(forKey key: String) {
        state.withLock { s in
            if let node = s.nodes[key] { s.remove(node) }
        }
    }

    func removeAll() {
        state.withLock { s in
            while let node = s.tail { s.remove(node) }
        }
    }
}
