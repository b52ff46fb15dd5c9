import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Foundation's file errors in a user's words: the system's reason
/// (`permission denied`, `is a directory`) when there is one, never
/// `NSCocoaErrorDomain` and a number (what `localizedDescription` says on Linux).
package enum FileErrorText {
    /// Why reading or writing a file failed, without its path.
    package static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError {
            if let underlying = error.underlying as NSError?, underlying.domain == NSPOSIXErrorDomain {
                return system(Int32(underlying.code))
            }
            switch error.code {
            case .fileNoSuchFile, .fileReadNoSuchFile: return system(ENOENT)
            case .fileReadNoPermission, .fileWriteNoPermission: return system(EACCES)
            case .fileWriteOutOfSpace: return system(ENOSPC)
            case .fileReadInapplicableStringEncoding, .fileReadCorruptFile: return "not UTF-8 text"
            case .fileReadTooLarge: return "too large"
            default: return error.code.rawValue < 512 ? "cannot be read" : "cannot be written"
            }
        }
        if let error = error as? POSIXError { return system(error.code.rawValue) }
        return "\(error)"
    }

    /// `strerror(code)` as a clause: `no such file or directory`.
    package static func system(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
