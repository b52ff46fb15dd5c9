import Foundation

/// HTTP-dates (RFC 9110 §5.6.7), read and written by hand over the bytes:
/// no `DateFormatter` (one made per call was 2.4% of the CPU of a cold P2b
/// round, perf) and no locale.
///
/// Reads the three forms a recipient must accept — IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
/// — and writes IMF-fixdate only.
package enum HTTPDate {
    /// The instant `text` names, or nil when it is not an HTTP-date. Names
    /// of days and months match in any case; the day name is not checked
    /// against the date (RFC 9110 does not ask a recipient to); `UTC` is
    /// taken for `GMT`; a second of 60 (a leap second) is the next minute's
    /// first. An RFC 850 two-digit year more than 50 years ahead of `now`
    /// is the century before (RFC 9110 §5.6.7).
    package static func parse(_ text: String) -> Date? { parse(text, now: Date()) }

    /// `parse(_:)` with the clock given (the RFC 850 century depends on it).
    package static func parse(_ text: String, now: Date) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count >= 24, bytes.count <= 64 else { return nil }
            var reader = Reader(bytes: bytes)
            return reader.date(now: now)
        }
    }

    /// IMF-fixdate of `date`, to the second (rounded down).
    package static func format(_ date: Date) -> String {
        string(date.timeIntervalSince1970)
    }

    /// IMF-fixdate of `seconds` since 1970 (rounded down).
    package static func string(_ seconds: Double) -> String {
        let total = Int64((seconds.isFinite ? seconds : 0).rounded(.down))
        let days = floorDiv(total, 86_400)
        let second = Int(total - days * 86_400)
        let (year, month, day) = civil(days: days)
        let weekday = Int((days % 7 + 7 + 4) % 7)  // 1970-01-01 was a Thursday (4)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        out += dayNames[weekday].utf8
        out += Array(", ".utf8)
        two(Int(day), into: &out)
        out.append(0x20)
        out += monthNames[Int(month) - 1].utf8
        out.append(0x20)
        let y = Int(max(0, min(9999, year)))
        for divisor in [1000, 100, 10, 1] { out.append(UInt8(0x30 + y / divisor % 10)) }
        out.append(0x20)
        two(second / 3600, into: &out)
        out.append(0x3A)
        two(second / 60 % 60, into: &out)
        out.append(0x3A)
        two(second % 60, into: &out)
        out += Array(" GMT".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func two(_ value: Int, into out: inout [UInt8]) {
        out.append(UInt8(0x30 + value / 10 % 10))
        out.append(UInt8(0x30 + value % 10))
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
    /// `days_from_civil`).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day count since 1970-01-01 (`civil_from_days`).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// One pass over the bytes of a candidate date.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        mutating func date(now: Date) -> Date? {
            // The day name decides the form: "Sun," (IMF), "Sunday," (RFC 850), "Sun " (asctime).
            guard let weekday = name(HTTPDate.dayNames) else { return nil }
            if take(0x2C) {
                guard take(0x20), let day = digits(2), take(0x20), let month = name(HTTPDate.monthNames), take(0x20),
                      let year = digits(4), take(0x20), let time = timeOfDay(), take(0x20), zone(), at == bytes.count
                else { return nil }
                return instant(year, month, day, time)
            }
            if at < bytes.count, bytes[at] != 0x20 {
                // RFC 850: the rest of the long day name, then "DD-Mon-YY".
                guard word(HTTPDate.longDayNames[weekday].utf8.dropFirst(3)), take(0x2C), take(0x20),
                      let day = digits(2), take(0x2D), let month = name(HTTPDate.monthNames), take(0x2D),
                      let short = digits(2), take(0x20), let time = timeOfDay(), take(0x20), zone(), at == bytes.count
                else { return nil }
                let thisYear = HTTPDate.civil(days: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down))).year
                var year = thisYear - thisYear % 100 + short
                if year > thisYear + 50 { year -= 100 }
                return instant(year, month, day, time)
            }
            // asctime: "Mon DD HH:MM:SS YYYY", the day padded with a space.
            guard take(0x20), let month = name(HTTPDate.monthNames), take(0x20) else { return nil }
            let day: Int64
            if take(0x20) { guard let d = digits(1) else { return nil }; day = d } else {
                guard let d = digits(2) else { return nil }; day = d
            }
            guard take(0x20), let time = timeOfDay(), take(0x20), let year = digits(4), at == bytes.count else { return nil }
            return instant(year, month, day, time)
        }

        func instant(_ year: Int64, _ month: Int, _ day: Int64, _ time: Int64) -> Date? {
            let month = Int64(month + 1)
            guard day >= 1, day <= HTTPDate.daysIn(month: month, year: year) else { return nil }
            let seconds = HTTPDate.days(year: year, month: month, day: day) * 86_400 + time
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }

        /// "HH:MM:SS" as seconds into the day (second 60 allowed).
        mutating func timeOfDay() -> Int64? {
            guard let h = digits(2), h < 24, take(0x3A), let m = digits(2), m < 60, take(0x3A), let s = digits(2), s <= 60
            else { return nil }
            return h * 3600 + m * 60 + s
        }

        mutating func zone() -> Bool {
            guard at + 3 <= bytes.count else { return false }
            let z = (bytes[at] | 0x20, bytes[at + 1] | 0x20, bytes[at + 2] | 0x20)
            guard z == (0x67, 0x6D, 0x74) || z == (0x75, 0x74, 0x63) else { return false }  // gmt, utc
            at += 3
            return true
        }

        /// The index of the three-letter name at the cursor, any case.
        mutating func name(_ names: [String]) -> Int? {
            guard at + 3 <= bytes.count else { return nil }
            for i in names.indices where word(names[i].utf8) { return i }
            return nil
        }

        /// Takes `expected` at the cursor, letters in any case.
        mutating func word<S: Sequence<UInt8>>(_ expected: S) -> Bool {
            var i = at
            for byte in expected {
                guard i < bytes.count, bytes[i] | 0x20 == byte | 0x20, byte | 0x20 >= 0x61, byte | 0x20 <= 0x7A else { return false }
                i += 1
            }
            at = i
            return true
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        mutating func digits(_ count: Int) -> Int64? {
            guard at + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for i in at..<at + count {
                let b = bytes[i]
                guard b >= 0x30, b <= 0x39 else { return nil }
                value = value * 10 + Int64(b - 0x30)
            }
            at += count
            return value
        }
    }
}
