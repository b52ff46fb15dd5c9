import Foundation

/// Parsing of the human units used in `cache.conf`, environment variables and
/// CLI flags: byte sizes (`500MB`, `2GiB`, `1024`) and durations (`30d`, `12h`).
package enum Units {
    /// Parses a byte size. Decimal (`kB`, `MB`, `GB`, `TB`) and binary (`KiB`, `MiB`,
    /// `GiB`, `TiB`) suffixes, case-insensitive; a bare number is bytes.
    /// Returns nil when the text is not a size or is negative.
    package static func parseSize(_ text: String) -> Int64? {
        let (number, unit) = split(text)
        guard let number, number >= 0 else { return nil }
        let multipliers: [String: Double] = [
            "": 1, "b": 1,
            "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let multiplier = multipliers[unit.lowercased()] else { return nil }
        let bytes = (number * multiplier).rounded()
        guard bytes.isFinite, bytes < Double(Int64.max) else { return nil }
        return Int64(bytes)
    }

    /// Parses a duration into seconds: `45s`, `90m`, `12h`, `30d`, `2w`; a bare
    /// number is seconds. Returns nil when the text is not a duration or is negative.
    package static func parseDuration(_ text: String) -> TimeInterval? {
        let (number, unit) = split(text)
        guard let number, number >= 0 else { return nil }
        let multipliers: [String: Double] = [
            "": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604_800,
        ]
        guard let multiplier = multipliers[unit.lowercased()] else { return nil }
        let seconds = number * multiplier
        return seconds.isFinite ? seconds : nil
    }

    /// Formats a byte count for people: `1.5 MB`.
    package static func formatSize(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var index = 0
        while abs(value) >= 1000, index < units.count - 1 {
            value /= 1000
            index += 1
        }
        return index == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[index])
    }

    /// Formats a duration for people: `3d 4h`, `12m 5s`.
    package static func formatDuration(_ seconds: TimeInterval) -> String {
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m \(s % 60)s" }
        if s < 86400 { return "\(s / 3600)h \(s % 3600 / 60)m" }
        return "\(s / 86400)d \(s % 86400 / 3600)h"
    }

    private static func split(_ text: String) -> (Double?, String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var end = trimmed.startIndex
        while end < trimmed.endIndex, "0123456789.-+".contains(trimmed[end]) {
            end = trimmed.index(after: end)
        }
        let numberText = String(trimmed[..<end])
        let unit = trimmed[end...].trimmingCharacters(in: .whitespaces)
        guard !numberText.isEmpty, let number = Double(numberText), number.isFinite else {
            return (nil, unit)
        }
        return (number, unit)
    }
}
