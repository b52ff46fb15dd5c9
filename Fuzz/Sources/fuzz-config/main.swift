// The configuration parsers: the input as a cache.conf, each of its lines as
// a value of every key kind and unit, and its NAME=value lines as the
// environment.
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
import Foundation
import FuzzSupport

/// One key of each distinct kind (bounds differ per key, so: every key).
let keys = ConfigKey.all

func checkInRange(_ value: ConfigValue, _ kind: ConfigKey.Kind, _ what: String) {
    switch (value, kind) {
    case (.size(let bytes), .size(let min, let max)):
        require(bytes >= min && bytes <= max, "\(what): size \(bytes) outside \(min)...\(max)")
    case (.duration(let seconds), .duration(let min, let max)):
        require(seconds.isFinite && seconds >= min && seconds <= max, "\(what): duration \(seconds) outside \(min)...\(max)")
    case (.integer(let number), .integer(let min, let max)):
        require(number >= min && number <= max, "\(what): integer \(number) outside \(min)...\(max)")
    case (.ratio(let ratio), .ratio):
        require(ratio > 0 && ratio <= 1, "\(what): ratio \(ratio)")
    case (.string, .string), (.string, .choice), (.string, .color), (.bool, .bool), (.list, .list):
        break
    default:
        fatalError("invariant failed: \(what): value \(value) for kind \(kind)")
    }
}

func checkConfiguration(_ config: Configuration) {
    for (key, number) in config.numericValues {
        require(number.isFinite, "\(key) is \(number)")
    }
    require(!config.cache.directory.isEmpty, "empty cache directory")
}

runFuzzer { data in
    let input = text(data)

    // As a cache.conf.
    if let values = try? Configuration.parse(toml: input, source: "/fuzz/cache.conf") {
        for (path, value) in values where !path.hasPrefix("presets.") {
            guard let key = keys.first(where: { $0.path == path }) else {
                fatalError("invariant failed: parse returned unknown key \(path)")
            }
            checkInRange(value, key.kind, path)
        }
        if let config = try? Configuration(values: values, file: "/fuzz/cache.conf") {
            checkConfiguration(config)
        }
    }

    // Each line as a unit and as a value of every key (the environment and flag path).
    var environment: [String: String] = [:]
    for line in input.split(separator: "\n", omittingEmptySubsequences: true).prefix(8) {
        let value = String(line)
        if let size = Units.parseSize(value) {
            require(size >= 0, "parseSize(\(shown(value))) = \(size)")
        }
        if let seconds = Units.parseDuration(value) {
            require(seconds.isFinite && seconds >= 0, "parseDuration(\(shown(value))) = \(seconds)")
        }
        for key in keys {
            if let parsed = key.kind.parse(text: value) { checkInRange(parsed, key.kind, "\(key.path) = \(shown(value))") }
        }
        if let equals = line.firstIndex(of: "=") {
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
    }
    if !environment.isEmpty, let config = try? Configuration.load(path: nil, environment: environment) {
        checkConfiguration(config)
    }
}
