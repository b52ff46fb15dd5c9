import Foundation
import Testing
@testable import ArtCacheFetch

/// HTTP-dates read and written by hand (RFC 9110 §5.6.7): known answers
/// for the three forms, the edges of the calendar, and what is refused.
@Suite("HTTPDate")
struct HTTPDateTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14

    @Test("The three forms, any case of the names, UTC for GMT, to the second")
    func forms() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                     "sun, 06 nov 1994 08:49:37 gmt", "Sun, 06 Nov 1994 08:49:37 UTC", "SUNDAY, 06-NOV-94 08:49:37 GMT",
                     "Mon, 06 Nov 1994 08:49:37 GMT" /* the day name is not checked */] {
            #expect(HTTPDate.parse(text, now: Self.now)?.timeIntervalSince1970 == 784_111_777, "\(text)")
        }
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT")?.timeIntervalSince1970 == 0)
        #expect(HTTPDate.parse("Wed, 31 Dec 1969 23:59:59 GMT")?.timeIntervalSince1970 == -1)
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT")?.timeIntervalSince1970 == 951_825_600)
        #expect(HTTPDate.parse("Tue, 14 Nov 2023 22:13:20 GMT")?.timeIntervalSince1970 == 1_700_000_000)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT")?.timeIntervalSince1970 == 253_402_300_799)
        #expect(HTTPDate.parse("Wed Feb 29 00:00:00 2012")?.timeIntervalSince1970 == 1_330_473_600)
        #expect(HTTPDate.parse("Wed Feb 29 00:00:60 2012")?.timeIntervalSince1970 == 1_330_473_660)  // leap second
    }

    @Test("RFC 850's two-digit year: more than 50 years ahead is the century before")
    func twoDigitYears() {
        func year(_ yy: String) -> Int? {
            HTTPDate.parse("Monday, 01-Jan-\(yy) 00:00:00 GMT", now: Self.now).map {
                Int(HTTPDate.civil(days: Int64($0.timeIntervalSince1970 / 86_400)).year)
            }
        }
        #expect(year("23") == 2023)
        #expect(year("73") == 2073)  // 50 years ahead: still this century
        #expect(year("74") == 1974)
        #expect(year("99") == 1999)
        #expect(year("00") == 2000)
    }

    @Test("Anything else is not a date", arguments: [
        "", "0", "-1", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Xyz 1994 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT", " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sund, 06-Nov-94 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 94", "Sun, 06 Nov 1994 08:49:37 GMT\u{1D11E}", "Sun, 06 Nov 1994 08:49:37 GMT\u{0}",
        "Sun, 06 Nov 1994 08:49:3x GMT", "Sun, 06 Nov 199x 08:49:37 GMT",
    ])
    func refused(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("Written as IMF-fixdate, and read back")
    func written() {
        #expect(HTTPDate.string(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.string(784_111_777.9) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.string(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.string(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(HTTPDate.string(951_825_600) == "Tue, 29 Feb 2000 12:00:00 GMT")
        #expect(HTTPDate.format(Self.now) == "Tue, 14 Nov 2023 22:13:20 GMT")
        // Every day for 60 years from 1970, at a varying second: written, read back, the same second.
        var seconds: Int64 = 0
        while seconds < 60 * 365 * 86_400 {
            let text = HTTPDate.string(Double(seconds))
            #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == Double(seconds), "\(text)")
            seconds += 86_400 + 3_607
        }
    }
}
